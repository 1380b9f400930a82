package cli_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/cli/clitest"
)

// TestJoinAddrs: --join's names give every address they resolve to, in
// order, without this member's own and without the --peers ID rules
// (addresses whose last bytes agree, a target without an ID); the exit
// codes are 64 for a malformed name and 69 for one that gives nothing else.
func TestJoinAddrs(t *testing.T) {
	d := clitest.StartDNS(t)
	d.SetIP("pool.rt.test", "10.0.1.7", "10.0.0.7", "127.0.0.1")
	d.SetIP("host.rt.test", "10.0.0.9")
	d.SetSRV("_t._udp.rt.test", clitest.SRV{Target: "host.rt.test", Port: 7301}, clitest.SRV{Target: "gone.rt.test", Port: 7302})
	got, err := cli.JoinAddrs("10.0.0.1:7300, dns:pool.rt.test.:7300,srv:_t._udp.rt.test.", "127.0.0.1:7300", d.Addr)
	want := []string{"10.0.0.1:7300", "10.0.0.7:7300", "10.0.1.7:7300", "10.0.0.9:7301"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
	if got, err := cli.JoinAddrs("", "127.0.0.1:7300", d.Addr); err != nil || got != nil {
		t.Fatalf("empty --join: %v, %v", got, err)
	}
	d.SetIP("self.rt.test", "127.0.0.1")
	for _, c := range []struct {
		join string
		code int
	}{{"dns:pool.rt.test", 64}, {"dns:pool.rt.test.:x", 64}, {"srv:", 64}, {"dns:nosuch.rt.test.:7300", 69}, {"dns:self.rt.test.:7300", 69}} {
		_, err := cli.JoinAddrs(c.join, "127.0.0.1:7300", d.Addr)
		var ee *cli.ExitError
		if !errors.As(err, &ee) || ee.Code != c.code {
			t.Errorf("--join %s: %v, want exit %d", c.join, err, c.code)
		}
	}
}
