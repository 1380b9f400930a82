package main

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/ticketd"
)

// BenchmarkTakeRelease measures take+release through members' control
// sockets in a pool of 5 members and 4 tickets, without process start-up:
// "one" is one client on one member, "one-member-4" four clients on one
// member (four slots), "four-members" one client on each of four members.
func BenchmarkTakeRelease(b *testing.B) {
	c := startPool(b, 5, 4)
	c.waitCore(4)
	for _, bc := range []struct {
		name    string
		members []int
	}{{"one", []int{1}}, {"one-member-4", []int{1, 1, 1, 1}}, {"four-members", []int{1, 2, 3, 4}}} {
		b.Run(bc.name, func(b *testing.B) {
			var conns []*cli.Conn
			for _, m := range bc.members {
				nc, err := net.Dial("unix", c.sock(m))
				if err != nil {
					b.Fatal(err)
				}
				defer nc.Close()
				conns = append(conns, cli.NewConn(nc))
			}
			// Each client's first take may wait for a ticket to move to
			// its member; the steady state is what is measured.
			loop := func(per int) {
				var wg sync.WaitGroup
				for _, cn := range conns {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range per {
							if !takeRelease(b, cn) {
								return
							}
						}
					}()
				}
				wg.Wait()
			}
			loop(1)
			per := max(1, b.N/len(conns))
			b.ResetTimer()
			start := time.Now()
			loop(per)
			b.ReportMetric(float64(per*len(conns))/time.Since(start).Seconds(), "take+release/s")
		})
	}
}

func takeRelease(b *testing.B, cn *cli.Conn) bool {
	cn.Send(ticketd.Request{Op: "take"})
	for {
		var r ticketd.Reply
		if err := cn.Next(&r); err != nil {
			b.Error(err)
			return false
		}
		if r.Event == "taken" {
			break
		}
		if r.Event != "valid" {
			b.Errorf("take: %+v", r)
			return false
		}
	}
	cn.Send(ticketd.Request{Op: "release"})
	return true
}
