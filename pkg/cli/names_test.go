package cli_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
	"github.com/roundtable-go/roundtable/pkg/node"
)

func TestParsePeerNames(t *testing.T) {
	for _, spec := range []string{"1=127.0.0.1:7001", "@peers", ""} {
		if _, ok, err := cli.ParsePeerNames(spec, ""); ok || err != nil {
			t.Errorf("%q: ok %v err %v, want a static list", spec, ok, err)
		}
	}
	for _, spec := range []string{"dns:", "dns:name", "dns::7000", "dns:name:0", "dns:name:70000", "dns:name:x", "srv:", "srv:name:7000"} {
		if _, ok, err := cli.ParsePeerNames(spec, ""); !ok || err == nil {
			t.Errorf("%q: ok %v err %v, want an error", spec, ok, err)
		}
	}
	if _, _, err := cli.ParsePeerNames("dns:name:7000", "nowhere"); err == nil {
		t.Error("a --dns-server that is not host:port was taken")
	}
}

func TestTargetID(t *testing.T) {
	for target, want := range map[string]node.ID{"3.elect.example.com.": 3, "elect-12.example.com.": 12,
		"node07": 7, "elect.example.com.": 0, "": 0, "3x.example.": 0, "9999999999.example.": 0} {
		got, ok := cli.TargetID(target)
		if got != want || ok != (want != 0) {
			t.Errorf("TargetID(%q) = %d, %v; want %d", target, got, ok, want)
		}
	}
	if id, ok := cli.TargetID("0.example."); !ok || id != 0 {
		t.Errorf("TargetID(0.example.) = %d, %v; want 0, true (refused later as ID 0)", id, ok)
	}
}

func TestAddrID(t *testing.T) {
	for a, want := range map[string]node.ID{"10.0.0.7": 7, "::ffff:10.0.0.9": 9, "fd00::1:102": 258, "192.168.1.255": 255} {
		if got := cli.AddrID(netip.MustParseAddr(a)); got != want {
			t.Errorf("AddrID(%s) = %d, want %d", a, got, want)
		}
	}
}

// TestResolvePeerNames looks both forms up in a test DNS server, and
// checks that records breaking the ID rule are a *PeerSetError (exit 64)
// while a name that does not resolve is not.
func TestResolvePeerNames(t *testing.T) {
	d := clitest.StartDNS(t)
	resolve := func(spec string) (map[node.ID]string, error) {
		t.Helper()
		p, ok, err := cli.ParsePeerNames(spec, d.Addr)
		if !ok || err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		return p.Resolve(context.Background())
	}
	d.SetIP("rt.test", "127.0.0.3", "127.0.0.1", "::ffff:127.0.0.2")
	got, err := resolve("dns:rt.test.:7000")
	want := map[node.ID]string{1: "127.0.0.1:7000", 2: "127.0.0.2:7000", 3: "127.0.0.3:7000"}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("dns: got %v, %v; want %v", got, err, want)
	}

	d.SetIP("e1.rt.test", "127.0.0.1")
	d.SetIP("elect-2.rt.test", "10.0.0.5", "10.0.0.4")
	d.SetIP("e3.rt.test", "::1")
	d.SetSRV("_elect._udp.rt.test", clitest.SRV{Target: "e1.rt.test", Port: 7001},
		clitest.SRV{Target: "elect-2.rt.test", Port: 7002}, clitest.SRV{Target: "e3.rt.test", Port: 7003})
	got, err = resolve("srv:_elect._udp.rt.test.")
	want = map[node.ID]string{1: "127.0.0.1:7001", 2: "10.0.0.4:7002", 3: "[::1]:7003"}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("srv: got %v, %v; want %v", got, err, want)
	}

	bad := func(spec, why string) {
		t.Helper()
		_, err := resolve(spec)
		var pe *cli.PeerSetError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: got %v, want a PeerSetError saying %q", spec, err, why)
		}
	}
	d.SetIP("clash.test", "10.0.0.1", "10.0.1.1")
	bad("dns:clash.test.:7000", "both give member ID 1")
	d.SetIP("zero.test", "10.0.0.0")
	bad("dns:zero.test.:7000", "gives member ID 0")
	d.SetSRV("_x._udp.clash.test", clitest.SRV{Target: "e1.rt.test", Port: 1}, clitest.SRV{Target: "elect-2.rt.test", Port: 2},
		clitest.SRV{Target: "node1.rt.test", Port: 3})
	d.SetIP("node1.rt.test", "127.0.0.9")
	bad("srv:_x._udp.clash.test.", "both give member ID 1")
	d.SetSRV("_y._udp.rt.test", clitest.SRV{Target: "elect.rt.test", Port: 1})
	bad("srv:_y._udp.rt.test.", "does not end in a member ID")

	for _, spec := range []string{"dns:nothing.test.:7000", "srv:_none._udp.rt.test."} {
		_, err := resolve(spec)
		var pe *cli.PeerSetError
		if err == nil || errors.As(err, &pe) {
			t.Errorf("%s: got %v, want a look-up error", spec, err)
		}
	}
}

// block is a Runner that runs until it is stopped.
type block struct{}

func (block) Run(ctx context.Context, _ func(node.Event)) error { <-ctx.Done(); return nil }

// TestFollowMovesPeer starts a member in this process (so that -race sees
// the look-ups beside the transport) whose peer set comes from SRV
// records, and moves member 2 from one address to another: frames to 2
// reach the first address, then, once the record changed, the second.
func TestFollowMovesPeer(t *testing.T) {
	d := clitest.StartDNS(t)
	listen := func() (net.PacketConn, uint16) {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, uint16(c.LocalAddr().(*net.UDPAddr).Port)
	}
	self, selfPort := listen()
	self.Close() // the member binds it
	a, portA := listen()
	b, portB := listen()
	d.SetIP("m-1.rt.test", "127.0.0.1")
	d.SetIP("m-2.rt.test", "127.0.0.1")
	d.SetSRV("_m._udp.rt.test", clitest.SRV{Target: "m-1.rt.test", Port: selfPort}, clitest.SRV{Target: "m-2.rt.test", Port: portA})

	// reaches sends frames to member 2 until one arrives on c.
	reaches := func(m *cli.Member, c net.PacketConn) bool {
		buf := make([]byte, 64)
		for try := 0; try < 500; try++ {
			if err := m.Net.Send(2, []byte("x")); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if _, _, err := c.ReadFrom(buf); err == nil {
				return true
			}
		}
		return false
	}
	// reaches1 sends one frame to member 2 and reports whether c got it
	// (or one sent before) within 20 ms.
	reaches1 := func(m *cli.Member, c net.PacketConn) bool {
		buf := make([]byte, 64)
		if err := m.Net.Send(2, []byte("x")); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		_, _, err := c.ReadFrom(buf)
		return err == nil
	}
	app := &ucli.App{Name: "t", Flags: cli.NodeFlags(), Action: func(c *ucli.Context) error {
		m, err := cli.Join(c, "t")
		if err != nil {
			return err
		}
		defer m.Close()
		if m.ID != 1 {
			t.Errorf("--advertise found member %d, want 1", m.ID)
		}
		live, err := m.Start(block{})
		if err != nil {
			return err
		}
		defer live.Stop()
		if !reaches(m, a) {
			t.Error("frames to member 2 did not reach its first address")
		}
		d.SetSRV("_m._udp.rt.test", clitest.SRV{Target: "m-1.rt.test", Port: selfPort}, clitest.SRV{Target: "m-2.rt.test", Port: portB})
		if !reaches(m, b) {
			t.Error("frames to member 2 did not follow its record to the second address")
		}
		// Its record gone, member 2 has left: frames to it stop (ten
		// silent reads in a row, within 10 s: frames sent before the
		// look-up saw the change are read first) until it is back.
		d.SetSRV("_m._udp.rt.test", clitest.SRV{Target: "m-1.rt.test", Port: selfPort})
		silent := 0
		for end := time.Now().Add(10 * time.Second); silent < 10 && time.Now().Before(end); {
			if reaches1(m, b) {
				silent = 0
			} else {
				silent++
			}
		}
		if silent < 10 {
			t.Error("frames still go to member 2 after its record disappeared")
		}
		d.SetSRV("_m._udp.rt.test", clitest.SRV{Target: "m-1.rt.test", Port: selfPort}, clitest.SRV{Target: "m-2.rt.test", Port: portB})
		if !reaches(m, b) {
			t.Error("frames to member 2 did not resume when its record came back")
		}
		return nil
	}}
	err := app.Run([]string{"t", "--peers", "srv:_m._udp.rt.test.", "--dns-server", d.Addr, "--resolve-every", "20ms",
		"--advertise", fmt.Sprintf("127.0.0.1:%d", selfPort), "--log-level", "error", "--no-color"})
	if err != nil {
		t.Fatal(err)
	}
}
