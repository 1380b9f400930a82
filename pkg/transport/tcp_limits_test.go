package transport

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// closedWithin reports whether the server closes c within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	var b [1]byte
	_, err := c.Read(b[:])
	ne, timeout := err.(net.Error)
	return err != nil && !(timeout && ne.Timeout())
}

// TestTCPBoundsStrangers: a connection silent before its first frame, or
// stuck in the middle of one, is closed; connections past maxInbound are
// refused at once. (5,000 half-sent frames once held 64 MB for good.)
func TestTCPBoundsStrangers(t *testing.T) {
	tr, err := listenTCP("127.0.0.1:0", map[node.ID]string{},
		tcpLimits{maxInbound: 20, firstFrame: 200 * time.Millisecond, frameArrives: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	silent, _ := net.Dial("tcp", tr.Addr())
	half, _ := net.Dial("tcp", tr.Addr())
	var lb [4]byte
	binary.BigEndian.PutUint32(lb[:], 1000)
	half.Write(append(lb[:], 1, 2, 3))
	if !closedWithin(silent, 5*time.Second) || !closedWithin(half, 5*time.Second) {
		t.Fatal("a silent or half-sent connection was kept open")
	}
	var conns []net.Conn
	for i := 0; i < 30; i++ {
		c, err := net.Dial("tcp", tr.Addr())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for tr.Refused.Load() < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("refused %d of 30 connections over a bound of 20", tr.Refused.Load())
		}
		time.Sleep(5 * time.Millisecond) // polling a counter
	}
	for _, c := range conns {
		c.Close()
	}
}
