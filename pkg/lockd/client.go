package lockd

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/roundtable-go/roundtable/pkg/claim"
	"github.com/roundtable-go/roundtable/pkg/cli"
)

// client is one connection to the daemon.
type client struct {
	*claim.Client[Reply]
	replies <-chan Reply
}

// dial connects to the daemon at socket; exit 69 when nobody serves it.
func dial(socket string) (*client, error) {
	c, err := claim.Dial[Reply](Tool, socket)
	if err != nil {
		return nil, err
	}
	return &client{c, c.Replies()}, nil
}

func (c *client) send(r Request) error { return c.Send(r) }
func (c *client) close()               { c.Close() }

// ask is the request for name and how its answers read: 75 busy or timed
// out, 69 no daemon, a daemon that does not answer, or no quorum, 64
// refused. While it waits, the client says who holds the lock.
func ask(o claim.WaitOpts, name string) claim.Ask[Reply, *memberStatus] {
	seen := &sightings{}
	return claim.Ask[Reply, *memberStatus]{
		Tool: Tool, Request: Request{Op: "acquire", Name: name, NonBlock: o.NonBlock},
		What: name, Prefix: name + ": ", Decider: "the lock service",
		Fields:  func(r Reply) (string, string, string) { return r.Event, r.Reason, r.Error },
		Granted: "acquired", Busy: name + " is held by another process",
		Unavailable: name + ": the lock service cannot decide now: ",
		Status:      statusWithin,
		Describe: func(st *memberStatus, err error) string {
			return seen.describe(o.Socket, name, probe{st, err, time.Now()})
		},
		NoQuorum: func(st *memberStatus) bool { return st.Quorum != nil && !*st.Quorum },
	}
}

// probe is a status question's answer.
type probe struct {
	st  *memberStatus
	err error
	at  time.Time // when the question was asked
}

// sightings remembers when a waiting client first saw each holder of its
// lock, so that it can say since when (at least) the holder has held it.
type sightings struct {
	key   string
	since time.Time
}

// describe says, for a waiting client, what the daemon knows of name:
// its holder, since when it was seen holding it, who else waits, and
// whether the service has a quorum.
func (s *sightings) describe(socket, name string, p probe) string {
	if p.err != nil {
		return fmt.Sprintf("the daemon at %s does not answer (stopped, or starved of CPU)", socket)
	}
	st := p.st
	var parts []string
	held := false
	for _, l := range st.Locks {
		if l.Name != name || l.Holder == 0 {
			continue
		}
		held = true
		key := fmt.Sprintf("%d/%d/%d", l.Holder, l.Client, l.Token)
		if key != s.key {
			s.key, s.since = key, time.Now()
		}
		h := fmt.Sprintf("held by member %d (client %d, token %d) since %s or earlier", l.Holder, l.Client, l.Token, s.since.Format("15:04:05"))
		if len(l.Queue) > 0 {
			h += fmt.Sprintf(", %d waiting", len(l.Queue))
		}
		parts = append(parts, h)
	}
	if !held {
		s.key = ""
		parts = append(parts, "not held as far as member "+strconv.FormatUint(uint64(st.ID), 10)+" knows")
	}
	switch {
	case st.Quorum != nil && !*st.Quorum:
		parts = append(parts, "no quorum (no coordinator with a majority, or too few members alive)")
	case st.Quorum != nil:
		parts = append(parts, "quorum yes")
	}
	if st.Algo == "central" {
		if st.Coordinator == 0 {
			parts = append(parts, "no coordinator")
		} else {
			parts = append(parts, fmt.Sprintf("coordinator %d term %d", st.Coordinator, st.Term))
		}
	}
	return strings.Join(parts, "; ")
}

// keep keeps a granted lock: the daemon's "valid" replies extend its
// lease (and, through extend, the watchdog's deadline), a "lost" reply
// for it ends it.
func keep(name string, lease *Lease, extend func(time.Time)) claim.Keep[Reply] {
	return claim.Keep[Reply]{Lease: lease, Expired: "lease ran out without renewal", Reply: func(r Reply) (string, bool) {
		if r.Event == "valid" && (r.Name == "" || r.Name == name) {
			lease.Extend(r)
			extend(lease.Until())
		}
		return r.Reason, r.Event == "lost" && r.Name == name
	}}
}

// Run is 'lockd run': acquire the lock, run the command with LOCKD_NAME
// and LOCKD_TOKEN while holding it, release it when the command exits.
// The result carries the exit code: the command's own, 75 busy or timed
// out, 76 lost (the command is stopped: SIGTERM, then SIGKILL after
// KillGrace), 69 no daemon or no quorum.
//
// The command runs under a watchdog (cli.PrepareWatch), as ticketd run's
// does, whose deadline is the lease's end plus the kill grace, moved by
// every renewal: by then this process, if it runs, has sent SIGTERM (at
// the lease's end) and the command has had its grace. So a command
// outlives neither a `lockd run` stopped past its lease nor one that is
// killed: the watchdog reads the end of its input then, and ends the
// command's whole group, background jobs included (SIGTERM, then SIGKILL
// within the kill grace, never past the deadline). The daemon releases
// the lock of a client that is gone at once, not at that deadline: what
// the command left may still be ending for up to the kill grace while the
// next holder runs, and the fencing token (LOCKD_TOKEN), which only grows,
// is what orders their writes (docs/lockd.md).
func Run(o claim.RunOpts) error {
	name, err := CheckName(o.Args)
	if err != nil {
		return err
	}
	args, err := claim.Command(o.Args[1:], o.Shell, "lockd run NAME -- command args...")
	if err != nil {
		return err
	}
	// The watchdog starts while the lock is asked for, so that its start
	// overlaps the round trip.
	watch := cli.PrepareWatch()
	c, got, sigs, err := claim.Take(o.WaitOpts, ask(o.WaitOpts, name))
	if err != nil {
		watch.Cancel()
		return err
	}
	defer c.Close()
	release := Request{Op: "release", Name: name}
	lease := NewLease(got)
	grace := max(o.KillGrace, 0)
	env := []string{"LOCKD_NAME=" + name, "LOCKD_TOKEN=" + strconv.FormatUint(got.Token, 10)}
	// The command does not wait for the watchdog to be up (StartEarly):
	// the daemon hands a dead client's lock on at once and the token
	// orders the holders, so the watchdog ends what a dead or stopped
	// wrapper leaves, and no other holder waits for its deadline. Its
	// start, a second process's, then overlaps the command's.
	child, err := watch.StartEarly(args, env, lease.Until().Add(grace))
	if err != nil {
		_ = c.Send(release)
		if err == cli.ErrLeaseOver {
			return cli.Exitf(cli.ExitLost, "the lease of lock %s ended before the command started", name)
		}
		return err
	}
	child.SetKillGrace(o.KillGrace)
	k := keep(name, lease, func(u time.Time) { child.Extend(u.Add(grace)) })
	return c.Run(k, sigs, child, o.KillGrace, Tool, "lock "+name, release)
}

// Hold is 'lockd hold': acquire name, print the grant, and hold the lock
// until standard input ends (released, nil), a signal comes (released,
// 128+signal) or the lock is lost (printed, exit 76).
func Hold(o claim.WaitOpts, name string, out *cli.Output) error {
	c, got, sigs, err := claim.Take(o, ask(o, name))
	if err != nil {
		return err
	}
	defer c.Close()
	Print(out, got)
	return c.Hold(keep(name, NewLease(got), func(time.Time) {}), sigs, "lock "+name, Request{Op: "release", Name: name},
		func(why string) { Print(out, Reply{Event: "lost", Name: name, Token: got.Token, Reason: why}) },
		func() { Print(out, Reply{Event: "released", Name: name, Token: got.Token}) })
}
