package main

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/lockd"
)

// BenchmarkAcquireRelease measures acquire+release through a daemon's
// control socket on a 3-daemon cluster (central algorithm, UDP loopback),
// without process start-up: "coordinator" runs the client on the
// coordinator's own daemon, "remote" on another daemon (two network round
// trips per cycle), "remote-8" eight connections on eight names at once.
func BenchmarkAcquireRelease(b *testing.B) {
	c := startDaemonsB(b)
	for _, bc := range []struct {
		name    string
		daemon  int
		clients int
	}{{"coordinator", 3, 1}, {"remote", 1, 1}, {"remote-8", 1, 8}, {"coordinator-8", 3, 8}} {
		b.Run(bc.name, func(b *testing.B) {
			var conns []*cli.Conn
			for i := 0; i < bc.clients; i++ {
				nc, err := net.Dial("unix", c.sock(bc.daemon))
				if err != nil {
					b.Fatal(err)
				}
				defer nc.Close()
				conns = append(conns, cli.NewConn(nc))
			}
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			per := b.N / bc.clients
			for i, cn := range conns {
				wg.Add(1)
				go func(i int, cn *cli.Conn) {
					defer wg.Done()
					name := fmt.Sprintf("bench-%s-%d", bc.name, i)
					for j := 0; j < per; j++ {
						cn.Send(lockd.Request{Op: "acquire", Name: name})
						for {
							var r lockd.Reply
							if err := cn.Next(&r); err != nil {
								b.Error(err)
								return
							}
							if r.Event == "acquired" {
								break
							}
						}
						cn.Send(lockd.Request{Op: "release", Name: name})
					}
				}(i, cn)
			}
			wg.Wait()
			b.ReportMetric(float64(per*bc.clients)/time.Since(start).Seconds(), "acq+rel/s")
		})
	}
}
