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
// lease, a "lost" reply for it ends it.
func keep(name string, grant Reply) claim.Keep[Reply] {
	lease := NewLease(grant)
	return claim.Keep[Reply]{Lease: lease, Expired: "lease ran out without renewal", Reply: func(r Reply) (string, bool) {
		if r.Event == "valid" && (r.Name == "" || r.Name == name) {
			lease.Extend(r)
		}
		return r.Reason, r.Event == "lost" && r.Name == name
	}}
}

// Run is 'lockd run': acquire the lock, run the command with LOCKD_NAME
// and LOCKD_TOKEN while holding it, release it when the command exits.
// The result carries the exit code: the command's own, 75 busy or timed
// out, 76 lost (the command is stopped: SIGTERM, then SIGKILL after
// KillGrace), 69 no daemon or no quorum.
func Run(o claim.RunOpts) error {
	name, err := CheckName(o.Args)
	if err != nil {
		return err
	}
	args, err := claim.Command(o.Args[1:], o.Shell, "lockd run NAME -- command args...")
	if err != nil {
		return err
	}
	c, got, sigs, err := claim.Take(o.WaitOpts, ask(o.WaitOpts, name))
	if err != nil {
		return err
	}
	defer c.Close()
	child, err := cli.StartChild(args, []string{"LOCKD_NAME=" + name, "LOCKD_TOKEN=" + strconv.FormatUint(got.Token, 10)})
	if err != nil {
		return err
	}
	child.SetKillGrace(o.KillGrace)
	return c.Run(keep(name, got), sigs, child, o.KillGrace, Tool, "lock "+name, Request{Op: "release", Name: name})
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
	return c.Hold(keep(name, got), sigs, "lock "+name, Request{Op: "release", Name: name},
		func(why string) { Print(out, Reply{Event: "lost", Name: name, Token: got.Token, Reason: why}) },
		func() { Print(out, Reply{Event: "released", Name: name, Token: got.Token}) })
}
