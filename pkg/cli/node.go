package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
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
	Cluster   string        // --cluster, the cluster's name
	Transport string        // --transport: "udp" or "tcp"
	Key       *wire.Keyring // nil without --key-file
	KeyFile   string        // --key-file, re-read on SIGHUP by a running member
	Names     *PeerNames    // --peers dns:/srv:, nil for a list of addresses
	Log       *slog.Logger
	Out       *Output
	logJSON   bool // --log-format json
}

// Logger is the logger --log-level, --log-format and --no-color ask for:
// stderr, coloured only on a terminal, stamped with the time when not.
func Logger(c *ucli.Context, tool string) (*slog.Logger, error) {
	lc, err := logConfig(c)
	if err != nil {
		return nil, err
	}
	log := lc.Logger(os.Stderr, tool)
	if lc.JSON {
		exitLog.Store(log)
	}
	return log, nil
}

// Setup parses the client flags: log level, colour, output mode, peers
// and key. Errors carry exit code 64.
func Setup(c *ucli.Context, tool string) (*Common, error) {
	log, err := Logger(c, tool)
	if err != nil {
		return nil, err
	}
	cm := &Common{Tool: tool, Log: log, Out: NewOutput(os.Stdout, c.Bool(FlagJSON)),
		Cluster: c.String(FlagCluster), Transport: c.String(FlagTransport), logJSON: c.String(FlagLogFormat) == "json"}
	if err := cm.peers(c); err != nil {
		return nil, err
	}
	if err := cm.loadKeys(c.String(FlagKeyFile)); err != nil {
		return nil, err
	}
	return cm, nil
}

// peers sets cm.Peers and cm.Names from --peers (Peers).
func (cm *Common) peers(c *ucli.Context) (err error) {
	cm.Peers, cm.Names, err = Peers(c)
	if err == nil && cm.Names != nil {
		cm.Log.Debug("peers looked up", "peers", cm.Names.Spec, "members", cm.Peers)
	}
	return err
}

// Peers is --peers: a list of addresses, or names looked up in DNS with
// the PeerNames that found them (nil for a list). A look-up that fails is
// exit 69, a bad value or records that break the ID rule exit 64.
func Peers(c *ucli.Context) (map[node.ID]string, *PeerNames, error) {
	spec := c.String(FlagPeers)
	names, ok, err := ParsePeerNames(spec, c.String(FlagDNSServer))
	if err != nil {
		return nil, nil, Exitf(ExitUsage, "%v", err)
	}
	if !ok {
		peers, err := ParsePeers(spec)
		if err != nil {
			return nil, nil, Exitf(ExitUsage, "%v", err)
		}
		return peers, nil, nil
	}
	peers, err := names.Resolve(context.Background())
	if err != nil {
		var bad *PeerSetError
		if errors.As(err, &bad) {
			return nil, nil, Exitf(ExitUsage, "%v", err)
		}
		return nil, nil, Exitf(ExitUnavailable, "%v", err)
	}
	return peers, names, nil
}

// loadKeys reads --key-file (path; "" for none) into cm.Key.
func (cm *Common) loadKeys(path string) error {
	if path == "" {
		return nil
	}
	var err error
	if cm.Key, err = wire.LoadKeyring(path); err != nil {
		return Exitf(ExitUsage, "%v", err)
	}
	cm.KeyFile = path
	return nil
}

// ReloadKeys re-reads --key-file into the keyring every Framer of this
// command shares, so that frames sealed from now on use the file's first
// key and frames sealed with any of its keys open. A file that cannot be
// read or holds no valid key leaves the keys as they were and is logged
// as an error. Members call it on SIGHUP.
func (cm *Common) ReloadKeys() {
	if cm.Key == nil {
		cm.Log.Warn("SIGHUP: no --key-file to re-read")
		return
	}
	if err := cm.Key.Reload(cm.KeyFile); err != nil {
		cm.Log.Error("key file not reloaded: keeping the keys in use", "err", err)
		return
	}
	cm.Log.Info("key file reloaded", "file", cm.KeyFile, "keys", cm.Key.IDs())
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
	// NotifyReadyOn: under systemd, READY=1 waits for the first event of
	// this kind (mcast: "view") rather than going with --ready-file.
	NotifyReadyOn string
	// NotifyReadyWhen: under systemd, READY=1 waits until the machine's
	// status satisfies it (lockd: a quorum), polled through the driver's
	// loop every readyPoll, rather than going with --ready-file.
	NotifyReadyWhen func(status map[string]any) bool
	// quietNoKey: --insecure with every peer on loopback, a deliberate
	// choice that needs no warning.
	quietNoKey bool

	resolveEvery time.Duration // --resolve-every, with Names
}

// memberLog names the member in every JSON log record.
func (m *Member) memberLog() {
	if m.logJSON {
		m.Log = m.Log.With("member", m.ID)
	}
}

// Join parses --id and --bind on top of Setup, creates the Framer and
// opens the transport (with any --fault-* injection). It warns loudly when
// frames travel without a key.
func Join(c *ucli.Context, tool string) (*Member, error) {
	cm, err := Setup(c, tool)
	if err != nil {
		return nil, err
	}
	id, err := self(c, cm.Peers)
	if err != nil {
		return nil, err
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
	m := &Member{Common: cm, ID: id, Incarnation: uint64(time.Now().UnixNano()), readyFile: c.String(FlagReadyFile),
		quietNoKey: c.Bool(FlagInsecure) && remotePeer(cm.Peers) == "", resolveEvery: c.Duration(FlagResolveEvery)}
	m.memberLog()
	if cm.Names != nil && m.resolveEvery <= 0 {
		return nil, Exitf(ExitUsage, "--%s must be above 0", FlagResolveEvery)
	}
	m.Framer = wire.NewFramerRing(ClusterKey(c.String(FlagCluster), cm.Peers), id, m.Incarnation, cm.Key)
	m.Framer.Only(IDs(cm.Peers))
	if m.Net, err = Listen(c, bind, cm.Peers); err != nil {
		return nil, err
	}
	if cm.Names != nil {
		m.Net = newGate(m.Net) // a member whose record goes is cut off (follow)
	}
	if err := m.listenMetrics(c); err != nil {
		m.Net.Close()
		return nil, err
	}
	return m, nil
}

// self is this member's ID: --id, or, without it, the member whose
// address in peers is --advertise. Given both, they must agree.
func self(c *ucli.Context, peers map[node.ID]string) (node.ID, error) {
	adv := c.String(FlagAdvertise)
	if adv != "" {
		if err := checkAddr(adv, false); err != nil {
			return 0, Exitf(ExitUsage, "--%s: %v", FlagAdvertise, err)
		}
	}
	var id node.ID
	if c.String(FlagID) != "" {
		var err error
		if id, err = node.ParseID(c.String(FlagID)); err != nil {
			return 0, Exitf(ExitUsage, "--id: %v", err)
		}
		if _, ok := peers[id]; !ok {
			return 0, Exitf(ExitUsage, "--id %d is not in --peers (members: %v)", id, IDs(peers))
		}
		if adv != "" && !sameAddr(peers[id], adv) {
			return 0, Exitf(ExitUsage, "--%s %s: --peers gives member %d the address %s", FlagAdvertise, adv, id, peers[id])
		}
		return id, nil
	}
	if adv == "" {
		return 0, Exitf(ExitUsage, "--id is required (or --%s, this member's address in --peers)", FlagAdvertise)
	}
	for _, p := range IDs(peers) {
		if sameAddr(peers[p], adv) {
			return p, nil
		}
	}
	return 0, Exitf(ExitUsage, "--%s %s is no member's address in --peers (members: %v)", FlagAdvertise, adv, peers)
}

// sameAddr says whether two host:port strings name one address
// (127.0.0.1:7 and [::ffff:127.0.0.1]:7 do).
func sameAddr(a, b string) bool {
	pa, errA := netip.ParseAddrPort(a)
	pb, errB := netip.ParseAddrPort(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return pa.Addr().Unmap() == pb.Addr().Unmap() && pa.Port() == pb.Port()
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
		Transport: "udp", Peers: map[node.ID]string{}, logJSON: c.String(FlagLogFormat) == "json"}
	if err := cm.loadKeys(c.String(FlagKeyFile)); err != nil {
		return nil, err
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
	all := map[node.ID]string{id: bind}
	for i, a := range contacts {
		all[node.ID(i+2)] = a
	}
	if cm.Key == nil && !c.Bool(FlagInsecure) {
		if far := remotePeer(all); far != "" {
			return nil, Exitf(ExitUsage, "%s is not on loopback: give every member --key-file (make one with 'head -c 32 /dev/urandom > cluster.key'), or --insecure to run unauthenticated", far)
		}
	}
	m := &Member{Common: cm, ID: id, Incarnation: uint64(time.Now().UnixNano()), readyFile: c.String(FlagReadyFile),
		quietNoKey: c.Bool(FlagInsecure) && remotePeer(all) == ""}
	m.memberLog()
	m.Framer = wire.NewFramerRing(ClusterKey(cm.Cluster, nil), id, m.Incarnation, cm.Key)
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
