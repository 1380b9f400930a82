package cli

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	sockaddr "github.com/hashicorp/go-sockaddr/template"
	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/transport"
)

// Env is the environment variable for a flag of a tool: ("elect",
// "key-file") → ELECT_KEY_FILE.
func Env(tool, flag string) string {
	return strings.ToUpper(tool + "_" + strings.ReplaceAll(flag, "-", "_"))
}

// WithEnv sets each flag's environment variable from its name. Flags that
// already name one keep it.
func WithEnv(tool string, flags []ucli.Flag) []ucli.Flag {
	for _, f := range flags {
		if ev, ok := f.(interface{ GetEnvVars() []string }); ok && len(ev.GetEnvVars()) > 0 {
			continue
		}
		env := Env(tool, f.Names()[0])
		// A flag shared by two commands (one variable, one meaning) is
		// named once.
		add := func(vs *[]string) {
			if !slices.Contains(*vs, env) {
				*vs = append(*vs, env)
			}
		}
		switch f := f.(type) {
		case *ucli.StringFlag:
			add(&f.EnvVars)
		case *ucli.IntFlag:
			add(&f.EnvVars)
		case *ucli.UintFlag:
			add(&f.EnvVars)
		case *ucli.Uint64Flag:
			add(&f.EnvVars)
		case *ucli.Float64Flag:
			add(&f.EnvVars)
		case *ucli.DurationFlag:
			add(&f.EnvVars)
		case *ucli.BoolFlag:
			add(&f.EnvVars)
		}
	}
	return flags
}

// Common flag names.
const (
	FlagID         = "id"
	FlagPeers      = "peers"
	FlagBind       = "bind"
	FlagCluster    = "cluster"
	FlagKeyFile    = "key-file"
	FlagJSON       = "json"
	FlagLogLevel   = "log-level"
	FlagNoColor    = "no-color"
	FlagReadyFile  = "ready-file"
	FlagTransport  = "transport"
	FlagFaultDrop  = "fault-drop"
	FlagFaultDelay = "fault-delay"
	// FlagFaultLatency holds frames to given peers for fixed times.
	FlagFaultLatency = "fault-latency"
	FlagFaultDup     = "fault-dup"
	FlagFaultSeed    = "fault-seed"
	FlagInsecure     = "insecure"
	FlagMetrics      = "metrics"
)

// NodeFlags are the flags of a tool that runs a cluster member.
func NodeFlags() []ucli.Flag {
	return append([]ucli.Flag{
		&ucli.StringFlag{Name: FlagID, Usage: "this process's ID, an integer ≥ 1 present in --peers"},
		BindFlag("", "this ID's address in --peers"),
		ReadyFileFlag(),
		&ucli.StringFlag{Name: FlagTransport, Value: "udp", Usage: "udp or tcp"},
		&ucli.Float64Flag{Name: FlagFaultDrop, Usage: "testing: drop this fraction of outgoing frames"},
		&ucli.DurationFlag{Name: FlagFaultDelay, Usage: "testing: delay each outgoing frame by up to this much (reorders)"},
		&ucli.StringFlag{Name: FlagFaultLatency, Usage: "testing: hold every frame to a peer for a fixed time, e.g. 2=10ms,3=25ms (a geometry of link delays)"},
		&ucli.Float64Flag{Name: FlagFaultDup, Usage: "testing: duplicate this fraction of outgoing frames"},
		&ucli.Uint64Flag{Name: FlagFaultSeed, Usage: "testing: seed for the injected faults"},
		&ucli.BoolFlag{Name: FlagInsecure, Usage: "run without --key-file although a peer is not on loopback: anyone who can reach the members can take part"},
		&ucli.StringFlag{Name: FlagAdvertise, Usage: "the address (host:port) this member is known by in --peers, when it is not the one it binds (NAT, containers); finds this member's ID without --id"},
		&ucli.DurationFlag{Name: FlagResolveEvery, Value: DefaultResolveEvery, Usage: "with --peers dns:/srv:, look the peers up again this often: follow a moved member, log one whose record is gone"},
		MetricsFlag(),
	}, ClientFlags()...)
}

// ClientFlags are the flags shared by every command that talks to peers.
func ClientFlags() []ucli.Flag {
	return append([]ucli.Flag{
		PeersFlag(), DNSServerFlag(),
		&ucli.StringFlag{Name: FlagCluster, Value: "roundtable", Usage: "cluster name; frames of other clusters are dropped"},
		&ucli.StringFlag{Name: FlagKeyFile, Usage: "AES-256 keys, one per line as 64 hex characters (or one key as 32 raw bytes): the first seals every frame, any opens; a member re-reads the file on SIGHUP"},
		JSONFlag(),
	}, LogFlags()...)
}

// QueryFlags are --wait and --transport of a command that asks the
// members of --peers for their status (QueryAll).
func QueryFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.DurationFlag{Name: "wait", Value: time.Second, Usage: "how long to wait for answers"},
		&ucli.StringFlag{Name: FlagTransport, Value: "udp", Usage: "udp or tcp"},
	}
}

// The flags below are shared one by one, so that a flag means the same
// (and reads the same environment variable the same way) in every command.

// MetricsFlag is --metrics: the HTTP endpoint of a long-running command.
func MetricsFlag() ucli.Flag {
	return &ucli.StringFlag{Name: FlagMetrics, Usage: "serve /metrics (Prometheus text), /healthz and /readyz on this address, host:port (:port binds loopback; any other host is unauthenticated); see docs/metrics.md"}
}

// JSONFlag is --json.
func JSONFlag() ucli.Flag {
	return &ucli.BoolFlag{Name: FlagJSON, Usage: "print JSON lines instead of text"}
}

// LogFlags are --log-level and --no-color.
func LogFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: FlagLogLevel, Value: "info", Usage: "debug, info, warn or error (logs go to stderr)"},
		&ucli.BoolFlag{Name: FlagNoColor, Usage: "never colour logs (also NO_COLOR)"},
		LogFormatFlag(),
	}
}

// PeersFlag is --peers.
func PeersFlag() ucli.Flag {
	return &ucli.StringFlag{Name: FlagPeers, Usage: "cluster members: '1=host:port,2=host:port', '@file' (one id=host:port per line), 'dns:NAME:PORT' (A/AAAA records; ID = the address's last byte) or 'srv:_svc._udp.NAME' (SRV records; ID = the number ending the target's first label)"}
}

// DNSServerFlag is the hidden --dns-server, for tests.
func DNSServerFlag() ucli.Flag {
	return &ucli.StringFlag{Name: FlagDNSServer, Hidden: true, Usage: "testing: send every DNS query of --peers dns:/srv: to this host:port"}
}

// ReadyFileFlag is --ready-file.
func ReadyFileFlag() ucli.Flag {
	return &ucli.StringFlag{Name: FlagReadyFile, Usage: "write the listening address to this file once up"}
}

// WatchReadyFlag is a watcher's --ready-file: written (with the socket's
// path) once the daemon has registered the watcher.
func WatchReadyFlag() ucli.Flag {
	return &ucli.StringFlag{Name: FlagReadyFile, Usage: "write the socket's path to this file once the daemon has registered the watcher"}
}

// BindFlag is --bind, with its value or the text that says what the
// default is.
func BindFlag(value, defaultText string) ucli.Flag {
	return &ucli.StringFlag{Name: FlagBind, Value: value, DefaultText: defaultText,
		Usage: "address to listen on; go-sockaddr templates allowed, e.g. '{{ GetPrivateIP }}:7000'"}
}

// ParseIDValues parses "1=a,2=b" or "@file" (one id=value per line, or
// comma-separated; '#' starts a comment) into each ID's value, in the
// order given; what names the kind of value in errors ("host:port").
// An ID listed twice is an error.
func ParseIDValues(spec, what string) ([]node.ID, map[node.ID]string, error) {
	if strings.HasPrefix(spec, "@") {
		f, err := os.Open(spec[1:])
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		var parts []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line, _, _ := strings.Cut(sc.Text(), "#")
			parts = append(parts, line)
		}
		if err := sc.Err(); err != nil {
			return nil, nil, err
		}
		spec = strings.Join(parts, ",")
	}
	var ids []node.ID
	vals := map[node.ID]string{}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		idS, v, ok := strings.Cut(item, "=")
		if !ok {
			return nil, nil, fmt.Errorf("%q is not id=%s", item, what)
		}
		id, err := node.ParseID(strings.TrimSpace(idS))
		if err != nil {
			return nil, nil, err
		}
		if _, dup := vals[id]; dup {
			return nil, nil, fmt.Errorf("id %d listed twice", id)
		}
		ids, vals[id] = append(ids, id), strings.TrimSpace(v)
	}
	return ids, vals, nil
}

// ParsePeers parses "1=host:port,2=host:port" or "@file" (ParseIDValues).
func ParsePeers(spec string) (map[node.ID]string, error) {
	if spec == "" {
		return nil, fmt.Errorf("--peers is required (e.g. --peers 1=127.0.0.1:7001,2=127.0.0.1:7002)")
	}
	ids, peers, err := ParseIDValues(spec, "host:port")
	if err != nil {
		return nil, fmt.Errorf("--peers: %w", err)
	}
	addrs := map[string]node.ID{}
	for _, id := range ids {
		addr := peers[id]
		if err := checkAddr(addr, false); err != nil {
			return nil, fmt.Errorf("--peers: member %d: %v", id, err)
		}
		if other, dup := addrs[addr]; dup {
			return nil, fmt.Errorf("--peers: ids %d and %d share address %s", other, id, addr)
		}
		addrs[addr] = id
	}
	if len(peers) == 0 {
		return nil, fmt.Errorf("--peers: no members")
	}
	return peers, nil
}

// IDs returns the peer IDs, sorted.
func IDs(peers map[node.ID]string) []node.ID {
	ids := make([]node.ID, 0, len(peers))
	for id := range peers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ClusterKey is the string hashed into every frame header: the cluster name
// and the sorted member IDs, so processes started with different member
// lists never mistake each other's frames for their own cluster's.
func ClusterKey(name string, peers map[node.ID]string) string {
	var b strings.Builder
	b.WriteString(name)
	for _, id := range IDs(peers) {
		fmt.Fprintf(&b, ",%d", id)
	}
	return b.String()
}

// ResolveBind expands a go-sockaddr template ("{{ GetPrivateIP }}:7000")
// and checks the result is host:port.
func ResolveBind(tmpl string) (string, error) {
	out, err := sockaddr.Parse(tmpl)
	if err != nil {
		return "", fmt.Errorf("--bind %q: %w", tmpl, err)
	}
	out = strings.TrimSpace(out)
	if err := checkAddr(out, true); err != nil {
		if out != tmpl {
			return "", fmt.Errorf("--bind %q expands to %q: %v", tmpl, out, err)
		}
		return "", fmt.Errorf("--bind: %v", err)
	}
	return out, nil
}

// checkAddr says why addr is not host:port with a port in range (1 to
// 65535; 0, "any free port", too when anyPort).
func checkAddr(addr string, anyPort bool) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 || p == 0 && !anyPort {
		return fmt.Errorf("%q: the port must be a number from 1 to 65535", addr)
	}
	return nil
}

// Listen opens the transport named by --transport on addr, wrapped in the
// fault injector when any --fault-* flag is set.
func Listen(c *ucli.Context, addr string, peers map[node.ID]string) (transport.Transport, error) {
	var t transport.Transport
	var err error
	switch c.String(FlagTransport) {
	case "udp", "":
		t, err = transport.ListenUDP(addr, peers)
	case "tcp":
		t, err = transport.ListenTCP(addr, peers)
	default:
		return nil, Exitf(ExitUsage, "--transport must be udp or tcp, not %q", c.String(FlagTransport))
	}
	if err != nil {
		return nil, Exitf(ExitUnavailable, "%v", err)
	}
	f := transport.Faults{Drop: c.Float64(FlagFaultDrop), Dup: c.Float64(FlagFaultDup),
		Delay: c.Duration(FlagFaultDelay), Seed: c.Uint64(FlagFaultSeed)}
	if f.Drop < 0 || f.Drop > 1 || f.Dup < 0 || f.Dup > 1 || f.Delay < 0 {
		t.Close()
		return nil, Exitf(ExitUsage, "--fault-drop and --fault-dup must be within [0,1], --fault-delay ≥ 0")
	}
	if f.Latency, err = parseLatency(c.String(FlagFaultLatency)); err != nil {
		t.Close()
		return nil, Exitf(ExitUsage, "--%s: %v", FlagFaultLatency, err)
	}
	if f.Active() {
		if f.Seed == 0 {
			f.Seed = uint64(time.Now().UnixNano())
		}
		t = transport.NewFaulty(t, f)
	}
	return t, nil
}

// parseLatency parses "ID=duration,..." (--fault-latency).
func parseLatency(spec string) (map[node.ID]time.Duration, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	_, vals, err := ParseIDValues(spec, "duration")
	if err != nil {
		return nil, err
	}
	out := map[node.ID]time.Duration{}
	for id, v := range vals {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%q: not a duration ≥ 0", v)
		}
		out[id] = d
	}
	return out, nil
}

// OpenClientTransport opens an ephemeral transport of kind ("udp" or
// "tcp") for a short-lived client that talks to peers (status queries).
func OpenClientTransport(kind string, peers map[node.ID]string) (transport.Transport, error) {
	host := "127.0.0.1"
	for _, a := range peers {
		if h, _, err := net.SplitHostPort(a); err == nil && h != "127.0.0.1" && h != "localhost" {
			host = ""
		}
	}
	addr := net.JoinHostPort(host, "0")
	switch kind {
	case "tcp":
		return transport.ListenTCP(addr, peers)
	default:
		return transport.ListenUDP(addr, peers)
	}
}

// WriteReadyFile atomically writes content to path (via a temporary file
// and rename), so a waiting script never reads a partial file.
func WriteReadyFile(path, content string) error {
	if path == "" {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
