package cli

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/transport"
)

// Flags for peers found by name.
const (
	// FlagResolveEvery is how often a member looks --peers dns:/srv: up again.
	FlagResolveEvery = "resolve-every"
	// FlagAdvertise is the address this member is known by.
	FlagAdvertise = "advertise"
	// FlagDNSServer (hidden, for tests) sends every DNS query to one server.
	FlagDNSServer = "dns-server"
)

// DefaultResolveEvery is --resolve-every's default.
const DefaultResolveEvery = 30 * time.Second

// resolveTimeout bounds one look-up of the whole peer set.
const resolveTimeout = 5 * time.Second

// PeerNames finds a cluster's members in DNS (--peers dns:NAME:PORT or
// --peers srv:NAME). The member IDs follow from the records alone, so that
// every member derives the same IDs and an added record never renumbers
// the others:
//
//   - dns:NAME:PORT — every A and AAAA record of NAME is a member at PORT;
//     its ID is the address's last byte (IPv4: 10.0.0.7 → 7) or last two
//     bytes (IPv6: fd00::1:102 → 0x102 = 258). Two addresses giving one ID, or an ID
//     of 0, is an error.
//   - srv:NAME — every SRV record of NAME (e.g. _elect._udp.example.com)
//     is a member at its target's address and its port; the ID is the
//     decimal number that ends the target's first label (elect-3.example.com
//     → 3, 3.elect.example.com → 3). A target without one, two targets with
//     one ID, or an ID of 0 is an error.
type PeerNames struct {
	Spec string // as given to --peers
	srv  bool
	name string
	port uint16
	r    *net.Resolver
}

// ParsePeerNames parses a --peers value that names peers in DNS; ok is
// false for any other value (a static list). server, when not empty, is
// the one DNS server (host:port) every query goes to, instead of the
// system's resolver.
func ParsePeerNames(spec, server string) (p *PeerNames, ok bool, err error) {
	switch {
	case strings.HasPrefix(spec, "dns:"):
		rest := spec[len("dns:"):]
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 {
			return nil, true, fmt.Errorf("--peers %q: want dns:NAME:PORT", spec)
		}
		port, err := strconv.Atoi(rest[i+1:])
		if err != nil || port < 1 || port > 65535 {
			return nil, true, fmt.Errorf("--peers %q: the port must be a number from 1 to 65535", spec)
		}
		p = &PeerNames{Spec: spec, name: rest[:i], port: uint16(port)}
	case strings.HasPrefix(spec, "srv:"):
		p = &PeerNames{Spec: spec, srv: true, name: spec[len("srv:"):]}
		if p.name == "" || strings.Contains(p.name, ":") {
			return nil, true, fmt.Errorf("--peers %q: want srv:NAME, e.g. srv:_elect._udp.example.com", spec)
		}
	default:
		return nil, false, nil
	}
	p.r = net.DefaultResolver
	if server != "" {
		if err := checkAddr(server, false); err != nil {
			return nil, true, fmt.Errorf("--%s: %v", FlagDNSServer, err)
		}
		p.r = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		}}
	}
	return p, true, nil
}

// PeerSetError is a resolved set that breaks the ID rule: the records are
// wrong, not the network (exit 64 at start).
type PeerSetError struct{ msg string }

func (e *PeerSetError) Error() string { return e.msg }

// Resolve looks the members up: each ID's host:port. A failed look-up is
// an error of the network; records that break the ID rule give a
// *PeerSetError.
func (p *PeerNames) Resolve(ctx context.Context) (map[node.ID]string, error) {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	peers := map[node.ID]string{}
	bad := func(format string, a ...any) error {
		return &PeerSetError{fmt.Sprintf("--peers %s: ", p.Spec) + fmt.Sprintf(format, a...)}
	}
	add := func(id node.ID, addr, from string) error {
		if id == 0 {
			return bad("%s gives member ID 0", from)
		}
		if old, dup := peers[id]; dup {
			return bad("%s and %s both give member ID %d", old, from, id)
		}
		peers[id] = addr
		return nil
	}
	if !p.srv {
		addrs, err := p.r.LookupNetIP(ctx, "ip", p.name)
		if err != nil {
			return nil, fmt.Errorf("--peers %s: %w", p.Spec, err)
		}
		slices.SortFunc(addrs, netip.Addr.Compare)
		addrs = slices.Compact(addrs)
		for _, a := range addrs {
			a = a.Unmap()
			if err := add(AddrID(a), netip.AddrPortFrom(a, p.port).String(), a.String()); err != nil {
				return nil, err
			}
		}
	} else {
		_, srvs, err := p.r.LookupSRV(ctx, "", "", p.name)
		if err != nil {
			return nil, fmt.Errorf("--peers %s: %w", p.Spec, err)
		}
		for _, s := range srvs {
			id, ok := TargetID(s.Target)
			if !ok {
				return nil, bad("SRV target %s: its first label does not end in a member ID", s.Target)
			}
			addrs, err := p.r.LookupNetIP(ctx, "ip", s.Target)
			if err != nil {
				return nil, fmt.Errorf("--peers %s: target %s: %w", p.Spec, s.Target, err)
			}
			// The lowest address, so that every member picks the same
			// one of a target with several.
			a := slices.MinFunc(addrs, netip.Addr.Compare).Unmap()
			if err := add(id, netip.AddrPortFrom(a, s.Port).String(), s.Target); err != nil {
				return nil, err
			}
		}
	}
	if len(peers) == 0 {
		return nil, fmt.Errorf("--peers %s: no members", p.Spec)
	}
	return peers, nil
}

// AddrID is the member ID a dns: peer set gives an address: the last byte
// of an IPv4 address, the last two bytes of an IPv6 one.
func AddrID(a netip.Addr) node.ID {
	a = a.Unmap()
	b := a.AsSlice()
	if a.Is4() {
		return node.ID(b[3])
	}
	return node.ID(b[14])<<8 | node.ID(b[15])
}

// TargetID is the member ID an SRV target names: the decimal number that
// ends its first label.
func TargetID(target string) (node.ID, bool) {
	label, _, _ := strings.Cut(target, ".")
	i := len(label)
	for i > 0 && label[i-1] >= '0' && label[i-1] <= '9' {
		i--
	}
	if i == len(label) || len(label)-i > 9 {
		return 0, false
	}
	n, _ := strconv.ParseUint(label[i:], 10, 32)
	return node.ID(n), true
}

// follow looks the peers up again every period until ctx ends, and brings
// the running member along: a member whose record moved is sent to at its
// new address; a member whose record is gone has left: logged (a WARN)
// and cut off, no frame going to it or taken from it, until its record
// returns; a record for an ID that is not a member is logged and ignored:
// a fixed membership changes only by restarting every member with the
// new set.
func (m *Member) follow(ctx context.Context, period time.Duration) {
	known := map[node.ID]string{}
	for id, a := range m.Peers {
		known[id] = a
	}
	gone := map[node.ID]bool{}
	g, _ := m.Net.(*gate)
	strangers := map[node.ID]bool{}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now, err := m.Names.Resolve(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			m.Log.Warn("peers not looked up again; keeping the last addresses", "err", err)
			continue
		}
		for _, id := range IDs(known) {
			addr, ok := now[id]
			switch {
			case !ok && !gone[id]:
				gone[id] = true
				m.Log.Warn("member's record is gone: it has left", "member", id, "addr", known[id])
				if g != nil && id != m.ID {
					g.set(id, false)
				}
			case ok && gone[id]:
				delete(gone, id)
				m.Log.Info("member's record is back", "member", id, "addr", addr)
				if g != nil {
					g.set(id, true)
				}
			}
			if !ok || addr == known[id] {
				continue
			}
			if id == m.ID {
				m.Log.Warn("this member's own record moved; it keeps listening where it is", "addr", addr)
				known[id] = addr
				continue
			}
			ap, err := netip.ParseAddrPort(addr)
			var under transport.Transport = m.Net
			if g != nil {
				under = g.Transport
			}
			d, dynamic := under.(transport.Mover)
			if err != nil || !dynamic {
				m.Log.Warn("member's record moved but this transport cannot follow it", "member", id, "from", known[id], "to", addr)
			} else {
				d.SetPeer(id, ap)
				m.Log.Info("member moved", "member", id, "from", known[id], "to", addr)
			}
			known[id] = addr
		}
		for _, id := range IDs(now) {
			if _, member := known[id]; !member && !strangers[id] {
				strangers[id] = true
				m.Log.Warn("record for an ID that is not a member: ignored until every member restarts with it", "id", id, "addr", now[id])
			}
		}
	}
}
