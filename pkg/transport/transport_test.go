package transport

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

func recvWithin(t *testing.T, tr Transport) Packet {
	t.Helper()
	ch := make(chan Packet, 1)
	go func() {
		if p, err := tr.Recv(); err == nil {
			ch <- p
		}
	}()
	select {
	case p := <-ch:
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("nothing received within 5s")
	}
	return Packet{}
}

func pairOf(t *testing.T, listen func(string, map[node.ID]string) (Transport, error)) (Transport, Transport) {
	a, err := listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := listen("127.0.0.1:0", map[node.ID]string{1: a.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// pingPong: b sends to a (its peer 1); a, which need not know b, answers
// along the packet's path.
func pingPong(t *testing.T, a, b Transport) {
	t.Helper()
	if err := b.Send(1, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	p := recvWithin(t, a)
	if string(p.Data) != "ping" {
		t.Fatalf("got %q", p.Data)
	}
	if err := p.Reply([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if got := recvWithin(t, b); string(got.Data) != "pong" {
		t.Fatalf("reply: got %q", got.Data)
	}
}

func TestSocketsSendReply(t *testing.T) {
	for name, listen := range map[string]func(string, map[node.ID]string) (Transport, error){
		"udp": func(a string, p map[node.ID]string) (Transport, error) { return ListenUDP(a, p) },
		"tcp": func(a string, p map[node.ID]string) (Transport, error) { return ListenTCP(a, p) },
	} {
		t.Run(name, func(t *testing.T) {
			a, b := pairOf(t, listen)
			pingPong(t, a, b)
			if err := a.Send(9, []byte("x")); err == nil {
				t.Fatal("send to an unknown peer succeeded")
			}
		})
	}
}

func TestNetworkAndFaults(t *testing.T) {
	n := NewNetwork()
	a, b := n.Endpoint(1), n.Endpoint(2)
	defer a.Close()
	defer b.Close()
	f := NewFaulty(a, Faults{Drop: 0.5, Seed: 1})
	for i := 0; i < 1000; i++ {
		f.Send(2, []byte{byte(i)})
	}
	got := len(b.in)
	if got < 400 || got > 600 || int(f.Dropped())+got != 1000 {
		t.Fatalf("50%% drop delivered %d of 1000 (dropped %d)", got, f.Dropped())
	}
	// Same seed, same decisions.
	g := NewFaulty(a, Faults{Drop: 0.5, Seed: 1})
	for i := 0; i < 1000; i++ {
		g.Send(3, nil) // unknown peer: the decision is still drawn
	}
	if g.Dropped() != f.Dropped() {
		t.Fatalf("same seed, different drops: %d vs %d", g.Dropped(), f.Dropped())
	}
	dup := NewFaulty(a, Faults{Dup: 1, Seed: 2})
	for len(b.in) > 0 {
		<-b.in
	}
	dup.Send(2, []byte("d"))
	if len(b.in) != 2 {
		t.Fatalf("dup=1 delivered %d copies", len(b.in))
	}
	dup.Cut(2)
	dup.Send(2, []byte("cut"))
	if len(b.in) != 2 {
		t.Fatal("a cut link delivered")
	}
	dup.Heal()
	delay := NewFaulty(a, Faults{Delay: 20 * time.Millisecond, Seed: 3})
	for i := 0; i < 50; i++ {
		delay.Send(2, []byte{byte(i)})
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(b.in) < 52 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if len(b.in) != 52 {
		t.Fatalf("delayed frames: %d of 50 arrived", len(b.in)-2)
	}
}

func ExampleNetwork() {
	n := NewNetwork()
	a, b := n.Endpoint(1), n.Endpoint(2)
	a.Send(2, []byte("hello"))
	p, _ := b.Recv()
	p.Reply([]byte("hi"))
	q, _ := a.Recv()
	fmt.Println(string(p.Data), string(q.Data))
	// Output: hello hi
}

// TestSetPeerMoves: after SetPeer, frames to the peer go to its new
// address (a TCP transport drops the connection to the old one).
func TestSetPeerMoves(t *testing.T) {
	for name, listen := range map[string]func(string, map[node.ID]string) (Transport, error){
		"udp": func(a string, p map[node.ID]string) (Transport, error) { return ListenUDP(a, p) },
		"tcp": func(a string, p map[node.ID]string) (Transport, error) { return ListenTCP(a, p) },
	} {
		t.Run(name, func(t *testing.T) {
			old, b := pairOf(t, listen)
			moved, err := listen("127.0.0.1:0", nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { moved.Close() })
			if err := b.Send(1, []byte("one")); err != nil {
				t.Fatal(err)
			}
			if p := recvWithin(t, old); string(p.Data) != "one" {
				t.Fatalf("before the move: got %q", p.Data)
			}
			b.(Mover).SetPeer(1, netip.MustParseAddrPort(moved.Addr()))
			if err := b.Send(1, []byte("two")); err != nil {
				t.Fatal(err)
			}
			if p := recvWithin(t, moved); string(p.Data) != "two" {
				t.Fatalf("after the move: got %q", p.Data)
			}
		})
	}
}
