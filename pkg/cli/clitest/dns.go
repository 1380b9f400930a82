package clitest

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// DNS is a DNS server on loopback whose records a test sets and changes
// as it runs (TTL 0, so nothing is cached): point --dns-server at Addr.
type DNS struct {
	Addr string
	mu   sync.Mutex
	rrs  map[string][]dns.RR // lower-case FQDN → its records
}

// SRV is one SRV record's target and port.
type SRV struct {
	Target string
	Port   uint16
}

// StartDNS starts a DNS server on a free loopback UDP port, stopped when
// the test ends.
func StartDNS(t testing.TB) *DNS {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &DNS{Addr: pc.LocalAddr().String(), rrs: map[string][]dns.RR{}}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: d, NotifyStartedFunc: func() { close(started) }}
	go srv.ActivateAndServe()
	<-started
	t.Cleanup(func() { srv.Shutdown() })
	return d
}

// SetIP makes addrs the A and AAAA records of name (none: the name is
// gone).
func (d *DNS) SetIP(name string, addrs ...string) {
	name = dns.CanonicalName(name)
	var rrs []dns.RR
	for _, s := range addrs {
		a := netip.MustParseAddr(s)
		if a.Is4() {
			rrs = append(rrs, &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET}, A: a.AsSlice()})
		} else {
			rrs = append(rrs, &dns.AAAA{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET}, AAAA: a.AsSlice()})
		}
	}
	d.set(name, rrs)
}

// SetSRV makes srvs the SRV records of name (none: the name is gone).
func (d *DNS) SetSRV(name string, srvs ...SRV) {
	name = dns.CanonicalName(name)
	var rrs []dns.RR
	for _, s := range srvs {
		rrs = append(rrs, &dns.SRV{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeSRV, Class: dns.ClassINET},
			Priority: 10, Weight: 10, Port: s.Port, Target: dns.CanonicalName(s.Target)})
	}
	d.set(name, rrs)
}

func (d *DNS) set(name string, rrs []dns.RR) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(rrs) == 0 {
		delete(d.rrs, name)
		return
	}
	d.rrs[name] = rrs
}

// ServeDNS answers from the records set: the records of the asked type,
// NXDOMAIN for a name without any.
func (d *DNS) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	if len(r.Question) == 1 {
		q := r.Question[0]
		d.mu.Lock()
		rrs, ok := d.rrs[strings.ToLower(q.Name)]
		d.mu.Unlock()
		if !ok {
			m.Rcode = dns.RcodeNameError
		}
		for _, rr := range rrs {
			if rr.Header().Rrtype == q.Qtype {
				m.Answer = append(m.Answer, dns.Copy(rr))
			}
		}
	}
	w.WriteMsg(m)
}

// SharedPort returns a UDP port that is free on each of 127.0.0.1 to
// 127.0.0.n at the same time, for n members on those addresses that find
// each other through the A records of one name (the records carry no
// port, so every member listens on the same one). It fails the test when
// 20 tries find none.
func SharedPort(t testing.TB, n int) int {
	t.Helper()
	for try := 0; try < 20; try++ {
		var held []net.PacketConn
		p := 0
		for i := 1; i <= n; i++ {
			c, err := net.ListenPacket("udp", net.JoinHostPort(fmt.Sprintf("127.0.0.%d", i), strconv.Itoa(p)))
			if err != nil {
				break
			}
			held = append(held, c)
			p = c.LocalAddr().(*net.UDPAddr).Port
		}
		for _, c := range held {
			c.Close()
		}
		if len(held) == n {
			return p
		}
	}
	t.Fatalf("no UDP port free on all of 127.0.0.1 to 127.0.0.%d", n)
	return 0
}
