package transport

import (
	"net"
	"net/netip"
	"syscall"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestUDPRawFamilies: datagrams and replies cross IPv4, IPv6 and a
// dual-stack socket talking to an IPv4 peer (v4-mapped), on the raw path.
func TestUDPRawFamilies(t *testing.T) {
	for _, tc := range []struct{ name, a, b string }{
		{"ipv4", "127.0.0.1:0", "127.0.0.1:0"},
		{"ipv6", "[::1]:0", "[::1]:0"},
		{"dual-stack to ipv4", ":0", "127.0.0.1:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ListenUDP(tc.a, nil)
			if err != nil {
				t.Skipf("cannot bind %s: %v", tc.a, err)
			}
			defer a.Close()
			if a.raw == nil {
				t.Fatal("no raw I/O on a UDP socket")
			}
			port := a.conn.LocalAddr().(*net.UDPAddr).Port
			target := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
			if tc.a == "[::1]:0" {
				target = netip.AddrPortFrom(netip.IPv6Loopback(), uint16(port))
			}
			b, err := ListenUDP(tc.b, map[node.ID]string{1: target.String()})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			for i := 0; i < 3; i++ {
				pingPong(t, a, b)
			}
		})
	}
}

// TestUDPRawClosed: Recv on a closed transport ends with net.ErrClosed
// (the driver's reader stops on it) instead of spinning.
func TestUDPRawClosed(t *testing.T) {
	a, err := ListenUDP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := a.Recv(); done <- err }()
	a.Close()
	if err := <-done; err != net.ErrClosed {
		t.Fatalf("Recv after Close: %v", err)
	}
}

// FuzzSockaddr: an address encoded for either family decodes to the same
// address (IPv4 on an IPv6 socket as v4-mapped), and decoding arbitrary
// bytes never panics.
func FuzzSockaddr(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1}, uint16(9000), false, []byte{})
	f.Add(netip.IPv6Loopback().AsSlice(), uint16(1), true, []byte{10, 0, 1})
	f.Fuzz(func(t *testing.T, ip []byte, port uint16, v6 bool, junk []byte) {
		decodeSockaddr(junk)
		addr, ok := netip.AddrFromSlice(ip)
		if !ok {
			return
		}
		r := &rawUDP{v6: v6}
		var b [syscall.SizeofSockaddrAny]byte
		n, err := r.sockaddr(netip.AddrPortFrom(addr, port), &b)
		if err != nil {
			if v6 || addr.Unmap().Is4() {
				t.Fatalf("%v (v6 socket %v) not encoded: %v", addr, v6, err)
			}
			return
		}
		got := decodeSockaddr(b[:n])
		want := netip.AddrPortFrom(addr.Unmap(), port)
		if v6 {
			want = netip.AddrPortFrom(netip.AddrFrom16(addr.As16()), port)
		}
		if got != want {
			t.Fatalf("%v (v6 socket %v): decoded %v", want, v6, got)
		}
	})
}
