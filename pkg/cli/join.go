package cli

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// JoinAddrs turns a --join value into the addresses a new member asks:
// comma-separated host:port addresses, and the name forms --peers takes
// (dns:NAME:PORT, every A and AAAA record of NAME at PORT; srv:NAME, every
// SRV record's target at its port), looked up once, here, in the order
// given (a name's addresses in ascending order). A joiner needs addresses
// only, so the member-ID rules of --peers dns:/srv: do not apply. self (this
// member's own address, --bind) is left out. server, when not empty, is the
// one DNS server every query goes to (the hidden --dns-server). An empty
// value gives none: found a pool. A malformed value is a usage error (exit
// 64); a name that gives no address other than self is exit 69.
func JoinAddrs(value, self, server string) ([]string, error) {
	var out []string
	for _, item := range strings.Split(value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		p, named, err := ParsePeerNames(item, server)
		if err != nil {
			return nil, Exitf(ExitUsage, "--join: %v", strings.TrimPrefix(err.Error(), "--peers "))
		}
		if !named {
			out = append(out, item)
			continue
		}
		addrs, err := p.addrs(context.Background())
		if err != nil {
			return nil, Exitf(ExitUnavailable, "--join %s: %v", item, err)
		}
		n := 0
		for _, a := range addrs {
			if a != self && !slices.Contains(out, a) {
				out = append(out, a)
				n++
			}
		}
		if n == 0 {
			return nil, Exitf(ExitUnavailable, "--join %s: no address but this member's own (%s)", item, self)
		}
	}
	return out, nil
}

// addrs looks the name up for a joiner: every address it gives, sorted,
// without the ID rules of Resolve.
func (p *PeerNames) addrs(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	var aps []netip.AddrPort
	if !p.srv {
		ips, err := p.r.LookupNetIP(ctx, "ip", p.name)
		if err != nil {
			return nil, err
		}
		for _, a := range ips {
			aps = append(aps, netip.AddrPortFrom(a.Unmap(), p.port))
		}
	} else {
		_, srvs, err := p.r.LookupSRV(ctx, "", "", p.name)
		if err != nil {
			return nil, err
		}
		for _, s := range srvs {
			ips, err := p.r.LookupNetIP(ctx, "ip", s.Target)
			if err != nil {
				continue // another target may answer
			}
			for _, a := range ips {
				aps = append(aps, netip.AddrPortFrom(a.Unmap(), s.Port))
			}
		}
	}
	if len(aps) == 0 {
		return nil, fmt.Errorf("no addresses")
	}
	slices.SortFunc(aps, netip.AddrPort.Compare)
	aps = slices.Compact(aps)
	out := make([]string, len(aps))
	for i, a := range aps {
		out[i] = a.String()
	}
	return out, nil
}
