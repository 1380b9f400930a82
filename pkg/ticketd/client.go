package ticketd

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roundtable-go/roundtable/pkg/claim"
	"github.com/roundtable-go/roundtable/pkg/cli"
)

// A client of the member: its control socket, its replies.
type client = claim.Client[Reply]

func dial(socket string) (*client, error) { return claim.Dial[Reply](Tool, socket) }

// ask is the request for a ticket and how its answers read: 75 busy or
// timed out, 69 no daemon, a daemon that does not answer, or the member is
// stopping, 64 refused. While it waits, the client says what the member
// knows of the pool.
func ask(o claim.WaitOpts) claim.Ask[Reply, json.RawMessage] {
	return claim.Ask[Reply, json.RawMessage]{
		Tool: Tool, Request: Request{Op: "take", NonBlock: o.NonBlock},
		What: "a ticket", Decider: "the member",
		Fields:  func(r Reply) (string, string, string) { return r.Event, r.Reason, r.Error },
		Granted: "taken", Busy: "no ticket is free", Unavailable: "no ticket: ",
		Status: statusWithin,
		Describe: func(st json.RawMessage, err error) string {
			return describeWait(o.Socket, st, err)
		},
	}
}

// statusWithin asks the daemon at socket for its status, waiting at most
// wait for the answer.
func statusWithin(socket string, wait time.Duration) (json.RawMessage, error) {
	r, err := claim.Query[Reply](Tool, socket, Request{Op: "status"}, wait)
	switch {
	case err != nil:
		return nil, err
	case r.Event != "status":
		return nil, cli.Exitf(cli.ExitUnavailable, "the daemon at %s did not answer", socket)
	}
	return r.Status, nil
}

// describeWait says, for a waiting client, what its member knows of the
// pool: how many tickets it holds (its processes in the core) and how
// many it has lent, who else waits, which members it knows, and why a
// ticket it holds is not lent (its Member's refusal: no lease from a
// majority, no support, leaving) or that a refound is being decided.
func describeWait(socket string, raw json.RawMessage, err error) string {
	if err != nil {
		return fmt.Sprintf("the daemon at %s does not answer (stopped, or starved of CPU)", socket)
	}
	var st struct {
		Member  uint32  `json:"member"`
		Tickets uint32  `json:"tickets"`
		Members []int64 `json:"members"`
		Waiting int     `json:"waiting"`
		Slots   []struct {
			Lent      bool   `json:"lent"`
			Refused   string `json:"refused"`
			RefusedMS int64  `json:"refused_ms"`
			Machine   struct {
				State  string `json:"state"`
				Ticket uint32 `json:"ticket"`
			} `json:"machine"`
		} `json:"slots"`
		Refound struct {
			Frozen bool `json:"frozen"`
		} `json:"refound"`
	}
	if json.Unmarshal(raw, &st) != nil {
		return "the daemon's status cannot be read"
	}
	lent, holds := 0, 0
	var why []string
	for _, sl := range st.Slots {
		if sl.Lent {
			lent++
		}
		switch sl.Machine.State {
		case "coordinator", "linking", "leaving":
			holds++
			if sl.Refused != "" && !sl.Lent {
				why = append(why, fmt.Sprintf("it may not lend ticket %d (%s) for %v: %s", sl.Machine.Ticket, sl.Machine.State,
					(time.Duration(sl.RefusedMS)*time.Millisecond).Round(100*time.Millisecond), sl.Refused))
			}
		}
	}
	if st.Refound.Frozen {
		why = append(why, "a refound of the pool is being decided (no joins meanwhile)")
	}
	s := fmt.Sprintf("member %d holds %d of the pool's %d tickets and has lent %d; %d clients wait there (this one included); it knows %d other members",
		st.Member, holds, st.Tickets, lent, st.Waiting, len(st.Members))
	for _, w := range why {
		s += "; " + w
	}
	return s
}

// keep keeps a ticket: the daemon's "valid" replies extend its lease
// (and, through extend, the watchdog's deadline), a "lost" reply ends it.
func keep(grant Reply, extend func(time.Time)) claim.Keep[Reply] {
	lease := cli.NewLease(time.Unix(0, grant.UntilNS))
	return claim.Keep[Reply]{Lease: lease, Expired: "the lease ran out without renewal", Reply: func(r Reply) (string, bool) {
		if r.Event == "valid" {
			lease.Extend(time.Unix(0, r.UntilNS))
			extend(lease.Until())
		}
		return r.Reason, r.Event == "lost"
	}}
}

// Run is 'ticketd run': take a ticket, run the command with TICKETD_TICKET,
// TICKETD_TICKETS and TICKETD_EPOCH, give the ticket back when it exits.
// The command runs under a watchdog that kills it when the lease ends
// unrenewed, even if this process is stopped or killed; a lost ticket
// stops it (SIGTERM, then SIGKILL after the kill grace) and exits 76.
func Run(o claim.RunOpts) error {
	args, err := claim.Command(o.Args, o.Shell, "ticketd run -- command args...")
	if err != nil {
		return err
	}
	// The watchdog starts while the ticket is asked for: its start is
	// most of what this command costs beyond lockd run's.
	watch := cli.PrepareWatch()
	c, got, sigs, err := claim.Take(o.WaitOpts, ask(o.WaitOpts))
	if err != nil {
		watch.Cancel()
		return err
	}
	defer c.Close()
	// The wait's report counts from this process's start (cli.Started, as
	// claim's Waiter does), so this does too: a report said at one second
	// is always followed by this line, however long the start took.
	if waited := time.Since(cli.Started()); waited >= cli.FirstReport && !o.Quiet {
		// The wait said so on stderr: so does its end, so that a command
		// that hangs afterwards is not taken for a wait that never ended.
		fmt.Fprintf(os.Stderr, "%s: got ticket %d epoch %d after waiting %v\n", Tool, got.Ticket, got.Epoch, waited.Round(100*time.Millisecond))
	}
	grace := time.Duration(got.KillGraceNS)
	if o.KillGrace > 0 && o.KillGrace < grace {
		grace = o.KillGrace
	}
	if why := awaitWatch(c, watch.Guarding(), &got, grace); why != "" {
		_ = c.Send(Request{Op: "release"})
		return cli.Exitf(cli.ExitLost, "ticket %d lost before the command started (%s)", got.Ticket, why)
	}
	env := []string{"TICKETD_TICKET=" + strconv.FormatUint(uint64(got.Ticket), 10),
		"TICKETD_TICKETS=" + strconv.FormatUint(uint64(got.Tickets), 10),
		"TICKETD_EPOCH=" + strconv.FormatUint(got.Epoch, 10)}
	// The watchdog's deadline is the lease's end plus the grace: by then
	// this process has sent SIGTERM (at the lease's end) and the command
	// has had its grace; the daemon's members wait longer than that
	// before the ticket is handed out again (doc.go, "Stopping in time").
	child, err := watch.Start(args, env, time.Unix(0, got.UntilNS).Add(grace))
	if err != nil {
		_ = c.Send(Request{Op: "release"})
		if err == cli.ErrLeaseOver {
			return cli.Exitf(cli.ExitLost, "the ticket's lease ended before the command started")
		}
		return err
	}
	k := keep(got, func(u time.Time) { child.Extend(u.Add(grace)) })
	return c.Run(k, sigs, child, grace, Tool, fmt.Sprintf("ticket %d", got.Ticket), Request{Op: "release"})
}

// awaitWatch waits, when the ticket came before the watchdog was up,
// until it is (guarding closed), reading the daemon's renewals meanwhile
// (into got), so that the watchdog's start on a starved host (seconds)
// does not outlast a lease that the daemon goes on renewing. Renewals
// already read are taken first, watchdog up or not: a client that was not
// run for a while after the grant finds the daemon's later renewals
// queued behind it, and its command must start against the latest lease,
// not the first one, which may have run out meanwhile. It returns why the
// ticket was lost meanwhile, or "". A watchdog that never comes up is left
// to Start, which says why.
func awaitWatch(c *client, guarding <-chan struct{}, got *Reply, grace time.Duration) (lost string) {
	for {
		select {
		case r, ok := <-c.Replies():
			if why, done := renewal(r, ok, got); done {
				return why
			}
			continue
		default:
		}
		t := time.NewTimer(time.Until(time.Unix(0, got.UntilNS).Add(grace)))
		select {
		case <-guarding:
			t.Stop()
			return ""
		case <-t.C:
			return "" // Start finds the lease over
		case r, ok := <-c.Replies():
			t.Stop()
			if why, done := renewal(r, ok, got); done {
				return why
			}
		}
	}
}

// renewal takes one of the daemon's replies while a command starts: a
// later lease moves got's; a loss (or the daemon gone) is why it ended.
func renewal(r Reply, ok bool, got *Reply) (lost string, done bool) {
	switch {
	case !ok:
		return "the daemon went away", true
	case r.Event == "lost" && r.Reason == "":
		return "the daemon took it back", true
	case r.Event == "lost":
		return r.Reason, true
	case r.Event == "valid" && r.UntilNS > got.UntilNS:
		got.UntilNS = r.UntilNS
	}
	return "", false
}

// Hold is 'ticketd hold': take a ticket, print it, and hold it until
// standard input ends (released), a signal comes (released, 128+signal)
// or it is lost (printed, exit 76).
func Hold(o claim.WaitOpts, out *cli.Output) error {
	c, got, sigs, err := claim.Take(o, ask(o))
	if err != nil {
		return err
	}
	defer c.Close()
	Print(out, got)
	return c.Hold(keep(got, func(time.Time) {}), sigs, fmt.Sprintf("ticket %d", got.Ticket), Request{Op: "release"},
		func(why string) {
			Print(out, Reply{Event: "lost", Ticket: got.Ticket, Epoch: got.Epoch, Tickets: got.Tickets, Reason: why})
		},
		func() {
			Print(out, Reply{Event: "released", Ticket: got.Ticket, Epoch: got.Epoch, Tickets: got.Tickets})
		})
}

// Status is 'ticketd status': the pool as the local member sees it.
func Status(socket string, out *cli.Output) error {
	raw, err := statusWithin(socket, 5*time.Second)
	if err != nil {
		return err
	}
	if out.IsJSON() {
		out.JSON(raw)
		return nil
	}
	for _, l := range statusLines(raw) {
		out.Line(l)
	}
	return nil
}

// statusLines renders a status for people: the member, then one line per
// slot (its machine's state, ticket, epoch, range, neighbours, support).
// Forget asks the daemon to strike member id off the pool's books for
// good, and prints what it did: 64 if the daemon refuses the ID (its own,
// or one its book does not list), 69 if it does not answer.
func Forget(socket string, id uint32, out *cli.Output) error {
	c, err := dial(socket)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Send(Request{Op: "forget", Member: id}); err != nil {
		return cli.Exitf(cli.ExitUnavailable, "lost the daemon: %v", err)
	}
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case r, ok := <-c.Replies():
		switch {
		case !ok:
			return cli.Exitf(cli.ExitUnavailable, "the daemon did not answer")
		case r.Event == "error":
			return cli.Exitf(cli.ExitUsage, "forget %d: %s", id, r.Error)
		case r.Event != "forgotten":
			return cli.Exitf(cli.ExitUnavailable, "the daemon answered %q", r.Event)
		}
		out.Value(r.String(), struct {
			Event  string `json:"event"`
			Member uint32 `json:"member"`
			Addr   string `json:"addr"`
		}{r.Event, r.Member, r.Addr})
		return nil
	case <-t.C:
		return cli.Exitf(cli.ExitUnavailable, "the daemon did not answer within 5s")
	}
}

func statusLines(raw json.RawMessage) []string {
	var st struct {
		Member  uint32            `json:"member"`
		Addr    string            `json:"addr"`
		Tickets uint32            `json:"tickets"`
		Members []int64           `json:"members"`
		Gone    map[string]string `json:"gone"`
		Waiting int               `json:"waiting"`
		Refound struct {
			Probes   int  `json:"probes"`
			Refounds int  `json:"refounds"`
			Frozen   bool `json:"frozen"`
		} `json:"refound"`
		Slots []struct {
			Slot    int    `json:"slot"`
			ID      uint32 `json:"id"`
			Lent    bool   `json:"lent"`
			Lends   int    `json:"lends"`
			Settled bool   `json:"settled"`
			Machine struct {
				State   string   `json:"state"`
				Ticket  uint32   `json:"ticket"`
				Epoch   uint64   `json:"epoch"`
				Range   []uint32 `json:"range"`
				Succ    uint32   `json:"succ"`
				Pred    uint32   `json:"pred"`
				Preds   []struct{ ID, Ticket uint32 }
				Alive   map[string]time.Time `json:"alive_from"`
				Until   time.Time            `json:"supported_until"`
				TempEnd time.Time            `json:"temporary_until"`
			} `json:"machine"`
		} `json:"slots"`
	}
	if json.Unmarshal(raw, &st) != nil {
		return []string{string(raw)}
	}
	lines := []string{fmt.Sprintf("member %d addr %s tickets %d waiting %d", st.Member, st.Addr, st.Tickets, st.Waiting)}
	var ms []string
	for _, m := range st.Members {
		ms = append(ms, strconv.FormatInt(m, 10))
	}
	lines = append(lines, "members "+strings.Join(ms, ","))
	if len(st.Gone) > 0 {
		var gs []string
		for _, id := range slices.SortedFunc(maps.Keys(st.Gone), func(a, b string) int {
			x, _ := strconv.Atoi(a)
			y, _ := strconv.Atoi(b)
			return x - y
		}) {
			gs = append(gs, id+" "+st.Gone[id])
		}
		lines = append(lines, "gone "+strings.Join(gs, ", "))
	}
	if rf := st.Refound; rf.Probes > 0 || rf.Frozen {
		lines = append(lines, fmt.Sprintf("refound probes %d refounds %d frozen %v", rf.Probes, rf.Refounds, rf.Frozen))
	}
	now := time.Now()
	for _, sl := range st.Slots {
		m := sl.Machine
		l := fmt.Sprintf("slot %d id %d %s", sl.Slot, sl.ID, m.State)
		if m.State == "coordinator" || m.State == "linking" {
			var r []string
			for _, t := range m.Range {
				r = append(r, strconv.FormatUint(uint64(t), 10))
			}
			l += fmt.Sprintf(" ticket %d epoch %d range %s succ %d pred %d", m.Ticket, m.Epoch, strings.Join(r, ","), m.Succ, m.Pred)
			var ps []string
			for _, p := range m.Preds {
				age := "never"
				if at, ok := m.Alive[strconv.FormatUint(uint64(p.ID), 10)]; ok {
					age = now.Sub(at).Round(time.Millisecond).String()
				}
				ps = append(ps, fmt.Sprintf("%d@%d:%s", p.ID, p.Ticket, age))
			}
			l += " alive-from " + strings.Join(ps, ",")
			if !m.Until.IsZero() {
				l += " supported-for " + m.Until.Sub(now).Round(time.Millisecond).String()
			}
			if !m.TempEnd.IsZero() {
				l += " temporary-coordinator-for " + m.TempEnd.Sub(now).Round(time.Millisecond).String()
			}
			l += fmt.Sprintf(" settled %v", sl.Settled)
		}
		l += fmt.Sprintf(" lent %v lends %d", sl.Lent, sl.Lends)
		lines = append(lines, l)
	}
	return lines
}

// watching is the daemon's acknowledgement of a watcher (never printed).
const watching = "watching"

// Watch prints the pool's PrCast notices as this member hears them (its
// own included), one per line, until a signal (exit 0) or the daemon goes
// away (69). Notices come with high probability and in no set order.
// readyFile, when set, is written (with the socket's path) once the
// daemon has registered the watcher: nothing after that is missed.
func Watch(socket, readyFile string, out *cli.Output) error {
	sigs, stop := cli.NotifySignals()
	defer stop()
	cn, err := cli.DialControl(Tool, socket)
	if err != nil {
		return err
	}
	defer cn.Close()
	if err := cn.Send(Request{Op: "watch"}); err != nil {
		return cli.Exitf(cli.ExitUnavailable, "lost the daemon: %v", err)
	}
	notices := cli.Lines[Notice](cn, 64)
	for {
		select {
		case n, ok := <-notices:
			if !ok {
				return cli.Exitf(cli.ExitUnavailable, "the daemon went away")
			}
			if n.Event == watching {
				if readyFile != "" {
					if err := cli.WriteReadyFile(readyFile, socket); err != nil {
						return cli.Exitf(cli.ExitUsage, "--ready-file: %v", err)
					}
				}
				continue
			}
			out.Value(n.String(), n)
		case <-sigs:
			return nil
		}
	}
}
