package mutex

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/fd"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// Decentralised voting (Tanenbaum ch. 6, "Decentralized Mutual Exclusion", Lin et
// al.): every daemon is a replica coordinator of every name, and a
// requester needs the votes of m > n/2 of them. A coordinator answers every
// request at once: its vote if it is free, a denial otherwise. A requester
// denied by any coordinator it asked gives back the votes it got and tries
// again after a random backoff. A quiet entry
// costs m requests, m votes and m releases (the seed's 3mk for k attempts)
// and 2m message times: the requester asks the m lowest live coordinators
// one after another, in ID order. Asking in one global order means two
// requesters never hold each other's votes: whoever has the first
// coordinator's vote is never denied further on by a rival, so contention
// cannot livelock the way parallel requests can.
//
// The seed lets a restarted coordinator forget its votes, and accepts the
// small chance that 2m − n of them do so while a lock is held. Here that
// chance is removed, in the way central's takeover works: votes are leases
// (a coordinator counts a vote for one lease from the last renewal; the
// holder counts 0.9 lease from when it asked, and renews every lease/3),
// and a restarted coordinator votes for nobody during its first lease, when
// every vote it may have forgotten has run out.
//
// Fencing tokens. Each vote carries a stamp from the coordinator's
// counter, and the holder's token is the largest of its m stamps. Before
// entering, the holder confirms that token with its m coordinators, which
// raise their counters to it (2m more messages): any later quorum shares a
// coordinator with this one, so every later token is larger. Counters are
// persisted (Config.Term, Clock) so that holds across restarts too.
//
// Fairness. The seed lets a requester that is denied retry after a random
// backoff, and accepts that it may starve. Here it cannot, because a free
// vote goes to the requester that has waited longest: every request
// carries its age (how long its client has been waiting, on the
// requester's clock, in Seq), a coordinator remembers the requesters it
// denied for Lease/2, and grants a free vote only to a requester at least
// as old as every one it remembers (ties to the lower ID); when a vote is
// given back it tells the oldest one (MsgVFree), which retries at once
// instead of waiting out its backoff. Without that, a daemon whose own
// coordinator is the first asked hands the vote from one of its clients to
// the next in the same instant, and remote requesters in backoff never see
// it free (two such clients took 81 of 83 entries; TestVotingFairness). A
// requester denied for an older one gives
// its votes back as before, so the oldest always gathers its quorum: the
// order stays global and nobody livelocks. Non-blocking requests are
// not remembered.
//
// Fault model: crash and restart (votes forgotten), loss, duplication,
// reordering, partitions (a minority side never gathers m votes), paused
// daemons, clock rates within 10%.

type voteRec struct {
	node    node.ID
	attempt uint64
	expires time.Time
}

// denied is a requester a coordinator denied: it is owed the vote before
// any younger requester.
type denied struct {
	age time.Duration // how long its client had waited when it asked
	at  time.Time     // when it asked (this coordinator's clock)
}

func (w denied) ageAt(now time.Time) time.Duration { return w.age + now.Sub(w.at) }

type voteWant struct {
	client   uint64
	since    time.Time // when the client asked this daemon
	nonBlock bool
	attempt  uint64
	tries    int
	phase    int // 0 waiting to ask, 1 asking, 2 confirming, 3 held
	asked    []node.ID
	stamps   map[node.ID]uint64
	acks     map[node.ID]bool
	token    uint64
	sent     time.Time // when the confirmation (or renewal) in progress went out
	valid    time.Time
	next     time.Time // resend, renewal, or the end of the backoff
}

const (
	voteIdle = iota
	voteAsking
	voteConfirming
	voteHeld
)

type voting struct {
	cfg     Config
	ids     []node.ID
	m       int
	alive   *fd.Timeout
	high    uint64 // highest stamp or token this coordinator knows
	votes   map[string]*voteRec
	waiters map[string]map[node.ID]denied // denied requesters, per name
	wants   map[string][]*voteWant
	seq     uint64
	quiet   time.Time // no votes before then (restart: forgotten votes run out)
	start   bool
	started time.Time
	beat    time.Time
	now     time.Time
	local   []node.Envelope[Msg]
	out     []node.Envelope[Msg]
	events  []node.Event
}

func newVoting(cfg Config) (*voting, error) {
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultConfig().Lease
	}
	if !slices.Contains(cfg.Peers, cfg.ID) || cfg.ID == node.None {
		return nil, fmt.Errorf("mutex: own id %d is not in the peer list", cfg.ID)
	}
	if cfg.Rand == nil {
		return nil, fmt.Errorf("mutex: voting needs Config.Rand for its backoff")
	}
	ids := slices.Clone(cfg.Peers)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	m := cfg.Quorum
	if m == 0 {
		m = len(ids)/2 + 1
	}
	if m <= len(ids)/2 || m > len(ids) {
		return nil, fmt.Errorf("mutex: voting needs n/2 < m ≤ n votes, got m = %d for n = %d", m, len(ids))
	}
	return &voting{cfg: cfg, ids: ids, m: m, alive: fd.NewTimeout(2 * cfg.Lease), high: cfg.Term,
		votes: map[string]*voteRec{}, waiters: map[string]map[node.ID]denied{}, wants: map[string][]*voteWant{}, seq: firstAttempt(cfg)}, nil
}

func (v *voting) begin(now time.Time) {
	v.now = now
	if !v.start {
		v.start, v.quiet, v.beat, v.started = true, now.Add(v.cfg.Lease), now, now
		if v.cfg.forgetVotes {
			v.quiet = now
		}
	}
}

func (v *voting) send(to node.ID, msg Msg) {
	e := node.Envelope[Msg]{From: v.cfg.ID, To: to, Msg: msg}
	if to == v.cfg.ID {
		v.local = append(v.local, e) // this daemon's own coordinator
		return
	}
	v.out = append(v.out, e)
}

// drain delivers messages to this daemon's own coordinator, in order.
func (v *voting) drain(now time.Time) {
	for len(v.local) > 0 {
		e := v.local[0]
		v.local = v.local[1:]
		v.handle(now, e.From, e.Msg)
	}
}

func (v *voting) live(id node.ID, now time.Time) bool {
	return id == v.cfg.ID || !v.alive.Suspected(id, now)
}

// Step implements node.Machine.
func (v *voting) Step(now time.Time, in node.Envelope[Msg]) error {
	v.begin(now)
	defer v.drain(now)
	if in.From == v.cfg.ID {
		return v.request(now, in.Msg)
	}
	if !slices.Contains(v.ids, in.From) {
		return fmt.Errorf("mutex: message from %d, not a peer", in.From)
	}
	v.alive.Heard(in.From, now)
	if (in.Msg.Type < MsgVRequest || in.Msg.Type > MsgVAlive) && in.Msg.Type != MsgVFree {
		return fmt.Errorf("mutex: %v is not a voting message", in.Msg.Type)
	}
	v.handle(now, in.From, in.Msg)
	return nil
}

func (v *voting) handle(now time.Time, from node.ID, msg Msg) {
	v.high = max(v.high, msg.Token)
	switch msg.Type {
	case MsgVRequest:
		vote := v.votes[msg.Name]
		mine := vote != nil && vote.node == from && vote.attempt == msg.Attempt
		free := vote == nil || !now.Before(vote.expires)
		if v.cfg.voteEarlyExpiry && vote != nil {
			free = !now.Before(vote.expires.Add(-v.cfg.Lease * 3 / 4))
		}
		age := time.Duration(min(msg.Seq, maxAge)) * time.Microsecond
		if now.Before(v.quiet) || !mine && (!free || v.owed(now, msg.Name, from, age)) {
			if !msg.NonBlock {
				ws := v.waiters[msg.Name]
				if ws == nil {
					ws = map[node.ID]denied{}
					v.waiters[msg.Name] = ws
				}
				ws[from] = denied{age: age, at: now}
			}
			v.send(from, Msg{Type: MsgVDeny, Name: msg.Name, Attempt: msg.Attempt, Token: v.high})
			return
		}
		if ws := v.waiters[msg.Name]; ws != nil {
			delete(ws, from)
			if len(ws) == 0 {
				delete(v.waiters, msg.Name)
			}
		}
		if !mine {
			v.votes[msg.Name] = &voteRec{node: from, attempt: msg.Attempt}
		}
		v.votes[msg.Name].expires = now.Add(v.cfg.Lease)
		v.high++
		v.send(from, Msg{Type: MsgVGrant, Name: msg.Name, Attempt: msg.Attempt, Token: v.high})
	case MsgVConfirm:
		vote := v.votes[msg.Name]
		if vote == nil || vote.node != from || vote.attempt != msg.Attempt || !now.Before(vote.expires) {
			v.send(from, Msg{Type: MsgVDeny, Name: msg.Name, Attempt: msg.Attempt, Token: v.high})
			return
		}
		vote.expires = now.Add(v.cfg.Lease)
		v.send(from, Msg{Type: MsgVAck, Name: msg.Name, Attempt: msg.Attempt, Token: msg.Token, Seq: msg.Seq})
	case MsgVRelease:
		if msg.Seq == withdraw {
			delete(v.waiters[msg.Name], from)
		}
		if vote := v.votes[msg.Name]; vote != nil && vote.node == from && vote.attempt == msg.Attempt {
			delete(v.votes, msg.Name)
			v.nudge(now, msg.Name)
		}
	case MsgVFree:
		// Our coordinator's vote is free and owed to us: retry now.
		if w := v.head(msg.Name); w != nil && w.phase == voteIdle {
			w.next = now
			v.ask(now, msg.Name, w)
		}
	case MsgVGrant, MsgVDeny, MsgVAck:
		v.answer(now, from, msg)
	case MsgVAlive:
	}
}

// maxAge bounds a request's age on the wire (µs): one hour.
const maxAge = uint64(time.Hour / time.Microsecond)

// withdraw in a release's Seq: the requester stopped waiting for Name.
const withdraw = 1

// owed reports whether a requester other than from, remembered within the
// last Lease/2, has waited longer than from (age): the vote is owed to it.
func (v *voting) owed(now time.Time, name string, from node.ID, age time.Duration) bool {
	for id, w := range v.waiters[name] {
		if now.Sub(w.at) >= v.cfg.Lease/2 {
			delete(v.waiters[name], id)
			continue
		}
		if id == from {
			continue
		}
		if a := w.ageAt(now); a > age || a == age && id < from {
			return true
		}
	}
	return false
}

// nudge tells the longest-waiting requester remembered for name that the
// vote is free, so that the vote does not sit idle for a backoff.
func (v *voting) nudge(now time.Time, name string) {
	var best node.ID
	var bestAge time.Duration
	for id, w := range v.waiters[name] {
		if now.Sub(w.at) >= v.cfg.Lease/2 {
			continue
		}
		if a := w.ageAt(now); best == node.None || a > bestAge || a == bestAge && id < best {
			best, bestAge = id, a
		}
	}
	if best != node.None {
		v.send(best, Msg{Type: MsgVFree, Name: name})
	}
}

// answer handles a coordinator's reply to this daemon's request.
func (v *voting) answer(now time.Time, from node.ID, msg Msg) {
	w := v.head(msg.Name)
	if w == nil || w.attempt != msg.Attempt || !slices.Contains(w.asked, from) {
		if msg.Type == MsgVGrant {
			// A vote for an attempt given up: give it back.
			v.send(from, Msg{Type: MsgVRelease, Name: msg.Name, Attempt: msg.Attempt})
		}
		return
	}
	switch {
	case msg.Type == MsgVDeny && w.phase == voteHeld:
		v.lose(now, msg.Name, w, "a coordinator no longer holds this daemon's vote")
	case msg.Type == MsgVDeny:
		v.giveUp(now, msg.Name, w)
	case msg.Type == MsgVGrant && w.phase == voteAsking:
		w.stamps[from] = msg.Token
		if len(w.stamps) < v.m {
			v.sendRequest(now, w.asked[len(w.stamps)], msg.Name, w)
			w.next = now.Add(v.cfg.Lease / 4)
		}
		if len(w.stamps) == v.m {
			// Every vote is in: the token is the largest stamp; confirm it
			// with the quorum before entering.
			for _, s := range w.stamps {
				w.token = max(w.token, s)
			}
			w.phase = voteConfirming
			v.confirm(now, msg.Name, w)
		}
	case msg.Type == MsgVAck && msg.Token == w.token && msg.Seq == uint64(w.sent.UnixNano()) && now.Before(w.sent.Add(time.Duration(safety*float64(v.cfg.Lease)))): // an ack read after the validity it would give is too late
		w.acks[from] = true
		if len(w.acks) < v.m {
			return
		}
		w.valid = w.sent.Add(time.Duration(safety * float64(v.cfg.Lease)))
		if v.cfg.voteValidFromAck {
			w.valid = now.Add(time.Duration(safety * float64(v.cfg.Lease)))
		}
		w.next = w.sent.Add(v.cfg.Lease / 3)
		if w.phase == voteConfirming {
			w.phase = voteHeld
			v.events = append(v.events, GrantEvent{Event: "acquired", Name: msg.Name, Client: w.client, Token: w.token,
				Valid: w.valid.Sub(now), At: now})
		}
	}
}

// confirm sends the token (or renews the votes) to the quorum.
func (v *voting) confirm(now time.Time, name string, w *voteWant) {
	w.sent, w.acks, w.next = now, map[node.ID]bool{}, now.Add(v.cfg.Lease/4)
	for _, c := range w.asked {
		v.send(c, Msg{Type: MsgVConfirm, Name: name, Attempt: w.attempt, Token: w.token, Seq: uint64(now.UnixNano())})
	}
}

func (v *voting) head(name string) *voteWant {
	if q := v.wants[name]; len(q) > 0 {
		return q[0]
	}
	return nil
}

// ask starts an attempt: the m lowest live coordinators, asked one after
// another.
func (v *voting) ask(now time.Time, name string, w *voteWant) {
	var asked []node.ID
	for _, id := range v.ids {
		if len(asked) < v.m && v.live(id, now) {
			asked = append(asked, id)
		}
	}
	if len(asked) < v.m {
		if w.nonBlock {
			v.events = append(v.events, UnavailableEvent{Event: "unavailable", Name: name, Client: w.client,
				Reason: fmt.Sprintf("no quorum: fewer than %d members alive", v.m)})
			v.pop(now, name)
			return
		}
		w.phase, w.next = voteIdle, now.Add(v.cfg.Lease/4) // no quorum alive: wait
		return
	}
	v.seq++
	w.attempt, w.tries, w.phase = v.seq, w.tries+1, voteAsking
	w.asked, w.stamps, w.token = asked, map[node.ID]uint64{}, 0
	w.next = now.Add(v.cfg.Lease / 4)
	v.sendRequest(now, asked[0], name, w)
}

// sendRequest asks coordinator c for its vote, with the client's age.
func (v *voting) sendRequest(now time.Time, c node.ID, name string, w *voteWant) {
	age := uint64(max(now.Sub(w.since), 0) / time.Microsecond)
	v.send(c, Msg{Type: MsgVRequest, Name: name, Attempt: w.attempt, Token: v.high, Seq: min(age, maxAge), NonBlock: w.nonBlock})
}

// giveUp: denied. Votes received go back (the seed's release of partial
// grants), and the next attempt waits a random backoff.
func (v *voting) giveUp(now time.Time, name string, w *voteWant) {
	v.releaseVotes(name, w)
	if w.nonBlock {
		v.events = append(v.events, BusyEvent{Event: "busy", Name: name, Client: w.client})
		v.pop(now, name)
		return
	}
	// Ordered asking cannot livelock, so the backoff only spreads the
	// retries, and it shrinks as the denials add up: a requester that has
	// waited long retries soonest, which keeps the seed's starvation rare.
	limit := v.cfg.Lease / 8 >> min(w.tries-1, 4)
	w.phase, w.next = voteIdle, now.Add(time.Duration(v.cfg.Rand.Int64N(int64(limit)+1)))
}

func (v *voting) releaseVotes(name string, w *voteWant) {
	for _, c := range w.asked {
		if _, voted := w.stamps[c]; !voted {
			continue
		}
		v.send(c, Msg{Type: MsgVRelease, Name: name, Attempt: w.attempt, Token: w.token})
	}
	w.asked, w.stamps, w.acks = nil, nil, nil
}

func (v *voting) lose(now time.Time, name string, w *voteWant, reason string) {
	v.events = append(v.events, LostEvent{Event: "lost", Name: name, Client: w.client, Token: w.token, Reason: reason})
	v.releaseVotes(name, w)
	v.pop(now, name)
}

// pop ends the head's turn; the next local client starts asking.
func (v *voting) pop(now time.Time, name string) {
	q := v.wants[name][1:]
	if len(q) == 0 {
		delete(v.wants, name)
		return
	}
	v.wants[name] = q
	v.ask(now, name, q[0])
}

func (v *voting) request(now time.Time, msg Msg) error {
	switch msg.Type {
	case LocalAcquire:
		q := v.wants[msg.Name]
		if ok, err := admit(msg, q, func(w *voteWant) uint64 { return w.client }, &v.events); !ok {
			return err
		}
		w := &voteWant{client: msg.Client, nonBlock: msg.NonBlock, since: now}
		v.wants[msg.Name] = append(q, w)
		if len(q) == 0 {
			v.ask(now, msg.Name, w)
		}
	case LocalRelease:
		q := v.wants[msg.Name]
		i := slices.IndexFunc(q, func(w *voteWant) bool { return w.client == msg.Client })
		if i < 0 {
			return nil
		}
		if i > 0 {
			v.wants[msg.Name] = slices.Delete(q, i, i+1)
			return nil
		}
		w := q[0]
		if w.phase == voteHeld {
			v.events = append(v.events, ReleasedEvent{Event: "released", Name: msg.Name, Client: w.client, Token: w.token})
		}
		v.releaseVotes(msg.Name, w)
		v.pop(now, msg.Name)
	default:
		return fmt.Errorf("mutex: %v is not a local request", msg.Type)
	}
	return nil
}

// Tick implements node.Machine.
func (v *voting) Tick(now time.Time) {
	v.begin(now)
	defer v.drain(now)
	if !now.Before(v.beat) {
		for _, p := range v.ids {
			if p != v.cfg.ID {
				v.send(p, Msg{Type: MsgVAlive, Token: v.high})
			}
		}
		v.beat = now.Add(v.cfg.Lease / 4)
	}
	names := slices.Sorted(maps.Keys(v.wants))
	for _, name := range names {
		w := v.head(name)
		if w.phase == voteHeld && !now.Before(w.valid) {
			v.lose(now, name, w, "lease ran out: votes not renewed")
			continue
		}
		if now.Before(w.next) {
			continue
		}
		switch w.phase {
		case voteIdle:
			v.ask(now, name, w)
		case voteAsking:
			// Resend to the coordinator being asked; if it is declared
			// dead, a new attempt goes to live ones.
			if c := w.asked[len(w.stamps)]; v.live(c, now) {
				v.sendRequest(now, c, name, w)
				w.next = now.Add(v.cfg.Lease / 4)
			} else {
				v.giveUp(now, name, w)
			}
		case voteConfirming, voteHeld:
			v.confirm(now, name, w) // renew (or resend the confirmation)
		}
	}
}

// Ready implements node.Machine.
func (v *voting) Ready() node.Ready[Msg] {
	r := node.Ready[Msg]{Msgs: v.out, Events: v.events, Wake: v.beat}
	v.out, v.events = nil, nil
	for _, q := range v.wants {
		w := q[0]
		for _, t := range []time.Time{w.next, w.valid} {
			if t.After(v.now) && t.Before(r.Wake) {
				r.Wake = t
			}
		}
	}
	return r
}

// Holdings implements Machine.
func (v *voting) Holdings(now time.Time) []Holding {
	var out []Holding
	names := slices.Sorted(maps.Keys(v.wants))
	for _, n := range names {
		if w := v.head(n); w.phase == voteHeld && now.Before(w.valid) {
			out = append(out, Holding{Name: n, Client: w.client, Token: w.token, Until: w.valid})
		}
	}
	return out
}

// Clock is the coordinator's counter, for stable storage.
func (v *voting) Clock() uint64 { return v.high }

// Status implements Machine: the votes this daemon has given, and the locks
// its clients hold.
func (v *voting) Status() any {
	locks := []LockStatus{}
	for _, n := range slices.Sorted(maps.Keys(v.wants)) {
		row := LockStatus{Name: n, Node: v.cfg.ID}
		for _, w := range v.wants[n] {
			if w.phase == voteHeld && v.now.Before(w.valid) {
				row.Holder, row.Client, row.Token = v.cfg.ID, w.client, w.token
			} else {
				row.Queue = append(row.Queue, fmt.Sprintf("%d/%d", v.cfg.ID, w.client))
			}
		}
		if row.Holder != node.None || len(row.Queue) > 0 {
			locks = append(locks, row)
		}
	}
	votes := map[string]node.ID{}
	for name, r := range v.votes {
		if v.now.Before(r.expires) {
			votes[name] = r.node
		}
	}
	live := 0
	for _, id := range v.ids {
		if v.live(id, v.now) {
			live++
		}
	}
	return map[string]any{"id": v.cfg.ID, "algo": v.cfg.Algo.String(), "m": v.m, "counter": v.high,
		"votes": votes, "locks": locks, "quorum": live >= v.m,
		"down": down(v.alive, v.ids, v.cfg.ID, v.started, v.now)}
}
