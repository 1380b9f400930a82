package cli

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/metrics"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/transport"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

// Common is what every command derives from the client flags.
type Common struct {
	Tool      string
	Peers     map[node.ID]string
	Cluster   string // --cluster, the cluster's name
	Transport string // --transport: "udp" or "tcp"
	Key       []byte // nil without --key-file
	Log       *slog.Logger
	Out       *Output
}

// Logger is the logger --log-level and --no-color ask for: stderr,
// coloured only on a terminal.
func Logger(c *ucli.Context, tool string) (*slog.Logger, error) {
	level, err := ParseLevel(c.String(FlagLogLevel))
	if err != nil {
		return nil, err
	}
	return NewLogger(os.Stderr, tool, level, UseColor(os.Stderr, c.Bool(FlagNoColor))), nil
}

// Setup parses the client flags: log level, colour, output mode, peers
// and key. Errors carry exit code 64.
func Setup(c *ucli.Context, tool string) (*Common, error) {
	log, err := Logger(c, tool)
	if err != nil {
		return nil, err
	}
	cm := &Common{Tool: tool, Log: log, Out: NewOutput(os.Stdout, c.Bool(FlagJSON)),
		Cluster: c.String(FlagCluster), Transport: c.String(FlagTransport)}
	if cm.Peers, err = ParsePeers(c.String(FlagPeers)); err != nil {
		return nil, Exitf(ExitUsage, "%v", err)
	}
	if kf := c.String(FlagKeyFile); kf != "" {
		if cm.Key, err = wire.LoadKey(kf); err != nil {
			return nil, Exitf(ExitUsage, "%v", err)
		}
	}
	return cm, nil
}

// Member is a running cluster member's identity and socket.
type Member struct {
	*Common
	ID          node.ID
	Incarnation uint64
	Framer      *wire.Framer
	Net         transport.Transport
	readyFile   string
	// Metrics is the --metrics endpoint; nil without the flag (its
	// methods then do nothing).
	Metrics *metrics.Server
	// DelayReady: Start does not write --ready-file; the tool calls
	// WriteReady once it is ready (ticketd: once it has found the pool).
	DelayReady bool
}

// Join parses --id and --bind on top of Setup, creates the Framer and
// opens the transport (with any --fault-* injection). It warns loudly when
// frames travel without a key.
func Join(c *ucli.Context, tool string) (*Member, error) {
	cm, err := Setup(c, tool)
	if err != nil {
		return nil, err
	}
	if c.String(FlagID) == "" {
		return nil, Exitf(ExitUsage, "--id is required")
	}
	id, err := node.ParseID(c.String(FlagID))
	if err != nil {
		return nil, Exitf(ExitUsage, "--id: %v", err)
	}
	if _, ok := cm.Peers[id]; !ok {
		return nil, Exitf(ExitUsage, "--id %d is not in --peers (members: %v)", id, IDs(cm.Peers))
	}
	if cm.Key == nil && !c.Bool(FlagInsecure) {
		if far := remotePeer(cm.Peers); far != "" {
			return nil, Exitf(ExitUsage, "peer %s is not on loopback: give every member --key-file (make one with 'head -c 32 /dev/urandom > cluster.key'), or --insecure to run unauthenticated", far)
		}
	}
	bind := cm.Peers[id]
	if b := c.String(FlagBind); b != "" {
		if bind, err = ResolveBind(b); err != nil {
			return nil, Exitf(ExitUsage, "%v", err)
		}
	}
	m := &Member{Common: cm, ID: id, Incarnation: uint64(time.Now().UnixNano()), readyFile: c.String(FlagReadyFile)}
	if m.Framer, err = wire.NewFramer(ClusterKey(c.String(FlagCluster), cm.Peers), id, m.Incarnation, cm.Key); err != nil {
		return nil, Exitf(ExitUsage, "%v", err)
	}
	m.Framer.Only(IDs(cm.Peers))
	if m.Net, err = Listen(c, bind, cm.Peers); err != nil {
		return nil, err
	}
	if err := m.listenMetrics(c); err != nil {
		m.Net.Close()
		return nil, err
	}
	return m, nil
}

// JoinOpen is Join for a tool whose members are learnt as it runs (ticketd):
// no --peers; --id and --bind are required, the transport is UDP, frames
// from any member ID are taken (the key is what keeps strangers out), and
// control frames addressed to nobody in particular open too, so that a
// new member can introduce itself to an address (contacts: the --join
// addresses, checked here like peers' addresses).
func JoinOpen(c *ucli.Context, tool string, contacts []string) (*Member, error) {
	log, err := Logger(c, tool)
	if err != nil {
		return nil, err
	}
	cm := &Common{Tool: tool, Log: log, Out: NewOutput(os.Stdout, c.Bool(FlagJSON)), Cluster: c.String(FlagCluster),
		Transport: "udp", Peers: map[node.ID]string{}}
	if kf := c.String(FlagKeyFile); kf != "" {
		if cm.Key, err = wire.LoadKey(kf); err != nil {
			return nil, Exitf(ExitUsage, "%v", err)
		}
	}
	if c.String(FlagID) == "" {
		return nil, Exitf(ExitUsage, "--id is required")
	}
	id, err := node.ParseID(c.String(FlagID))
	if err != nil || id >= wire.ClientIDBase {
		return nil, Exitf(ExitUsage, "--id: want an integer from 1 to %d", wire.ClientIDBase-1)
	}
	if c.String(FlagBind) == "" {
		return nil, Exitf(ExitUsage, "--bind is required (this member's address, host:port)")
	}
	bind, err := ResolveBind(c.String(FlagBind))
	if err != nil {
		return nil, Exitf(ExitUsage, "%v", err)
	}
	for _, a := range contacts {
		if err := checkAddr(a, false); err != nil {
			return nil, Exitf(ExitUsage, "--join: %v", err)
		}
	}
	if cm.Key == nil && !c.Bool(FlagInsecure) {
		all := map[node.ID]string{id: bind}
		for i, a := range contacts {
			all[node.ID(i+2)] = a
		}
		if far := remotePeer(all); far != "" {
			return nil, Exitf(ExitUsage, "%s is not on loopback: give every member --key-file (make one with 'head -c 32 /dev/urandom > cluster.key'), or --insecure to run unauthenticated", far)
		}
	}
	m := &Member{Common: cm, ID: id, Incarnation: uint64(time.Now().UnixNano()), readyFile: c.String(FlagReadyFile)}
	if m.Framer, err = wire.NewFramer(ClusterKey(cm.Cluster, nil), id, m.Incarnation, cm.Key); err != nil {
		return nil, Exitf(ExitUsage, "%v", err)
	}
	m.Framer.AcceptUnaddressed()
	if m.Net, err = Listen(c, bind, nil); err != nil {
		return nil, err
	}
	if err := m.listenMetrics(c); err != nil {
		m.Net.Close()
		return nil, err
	}
	return m, nil
}

// DropFlags returns flags without those named.
func DropFlags(flags []ucli.Flag, names ...string) []ucli.Flag {
	var out []ucli.Flag
	for _, f := range flags {
		if !slices.Contains(names, f.Names()[0]) {
			out = append(out, f)
		}
	}
	return out
}

// remotePeer returns a peer address that is not on loopback, or "".
func remotePeer(peers map[node.ID]string) string {
	for _, id := range IDs(peers) {
		host, _, _ := net.SplitHostPort(peers[id])
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return peers[id]
		}
	}
	return ""
}

// Close closes the member's transport. Call it (deferred) once Join
// succeeded, on every path.
func (m *Member) Close() {
	m.Net.Close()
	m.Metrics.Close()
}

// listenMetrics opens the --metrics endpoint, if asked for.
func (m *Member) listenMetrics(c *ucli.Context) error {
	var err error
	m.Metrics, err = ListenMetrics(c, m.Tool, m.ID, m.Log)
	return err
}

// ListenMetrics opens the --metrics endpoint of a long-running command
// (nil, nil without the flag): a bad address is a usage error (64), one
// that cannot be bound exits 69.
func ListenMetrics(c *ucli.Context, tool string, id node.ID, log *slog.Logger) (*metrics.Server, error) {
	addr := c.String(FlagMetrics)
	if addr == "" {
		return nil, nil
	}
	if _, err := metrics.ResolveAddr(addr); err != nil {
		return nil, Exitf(ExitUsage, "%v", err)
	}
	s, err := metrics.Listen(metrics.Config{Addr: addr, Tool: tool, Member: id, Log: log})
	if err != nil {
		return nil, Exitf(ExitUnavailable, "%v", err)
	}
	return s, nil
}

// ParseTime parses an absolute time for flags such as --start-at: RFC 3339,
// Unix seconds (fractions allowed), or "+D" for a duration from now.
func ParseTime(s string, now time.Time) (time.Time, error) {
	if len(s) > 1 && s[0] == '+' {
		d, err := time.ParseDuration(s[1:])
		if err != nil {
			return time.Time{}, err
		}
		return now.Add(d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	var sec float64
	if _, err := fmt.Sscanf(s, "%g", &sec); err == nil && sec > 0 {
		return time.Unix(0, int64(sec*1e9)), nil
	}
	return time.Time{}, fmt.Errorf("%q is not RFC 3339, Unix seconds or +duration", s)
}
