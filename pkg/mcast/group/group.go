package group

import (
	"cmp"
	"errors"
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"slices"
	"strings"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Config configures a Group. Zero values mean the default.
type Config struct {
	ID  node.ID
	Inc uint64 // this incarnation (a restart must use a new one)
	// Found: this process creates the group (its first view is itself
	// alone). Otherwise it joins through Contacts.
	Found    bool
	Contacts []node.ID
	// Total is the order across senders, one registered in
	// group_order.go (TotalNone: FIFO per sender); New refuses
	// any other.
	Total Total
	// Period is the heartbeat (MsgStatus) interval. Default 20ms.
	Period time.Duration
	// Suspect is the silence after which a view member is suspected and
	// taken out of the view. Default 8·Period.
	Suspect time.Duration
	// FoundAfter: when no member has let this one in after this long,
	// it creates the group itself (0: never, unless Found).
	FoundAfter time.Duration
	// Safe: deliver a message only once every member of the view has it
	// (Nita-Rotaru's CS7610 notes, TOTEM's and Spread's safe delivery). Each member then
	// acknowledges new messages to everyone (in batches, group_batch.go). At a view change the
	// rest of the old view's messages (every survivor has them), if any,
	// are delivered after a TransitionalEvent naming the survivors: safe
	// in that smaller configuration only (extended virtual synchrony).
	Safe bool
	// StartWith holds this member's first messages until it is in a view
	// of at least this many members (then never again): a group started
	// from a script sees its first lines in full views, not in the
	// founder's view of one. 0: send at once.
	StartWith int
	// Window bounds this member's own messages that some view member has
	// not acknowledged, plus those waiting for a view: past it, sends are
	// refused with ErrFull until a RoomEvent. Default 4096.
	Window int
	// EVS: extended virtual synchrony (group_evs.go). Every component of
	// a partition installs its own view and goes on; components that hear
	// each other again merge. Without it only a majority of the last view
	// goes on (primary component).
	EVS bool
	// Backlog bounds the deliveries handed to the runner and not yet
	// written out, as the sum of their Cost (0: no bound); the runner
	// reports what it wrote with MsgWritten. At the bound the member
	// delivers nothing more and, outside view changes, stores no new
	// message: its status stops acknowledging, the senders' windows fill
	// and the group slows to what this member's reader takes, while the
	// heartbeats go on and nobody suspects it. A view change still
	// delivers the old view's messages up to its cut.
	Backlog int

	bug bug // planted bugs, tests only
}

func (c Config) period() time.Duration {
	if c.Period <= 0 {
		return 20 * time.Millisecond
	}
	return c.Period
}

// SuspectTime is the failure-detection timeout the configuration means.
func (c Config) SuspectTime() time.Duration { return c.suspect() }

func (c Config) suspect() time.Duration {
	if c.Suspect <= 0 {
		return 8 * c.period()
	}
	return c.Suspect
}

type bug uint8

const (
	bugEarlyInstall      bug = 1 + iota // install once a majority is ready, with what one has
	bugFlushDeliver                     // go on delivering while a view change is under way
	bugSkipGap                          // total: deliver past a stamped message not yet received
	bugNoLinger                         // a member that leaves stops at once
	bugLamportNoAck                     // lamport: deliver the head without everyone's acknowledgement
	bugSafeSkipLast                     // safe: do not wait for the view's last member
	bugISISEarly                        // isis: deliver the head on its proposed priority, before it is agreed
	bugTotemStaleAru                    // totem: the holder passes on an aru it has not reached
	bugMergeNoFlush                     // evs: a component that merges into another skips the rest of its view
	bugMergeEitherWay                   // evs: leaders of views with equal numbers each join the other
	bugTransWholeView                   // safe: the transitional set is the whole old view
	bugTransLocal                       // safe: the transitional set leaves out whom this member suspects
	bugQuitCounted                      // a quitter is counted like a crashed member
	bugQuitSuspected                    // every suspected member is left out of the majority's count, not only quitters
	bugNoHealth                         // suspicion ignores this member's own lateness (no local health multiplier)
	bugNoRequeue                        // a removed member drops its messages past the cut
	bugDropLive                         // a change that drops a silent member drops the view's last member too, though it answered
	bugNoMissed                         // a removed member does not report the messages of its view it missed
	bugFixedWindow                      // every member keeps the whole Window in flight, however many members send
	bugNoBatch                          // order frames go as each data frame comes, not batched (group_batch.go)
	bugNoRide                           // isis: no proposal or agreed priority rides on a data frame
	bugFlushUnheard                     // the acting leader ignores a status that says its sender is flushing
	bugFlatSuspect                      // suspicion waits Suspect for every process, whatever silences it came back from
	bugGoneAnyInc                       // a MsgGone makes its receiver rejoin whichever incarnation it answered
	bugWaitSuperseded                   // a view member whose process has been heard as a later incarnation is waited for until silent
	bugRelayedJoin                      // the leader takes in a joiner whose join came relayed by another member (it may not hear the joiner)
	bugTotemHoldIdle                    // totem: a holder with nothing to send keeps the token on a busy ring
	bugTotemUnheard                     // totem: the token's return does not count as hearing the members it went through
	bugResendEach                       // every status resends what it shows missing, not once per Period to a member (retransmit)
	bugRelayFinals                      // isis: every member resends every sender's agreed priorities a status lacks, not only its own
	bugViewByNumber                     // evs: a frame of this view's number is taken whatever leader it names (Msg.Lead)
	bugMergePartial                     // evs: a component merges into another without the members that did not answer the change
	bugEVSGone                          // evs: a member answers a frame of an older view it is no longer with by MsgGone (the sender rejoins instead of merging)
	bugTotemHoldToTick                  // totem: an idle holder's Period/4 is not a wake-up: it keeps the token until the next tick
	bugTotemHoldAll                     // totem: every member, not only the view's leader, keeps an idle token (and no cancel reaches it)
	bugTotemNoCancel                    // totem: a member with a message queued on an idle ring does not ask the leader to pass the token
	bugTotemTokenLast                   // totem: the token goes after every copy of the holder's messages, not right after the successor's
	bugTotemTokenAlone                  // totem: the successor's copies go in a frame of their own, never on the token
	bugTotemAsksInFlight                // totem: the token asks for every position missing, those given out since it last came too (copies in flight)
	bugAskResendsAll                    // an asking status gets every message of every sender it lacks, and every gap seen asks at once (askGap)
)

// Group events. Text forms: "view 7 members 1,2,4 joined 4 left 3",
// "<sender> <seq> <payload>" (deliver), "left view 8", "removed from
// view 6", "minority in view 5".

// ViewEvent: this member installed a view.
type ViewEvent struct {
	Event   string   `json:"event"` // "view"
	View    uint64   `json:"view"`
	Leader  node.ID  `json:"leader"`
	Members []Member `json:"members"`
	Joined  []Member `json:"joined"`
	Left    []Member `json:"left"`
}

func (e ViewEvent) Kind() string { return "view" }
func (e ViewEvent) String() string {
	return fmt.Sprintf("%s joined %s left %s", e.members(), idList(e.Joined), idList(e.Left))
}

// members is 'view 7 members 1,2,4'.
func (e ViewEvent) members() string {
	return fmt.Sprintf("view %d members %s", e.View, idList(e.Members))
}

func idList(ms []Member) string {
	if len(ms) == 0 {
		return "-"
	}
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = fmt.Sprint(m.ID)
	}
	return strings.Join(s, ",")
}

// SendEvent records one of this member's multicasts, in the view it
// was sent in.
type SendEvent struct {
	Event   string `json:"event"` // "send"
	View    uint64 `json:"view"`
	Inc     uint64 `json:"inc"` // this member's incarnation
	Seq     uint64 `json:"seq"`
	Payload []byte `json:"payload"`
}

func (e SendEvent) Kind() string   { return "send" }
func (e SendEvent) String() string { return fmt.Sprintf("send %d/%d", e.View, e.Seq) }

// DeliverEvent is one delivery (own messages included), in the view
// the message was sent in.
//
// A message's identity, the same at every member and in every view after
// its own, is its sender's incarnation (Sender, Inc), the view it was
// sent and delivered in, and its number among the sender's messages of
// that view (Seq, from 1 in every view).
type DeliverEvent struct {
	Event   string  `json:"event"` // "deliver"
	View    uint64  `json:"view"`
	Sender  node.ID `json:"sender"`
	Inc     uint64  `json:"inc"` // the sender's incarnation
	Seq     uint64  `json:"seq"`
	Payload []byte  `json:"payload"`
}

func (e DeliverEvent) Kind() string { return "deliver" }
func (e DeliverEvent) String() string {
	return fmt.Sprintf("%d %d.%d %s", e.Sender, e.View, e.Seq, e.Payload)
}

// LeftEvent: this member's input ended and it has left the group (the
// view it flushed into without being a member of it, and that view's
// leader: with partitions two components may number views alike).
type LeftEvent struct {
	Event  string  `json:"event"` // "left"
	View   uint64  `json:"view"`
	Leader *Member `json:"leader,omitempty"`
}

func (e LeftEvent) Kind() string   { return "left" }
func (e LeftEvent) String() string { return fmt.Sprintf("left view %d", e.View) }

// LostEvent: the group went on without this member, and these of its
// messages of view View (numbers Seqs, sent as incarnation Inc) may be
// missing at the members that stay: Unknown, the member does not know
// which of them they delivered; otherwise they were delivered here but
// not by them. Its other messages past the view's cut are sent again
// from its next incarnation.
type LostEvent struct {
	Event   string   `json:"event"` // "lost"
	View    uint64   `json:"view"`
	Inc     uint64   `json:"inc"`
	Seqs    []uint64 `json:"seqs"`
	Unknown bool     `json:"unknown"`
}

func (e LostEvent) Kind() string { return "lost" }
func (e LostEvent) String() string {
	what := "not delivered by the members that stay"
	if e.Unknown {
		what = "perhaps not delivered by the members that stay"
	}
	return fmt.Sprintf("%d messages of view %d %s", len(e.Seqs), e.View, what)
}

// MissedEvent: the group went on without this member, and the members
// that stay delivered in view View these messages of Sender (its
// incarnation Inc, numbers Seqs) that this member did not deliver.
// Unknown: this member does not know the view's cut, so messages of the
// view past those it delivered may be missing here (no Sender, no Seqs).
// What the member lacks of views it was not in is not reported: those
// were never its views (RemovedEvent; the next view's number shows the
// jump).
type MissedEvent struct {
	Event   string   `json:"event"` // "missed"
	View    uint64   `json:"view"`
	Sender  node.ID  `json:"sender,omitempty"`
	Inc     uint64   `json:"inc,omitempty"`
	Seqs    []uint64 `json:"seqs,omitempty"`
	Unknown bool     `json:"unknown,omitempty"`
}

func (e MissedEvent) Kind() string { return "missed" }
func (e MissedEvent) String() string {
	if e.Unknown {
		return fmt.Sprintf("missed perhaps messages of view %d delivered by the members that stay (the view's cut is unknown here)", e.View)
	}
	return fmt.Sprintf("missed %d messages of %d in view %d delivered by the members that stay", len(e.Seqs), e.Sender, e.View)
}

// RemovedEvent: the group went on without this member (it was suspected,
// or cut off in a minority); it joins again as a new incarnation.
type RemovedEvent struct {
	Event string `json:"event"` // "removed"
	View  uint64 `json:"view"`
	Inc   uint64 `json:"inc"`             // the new incarnation
	Cause string `json:"cause,omitempty"` // why this member took itself for removed (a Cause* constant)
}

// Why a member starts a new incarnation (RemovedEvent.Cause).
const (
	CauseGone        = "gone"         // a member of its view said the group went on without it (MsgGone)
	CauseMissedViews = "missed-views" // an install of a view past the next one, or of another view's cut
	CauseLeftOut     = "left-out"     // the install of the next view leaves it out, without its flush
	CauseNotReady    = "not-ready"    // the install's cut holds what it lacks
	CauseRemoved     = "removed"      // the install of the next view leaves it out, after its flush
)

func (e RemovedEvent) Kind() string   { return "removed" }
func (e RemovedEvent) String() string { return fmt.Sprintf("removed from view %d", e.View) }

// TransitionalEvent (--safe): the view is ending; the deliveries that
// follow in it, up to the next view, are safe among Members (the
// survivors) only, not among every member of the view (Nita-Rotaru's CS7610 notes,
// extended virtual synchrony's transitional configuration).
type TransitionalEvent struct {
	Event   string   `json:"event"` // "transitional"
	View    uint64   `json:"view"`
	Members []Member `json:"members"`
}

func (e TransitionalEvent) Kind() string { return "transitional" }
func (e TransitionalEvent) String() string {
	return "transitional " + ViewEvent{View: e.View, Members: e.Members}.members()
}

// MergeEvent (extended virtual synchrony, Config.EVS): two
// components of the group merge. Members are the members of View that
// move on together (its transitional configuration). With Into, this
// component leaves View together, after the flush, to join the one that
// Into leads, each member as the new incarnation Inc; without, the next
// view takes the other component in.
type MergeEvent struct {
	Event   string   `json:"event"` // "merge"
	View    uint64   `json:"view"`
	Members []Member `json:"members"`
	Into    node.ID  `json:"into,omitempty"`
	Inc     uint64   `json:"inc,omitempty"`
}

func (e MergeEvent) Kind() string { return "merge" }
func (e MergeEvent) String() string {
	s := "merge " + ViewEvent{View: e.View, Members: e.Members}.members()
	if e.Into != node.None {
		s += fmt.Sprintf(" into %d", e.Into)
	}
	return s
}

// MinorityEvent: a view change has waited a long time for a majority of
// the view: this member is cut off with a minority and waits.
type MinorityEvent struct {
	Event string `json:"event"` // "minority"
	View  uint64 `json:"view"`
}

func (e MinorityEvent) Kind() string   { return "minority" }
func (e MinorityEvent) String() string { return fmt.Sprintf("minority in view %d", e.View) }

// lead is the state of a view change this member leads.
type lead struct {
	ballot  Ballot
	started time.Time
	acks    map[node.ID]Msg
	change  *Change          // after phase I
	need    []node.ID        // survivors that must be ready
	ready   map[node.ID]bool // phase II
	resent  time.Time
}

// Group is one member of a dynamic group: membership views agreed by the
// leader-based protocol of Nita-Rotaru's CS7610 notes, virtually synchronous delivery, and
// optionally one total order. See doc.go.
type Group struct {
	cfg       Config
	me        Member
	life      uint64
	view      View
	inView    bool
	pos       map[node.ID]int
	done      bool // left (or ended alone)
	ended     bool
	queue     [][]byte
	now       time.Time
	started   bool
	startedAt time.Time
	full      bool      // a send was refused with ErrFull
	open      bool      // StartWith was reached
	tickAt    time.Time // when Tick is due next
	emitted   uint64    // Cost of the deliveries handed out
	written   uint64    // ... and written out by the runner (MsgWritten)

	// per view
	seq       uint64
	store     []map[uint64][]byte
	gcLow     []uint64 // per member: its messages up to here are collected
	recv      []uint64
	above     []map[uint64]bool
	deliv     []uint64     // FIFO: delivered per member
	delivered deliveredSet // the orders that deliver by position: which messages were delivered
	stamps    []Stamp      // total: positions 1..len
	stampAt   map[uint64]Stamp
	stamped   map[Stamp]bool
	nextPos   uint64
	gcRecv    [][]uint64       // last status per member
	ts        map[Stamp]uint64 // the time or position a message carries (Item.TS)
	ackRecv   []uint64         // what this member first answered a view change of this view with
	order     totalOrder       // the total order (group_order.go)
	batch     batchState       // order frames waiting (group_batch.go)
	heard     []time.Time
	health    int       // Lifeguard's local health multiplier (suspectFor)
	healthAt  time.Time // when it last changed
	lastTick  time.Time
	nextBeat  time.Time
	nak       map[node.ID]uint64 // a gap seen in a sender's messages: the highest of them held (askGap)
	asked     map[node.ID]asked  // what this member last asked each sender for (askGap)
	held      []heldSnap         // what this member held at its last heartbeats (retransmit)
	future    []node.Envelope[Msg]
	installed time.Time

	// view change out of the current view
	flushing   bool
	promised   Ballot
	accepted   *Change
	accBallot  Ballot
	readySent  Ballot
	lead       *lead
	deferUntil time.Time
	maxN       uint64
	joins      map[Member]time.Time // joiners heard directly (onJoin), when last
	leaves     map[node.ID]bool
	quit       map[Member]bool // members that sent MsgQuit; true: left out of the majority's count
	quitted    bool            // this member quit (MsgAbandon)
	quitBy     time.Time       // MsgAbandon: quit once no change is under way, or at this time
	lastInst   *Change
	past       map[uint64]*Change // rememberChange: by the view each ended
	minority   bool
	waitSince  time.Time
	contacts   []node.ID
	nextJoin   time.Time
	nextLeave  time.Time
	lagAt      map[node.ID]time.Time
	resentAt   map[node.ID]time.Time // retransmit: when a status last made this member resend to a member unasked
	flushSince time.Time
	flushSeen  bool // a member's status of this view said it is flushing (peerFlushing)

	// learnt silences (hear): per process, the longest silence this
	// member has seen it come back from, kept across views
	silence map[node.ID]time.Duration
	gone    map[node.ID]time.Time // suspected members a view change removed: when last heard

	// extended virtual synchrony (group_evs.go)
	known      map[node.ID]bool // every process seen in a view, and the contacts
	mergeInto  node.ID          // this component is to join the one this process leads
	mergeNext  node.ID          // mergeInto, once the view without the members that did not answer is in
	mergeView  uint64           // the view number of the probe that set mergeInto
	mergeJoins map[Member]bool  // joiners from another component
	// later: per process, the highest incarnation heard of it (its
	// frames, its joins, its merge probes) when above the one in the
	// view; that one has ended (suspected).
	later   map[node.ID]uint64
	merging bool // this member's joins come from a merge
	// joinLeader: while joining, the leader a member named when it was
	// asked to let this process in (onJoin); joinVia: that member.
	joinLeader, joinVia node.ID
	nextProbe           time.Time
	lastView            uint64    // the last view this member was in
	outSince            time.Time // out of every view since

	// after leaving: the install the next view's members must confirm
	leftChange  *Change
	leftAt      time.Time
	unconfirmed map[node.ID]bool
	nextResend  time.Time

	stats  map[string]uint64
	out    []node.Envelope[Msg]
	events []node.Event
}

// New returns a Group member; the runner calls Tick once at start.
func New(cfg Config) (*Group, error) {
	if cfg.ID == node.None {
		return nil, errors.New("mcast: member id 0")
	}
	if !cfg.Found && cfg.FoundAfter <= 0 && len(cfg.Contacts) == 0 {
		return nil, errors.New("mcast: a member that does not found the group needs contacts")
	}
	cfg.Period = cfg.period()
	cfg.Suspect = cfg.suspect()
	if cfg.Window <= 0 {
		cfg.Window = 4096
	}
	g := &Group{cfg: cfg, me: Member{cfg.ID, cfg.Inc}, stats: map[string]uint64{}, joins: map[Member]time.Time{},
		leaves: map[node.ID]bool{}, quit: map[Member]bool{}, lagAt: map[node.ID]time.Time{}, silence: map[node.ID]time.Duration{}, gone: map[node.ID]time.Time{}, known: map[node.ID]bool{}, mergeJoins: map[Member]bool{}, later: map[node.ID]uint64{}}
	for _, id := range cfg.Contacts {
		if id != cfg.ID {
			g.known[id] = true
		}
	}
	var ok bool
	if g.order, ok = newOrder(g); !ok {
		return nil, errors.New("mcast: unknown total order")
	}
	g.contacts = slices.DeleteFunc(slices.Clone(cfg.Contacts), func(id node.ID) bool { return id == cfg.ID })
	return g, nil
}

// Stats returns the counters.
func (g *Group) Stats() map[string]uint64 { return g.stats }

// Status describes the member for status queries.
func (g *Group) Status() any {
	st := Status{ID: g.cfg.ID, Inc: g.me.Inc, View: g.view.ID, InView: g.inView, Members: g.view.Members,
		Order: g.cfg.Total.String(), Safe: g.cfg.Safe, Flushing: g.flushing, Minority: g.minority, Sent: g.seq,
		Queue: len(g.queue), Unacked: g.unacked(), Counters: g.stats}
	if !g.inView {
		// Joining: the leader a member named (the join waits until that
		// leader hears this process directly, group_data.go's onJoin).
		st.Leader, st.JoinVia = g.joinLeader, g.joinVia
		return st
	}
	st.Leader = g.leader()
	st.Received = slices.Clone(g.recv)
	st.Aru = slices.Clone(g.recv)
	for i, r := range g.gcRecv {
		if g.view.Members[i].ID == g.cfg.ID {
			continue
		}
		for j := range st.Aru {
			if r == nil {
				st.Aru[j] = 0
			} else {
				st.Aru[j] = min(st.Aru[j], r[j])
			}
		}
	}
	st.Delivered = make([]uint64, len(g.view.Members))
	for j := range g.view.Members {
		if !g.order.stamping() {
			st.Delivered[j] = g.deliv[j]
			continue
		}
		st.Delivered[j] = g.delivered.upto[j]
	}
	g.order.status(&st)
	return st
}

// Status is what 'mcast status' shows of a group member. The
// per-sender lists follow Members: Received (held without a gap), Aru
// (held by every member, as far as this one has heard: TOTEM's
// all-received-up-to per sender), Delivered (in sequence from the first).
type Status struct {
	ID        node.ID           `json:"id"`
	Inc       uint64            `json:"inc"`
	View      uint64            `json:"view"`
	InView    bool              `json:"in_view"`
	Leader    node.ID           `json:"leader,omitempty"`   // joining: the leader named by JoinVia
	JoinVia   node.ID           `json:"join_via,omitempty"` // joining: the member that named Leader
	Members   []Member          `json:"members"`
	Order     string            `json:"order"`
	Safe      bool              `json:"safe"`
	Flushing  bool              `json:"flushing"`
	Minority  bool              `json:"minority"`
	Sent      uint64            `json:"sent"`
	Queue     int               `json:"queue"`
	Unacked   int               `json:"unacked"`
	Received  []uint64          `json:"received,omitempty"`
	Aru       []uint64          `json:"aru,omitempty"`
	Delivered []uint64          `json:"delivered,omitempty"`
	Stamps    uint64            `json:"stamps,omitempty"`
	Clock     uint64            `json:"clock,omitempty"`
	Agreed    []uint64          `json:"agreed,omitempty"`
	Token     uint64            `json:"token,omitempty"` // TOTEM: the last pass of the token seen
	Holding   bool              `json:"holding,omitempty"`
	Counters  map[string]uint64 `json:"counters"`
}

// View returns the installed view (ok false while joining).
func (g *Group) View() (View, bool) { return g.view, g.inView }

// Done reports whether this member has left the group.
func (g *Group) Done() bool { return g.done }

func (g *Group) leader() node.ID { return g.view.Members[0].ID }

func (g *Group) send(to node.ID, m Msg) {
	if to == g.cfg.ID {
		return // a change this member led and no longer leads
	}
	m.Inc = g.me.Inc
	if g.inView && m.View == g.view.ID && len(g.view.Members) > 0 {
		m.Lead = g.view.Members[0] // Msg.Lead
	}
	g.out = append(g.out, node.Envelope[Msg]{From: g.cfg.ID, To: to, Msg: m})
}

func (g *Group) others() []node.ID {
	var ids []node.ID
	for _, m := range g.view.Members {
		if m.ID != g.cfg.ID {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// install makes v the current view and resets the per-view state.
func (g *Group) install(v View) {
	if g.inView && len(g.heard) == len(g.view.Members) {
		for i, m := range g.view.Members {
			if !slices.Contains(v.Members, m) && g.suspected(i) {
				g.gone[m.ID] = g.heard[i] // hear: the silence it may come back from
			}
		}
	}
	g.view, g.inView = v, true
	n := len(v.Members)
	g.pos = make(map[node.ID]int, n)
	for i, m := range v.Members {
		g.pos[m.ID] = i
		if m.ID != g.cfg.ID {
			g.known[m.ID] = true
		}
	}
	g.lastView, g.mergeInto, g.merging = v.ID, node.None, false
	if g.mergeNext != node.None && v.Members[0].ID == g.cfg.ID && (v.ID < g.mergeView || v.ID == g.mergeView && g.mergeNext < g.cfg.ID) {
		// The change that installs v put a merge off until the members
		// that did not answer were out (leadChange): it comes next, if
		// group_evs.go's rule still has this component join the other
		// with v's number (the other leader decided on the number of
		// its probe; were v's above it, both might join the other). If
		// not, the next probes decide afresh.
		g.mergeInto = g.mergeNext
	}
	g.mergeNext = node.None
	g.seq = 0
	g.store, g.above = make([]map[uint64][]byte, n), make([]map[uint64]bool, n)
	for i := range g.store {
		g.store[i], g.above[i] = map[uint64][]byte{}, map[uint64]bool{}
	}
	g.recv, g.deliv, g.gcLow = make([]uint64, n), make([]uint64, n), make([]uint64, n)
	g.delivered, g.stampAt, g.stamped = newDeliveredSet(n), map[uint64]Stamp{}, map[Stamp]bool{}
	g.ts, g.ackRecv = map[Stamp]uint64{}, nil
	g.order.reset(n)
	g.batchReset()
	g.stamps, g.nextPos = nil, 1
	g.gcRecv, g.heard = make([][]uint64, n), make([]time.Time, n)
	for i := range g.heard {
		g.heard[i] = g.now
	}
	g.nak, g.asked, g.held = map[node.ID]uint64{}, map[node.ID]asked{}, nil
	g.flushing, g.promised, g.accepted, g.accBallot, g.readySent, g.lead = false, Ballot{}, nil, Ballot{}, Ballot{}, nil
	g.minority, g.waitSince, g.installed, g.flushSeen = false, time.Time{}, g.now, false
	g.joinLeader, g.joinVia = node.None, node.None
	for m := range g.joins {
		if i, ok := g.pos[m.ID]; ok && v.Members[i].Inc >= m.Inc {
			delete(g.joins, m)
			delete(g.mergeJoins, m)
		}
	}
	for id := range g.leaves {
		if _, ok := g.pos[id]; !ok {
			delete(g.leaves, id)
		}
	}
	for id, inc := range g.later {
		if i, ok := g.pos[id]; !ok || v.Members[i].Inc >= inc {
			delete(g.later, id)
		}
	}
	for m := range g.quit {
		if slices.Contains(v.Members, m) {
			// It quit in an earlier view: it has promised nothing in
			// this one, and never will.
			g.quit[m] = true
		} else {
			delete(g.quit, m)
		}
	}
	g.events = append(g.events, ViewEvent{Event: "view", View: v.ID, Leader: v.Members[0].ID,
		Members: slices.Clone(v.Members), Joined: slices.Clone(v.Joined), Left: slices.Clone(v.Left)})
	g.stats["views"]++
	g.order.start()
	g.flushQueue()
	g.room()
	// Frames of this view that came early.
	fut := g.future
	g.future = nil
	for _, e := range fut {
		if e.Msg.View >= v.ID {
			g.handle(e.From, e.Msg)
		}
	}
}

// rejoin starts a new incarnation after the group went on without us;
// c is the change that did so, when known; cause says how this member
// learnt it (a Cause* constant).
func (g *Group) rejoin(view uint64, c *Change, cause string) {
	g.requeue(c)
	g.missed(c)
	for _, m := range g.view.Members {
		if m.ID != g.cfg.ID && !slices.Contains(g.contacts, m.ID) {
			g.contacts = append(g.contacts, m.ID)
		}
	}
	g.life++
	g.me.Inc = g.cfg.Inc + g.life
	g.inView, g.flushing, g.lead, g.future = false, false, nil, nil
	g.view = View{}
	g.nextJoin, g.outSince = time.Time{}, g.now
	g.events = append(g.events, RemovedEvent{Event: "removed", View: view, Inc: g.me.Inc, Cause: cause})
	g.stats["removed"]++
	g.stats["removed-"+cause]++
}

// requeue: the group went on without this member (change c, nil when
// not known). Virtual synchrony delivers a message in the view it was
// sent in or not at all (Nita-Rotaru's CS7610 notes, "virtual
// synchrony"), so this member's messages past c's cut were delivered by
// none of the members that stay: they go again, first and in their
// order, from the next incarnation, so that no sender's stream has a
// hole. What cannot go again is reported (LostEvent), never dropped
// silently: without the cut, every message of the view not yet known to
// be everywhere (its fate is unknown); with it, one delivered here past
// the cut (sending it again would deliver it twice here).
func (g *Group) requeue(c *Change) {
	me, ok := g.pos[g.cfg.ID]
	if !g.inView || !ok || g.seq == 0 || g.cfg.bug == bugNoRequeue {
		return
	}
	var again [][]byte
	var lost []uint64
	if c == nil || me >= len(c.Cut) {
		for q := uint64(1); q <= g.seq; q++ {
			if _, held := g.store[me][q]; held {
				lost = append(lost, q)
			}
		}
	} else {
		for q := c.Cut[me] + 1; q <= g.seq; q++ {
			p, held := g.store[me][q]
			mine := g.deliv[me] >= q
			if g.order.stamping() {
				mine = g.delivered.has(me, q)
			}
			if !held || mine {
				lost = append(lost, q)
				continue
			}
			again = append(again, p)
		}
	}
	if len(again) > 0 {
		g.queue = append(again, g.queue...)
		g.stats["requeued"] += uint64(len(again))
	}
	if len(lost) > 0 {
		g.stats["lost"] += uint64(len(lost))
		g.events = append(g.events, LostEvent{Event: "lost", View: g.view.ID, Inc: g.me.Inc, Seqs: lost, Unknown: c == nil})
	}
}

// missed: the group went on without this member (change c, nil when not
// known). The members that stay deliver every message of the view up to
// c's cut (virtual synchrony, Nita-Rotaru's CS7610 notes); those this
// member did not deliver are holes in its output, reported per sender
// (MissedEvent) so that its runner can say so and exit non-zero, never
// left to a reader to infer from its 'removed' line. Without the cut it
// reports that the view's messages past its own deliveries may be
// missing.
func (g *Group) missed(c *Change) {
	if !g.inView || g.cfg.bug == bugNoMissed {
		return
	}
	if c == nil || len(c.Cut) != len(g.view.Members) {
		g.stats["missed-unknown"]++
		g.events = append(g.events, MissedEvent{Event: "missed", View: g.view.ID, Unknown: true})
		return
	}
	for j, m := range g.view.Members {
		var seqs []uint64
		from := g.deliv[j] + 1 // delivered in each sender's order
		if g.order.stamping() {
			from = 1 // delivered in stamp order: look at each
		}
		for q := from; q <= c.Cut[j]; q++ {
			if !g.delivered.has(j, q) || !g.order.stamping() {
				seqs = append(seqs, q)
			}
		}
		if len(seqs) > 0 {
			g.stats["missed"] += uint64(len(seqs))
			g.events = append(g.events, MissedEvent{Event: "missed", View: g.view.ID, Sender: m.ID, Inc: m.Inc, Seqs: seqs})
		}
	}
}

// Tick implements node.Machine.
func (g *Group) Tick(now time.Time) {
	g.now = now
	if g.batchTick(now) {
		return
	}
	g.healthTick(now)
	if !now.Before(g.tickAt) {
		g.tickAt = now.Add(g.cfg.Period / 2)
	}
	if !g.started {
		g.started, g.startedAt = true, now
		if g.cfg.Found {
			g.install(View{ID: 1, Members: []Member{g.me}, Joined: []Member{g.me}})
		}
	}
	g.tryQuit()
	if g.leftChange != nil {
		g.checkLinger()
		return
	}
	if !g.inView && !g.done && g.life == 0 && g.cfg.FoundAfter > 0 && now.Sub(g.startedAt) >= g.cfg.FoundAfter {
		// Nobody answered: there is no group yet.
		g.install(View{ID: 1, Members: []Member{g.me}, Joined: []Member{g.me}})
	}
	if g.done {
		return
	}
	if !g.inView {
		if g.ended && len(g.queue) == 0 {
			// Nothing left to send: no need to join only to leave.
			g.done = true
			g.events = append(g.events, mcast.DoneEvent{Event: "done", Sent: g.stats["sent"]})
			return
		}
		if g.cfg.EVS && g.lastView > 0 && now.Sub(g.outSince) > 4*g.cfg.Suspect {
			// Nobody let us in: we are a component of our own (EVS), and
			// merge with the others once they hear of us.
			g.install(View{ID: g.lastView + 1, Members: []Member{g.me}, Joined: []Member{g.me}})
			return
		}
		if !now.Before(g.nextJoin) {
			g.nextJoin = now.Add(g.cfg.Period)
			for _, c := range g.contacts {
				g.send(c, Msg{Type: MsgJoin, Member: g.me, Reject: g.merging})
			}
		}
		return
	}
	if !now.Before(g.nextBeat) {
		g.nextBeat = now.Add(g.beat())
		g.remember()
		for _, id := range g.others() {
			g.sendStatus(id)
		}
		g.order.beat()
	}
	g.order.tick()
	g.tryLeave()
	g.leadChange()
	g.probe()
	if g.flushing && g.now.Sub(g.flushSince) > 4*g.cfg.Suspect && !g.minority && !g.cfg.EVS {
		// A view change that waits this long lacks a majority.
		g.minority = true
		g.events = append(g.events, MinorityEvent{Event: "minority", View: g.view.ID})
	}
}

// beat is the heartbeat interval: Period, but 2·Period with TOTEM while
// no view change is under way, since the token already carries what
// every member holds (its aru, Nita-Rotaru's CS7610 notes): there the heartbeats only
// detect failures (Suspect is 8·Period by default). A view change needs
// the statuses (what each member lacks of the cut) at the full rate.
func (g *Group) beat() time.Duration {
	if g.order.slowBeat() && !g.flushing && g.lead == nil {
		return 2 * g.cfg.Period
	}
	return g.cfg.Period
}

func (g *Group) sendStatus(to node.ID) { g.status(to, false, nil) }

// askStatus sends a status that asks for what it shows missing at once
// (a gap, a cut to fetch, refused messages): the receiver retransmits
// without waiting for the loss to be older than a round trip.
func (g *Group) askStatus(to node.ID) { g.status(to, true, nil) }

// status sends a member this member's status; ask: answer it at once;
// lacks: the messages of the addressee it asks for (askGap).
func (g *Group) status(to node.ID, ask bool, lacks []Stamp) {
	recv := g.recv
	if g.cfg.Safe && g.ackRecv != nil {
		// Once this member has answered a view change, what it receives
		// may be left out of the cut (a change can rest on its first
		// answer): others must not count it as held here, or one of them
		// could deliver as safe a message the survivors never deliver.
		recv = g.ackRecv
	}
	var b Ballot
	if g.flushing {
		b = g.promised // peerFlushing: the acting leader learns of the flush
	}
	g.send(to, Msg{Type: MsgStatus, View: g.view.ID, Ballot: b, Recv: slices.Clone(recv), Ordered: uint64(len(g.stamps)), Clock: g.order.statusClock(),
		Finals: g.finals(), Reject: ask, Stamps: lacks})
}

// finals is what a status or an answer says of agreed priorities (ISIS).
func (g *Group) finals() []uint64 { return g.order.finals() }

// suspected reports whether view member i has been silent too long, or
// has ended: its process has been heard as a later incarnation (a
// process runs one incarnation at a time, and a new one never answers for
// the old, whose frames the others drop as foreign). Without the second
// rule a change that swaps the new incarnation in waits Suspect for an
// answer the old one can never give: once per install when the process
// rejoins again and again. A false suspicion costs a view change, never
// safety: the majority count of tryCommit is over the whole view.
func (g *Group) suspected(i int) bool {
	m := g.view.Members[i]
	if _, quit := g.quit[m]; quit {
		return true
	}
	if m.ID != g.cfg.ID && g.later[m.ID] > m.Inc && g.cfg.bug != bugWaitSuperseded {
		return true
	}
	return m.ID != g.cfg.ID && g.now.Sub(g.heard[i]) > g.suspectFor(i)
}

// heardOf notes that process id runs incarnation inc (suspected).
func (g *Group) heardOf(id node.ID, inc uint64) {
	if i, ok := g.pos[id]; ok && g.inView && inc > g.view.Members[i].Inc && inc > g.later[id] {
		g.later[id] = inc
		g.stats["superseded"]++
	}
}

// maxHealth bounds the local health multiplier: suspicion waits at most
// (1 + maxHealth)·Suspect (Lifeguard's default maximum, 8).
const maxHealth = 8

// maxLearnt bounds the learnt silence: a process is suspected after at
// most maxLearnt·Suspect of silence (but for this member's own health).
const maxLearnt = 4

// suspectFor is how long view member i must stay silent to be suspected
// here: Suspect, stretched by this member's own health (Dadgar et al.,
// "Lifeguard: Local Health Awareness for More Accurate Failure Detection",
// §IV-A, Local Health Multiplier), or twice the longest silence this
// member has seen that process come back from (hear), up to
// maxLearnt·Suspect, whichever is longer. A member that was not running
// on time (its ticks came late: a flood's backlog, a loaded machine)
// takes its own slowness for others' silence less readily; the
// multiplier falls back by one for each Suspect without such a sign, so
// a member running on time detects a crash in Suspect. And a process
// that keeps coming back after silences (a starved host: its pauses are
// its normal behaviour) is waited for as long as it has shown it needs:
// the timeout adapts to the inter-arrival times observed from that
// process, as the accrual detector of Hayashibara et al. ("The φ Accrual
// Failure Detector", §III) and the adaptive timeouts of Chen, Toueg and
// Aguilera ("On the Quality of Service of Failure Detectors", §6) do,
// here with the simplest estimate, the largest gap, and a cap so that a
// crash is still found in bounded time. A process that never paused is
// suspected after Suspect as before. Not with EVS: there a member that
// is split off goes on in a component of its own and merges back, the
// silences learnt are mostly partitions, and a merge after a heal
// waits for suspicion (with it, TestSimGroups' EVS schedules missed
// their merge deadlines in 2 of 1,000 seeds of two orders, and seed 671
// of the sequencer order broke integrity across two components that
// numbered views alike, so EVS keeps Suspect).
func (g *Group) suspectFor(i int) time.Duration {
	d := g.cfg.Suspect * time.Duration(1+g.health)
	if g.cfg.bug != bugFlatSuspect && !g.cfg.EVS {
		d = max(d, min(2*g.silence[g.view.Members[i].ID], maxLearnt*g.cfg.Suspect))
	}
	return d
}

// hear records a frame of the current view from view member i: if the
// silence it ends is the longest this member has seen that process come
// back from, suspectFor learns it. A process removed for its silence
// comes back in a later view: its silence runs from when it was last
// heard in the view it was removed from (install keeps that). Only while this member runs on time
// (no late tick, full health): a silence that was this member's own
// pause (the frames were waiting for it) says nothing of the sender.
func (g *Group) hear(i int) {
	id := g.view.Members[i].ID
	gap := g.now.Sub(g.heard[i])
	if t, ok := g.gone[id]; ok {
		// It was removed for its silence and is back in a view: the
		// silence it came back from began when it was last heard then.
		gap = max(gap, g.now.Sub(t))
		delete(g.gone, id)
	}
	if g.health == 0 && !g.lastTick.IsZero() && g.now.Sub(g.lastTick) <= g.cfg.Period && gap > g.silence[id] {
		g.silence[id] = gap
	}
	g.heard[i] = g.now
}

// peerFlushing: a status of this view from a member that is flushing (it
// carries the ballot the member promised). If that change has no leader
// any more (its leader, which had suspected the acting one, heard it
// again and stepped back), nobody would end the member's flush: the
// acting leader must run a change that takes the member along
// (Nita-Rotaru's CS7610 notes, "A Membership Protocol": the view change
// ends once every process that answered is in the next view), with a
// ballot above the one promised.
func (g *Group) peerFlushing(b Ballot) {
	if b == (Ballot{}) || g.cfg.bug == bugFlushUnheard {
		return
	}
	g.maxN = max(g.maxN, b.N)
	g.flushSeen = true
}

// unhealthy raises the local health multiplier.
func (g *Group) unhealthy() {
	if g.cfg.bug == bugNoHealth {
		return
	}
	g.health = min(g.health+1, maxHealth)
	g.healthAt = g.now
}

// healthTick: a tick that comes late (over a Period after the last, where
// they are due every half Period) shows this member was not running on
// time (Lifeguard §IV-A), and its health falls; each Suspect without a
// sign of trouble restores a step.
func (g *Group) healthTick(now time.Time) {
	if !g.lastTick.IsZero() && g.inView && g.cfg.bug != bugNoHealth {
		if now.Sub(g.lastTick) > g.cfg.Period {
			g.unhealthy()
		}
	}
	if late := now.Sub(g.lastTick); !g.lastTick.IsZero() && g.inView && late > g.cfg.Period && g.cfg.bug != bugFlatSuspect {
		// Silence is counted in this member's own running time: while
		// it was not running (a pause, a starved host) it could hear
		// nobody, and what others sent meanwhile is still on its way
		// in. Without this a member that resumes suspects everyone at
		// once and proposes a needless change.
		for i := range g.heard {
			if g.heard[i] = g.heard[i].Add(late - g.cfg.Period/2); g.heard[i].After(now) {
				g.heard[i] = now
			}
		}
	}
	g.lastTick = now
	if g.health > 0 && now.Sub(g.healthAt) >= g.cfg.Suspect {
		g.health--
		g.healthAt = now
	}
}

// acting is the member that leads a change: the first in seniority that
// this member does not suspect (Nita-Rotaru's CS7610 notes: "second process on the list
// becomes the leader").
func (g *Group) acting() node.ID {
	for i, m := range g.view.Members {
		if !g.suspected(i) {
			return m.ID
		}
	}
	return g.cfg.ID
}

// leadChange starts, drives and times out a view change when this member
// is the acting leader.
func (g *Group) leadChange() {
	if g.acting() != g.cfg.ID {
		g.lead = nil
		return
	}
	if g.lead == nil {
		g.staleJoins()
		need := g.flushing || g.flushSeen || g.accepted != nil || len(g.joins) > 0 || len(g.leaves) > 0 || g.leader() != g.cfg.ID || g.mergeInto != node.None
		for i := range g.view.Members {
			need = need || g.suspected(i)
		}
		if !need || g.now.Before(g.deferUntil) {
			return
		}
		g.maxN = max(g.maxN, g.promised.N) + 1
		g.lead = &lead{ballot: Ballot{g.maxN, g.cfg.ID}, started: g.now, acks: map[node.ID]Msg{}}
		g.stats["changes"]++
		g.onPropose(g.cfg.ID, g.lead.ballot)
	}
	l := g.lead
	if g.now.Sub(l.resent) >= g.cfg.Period {
		l.resent = g.now
		for _, id := range g.others() {
			switch {
			case l.change == nil:
				if _, ok := l.acks[id]; !ok {
					g.send(id, Msg{Type: MsgPropose, View: g.view.ID, Ballot: l.ballot})
				}
			case !l.ready[id] && slices.Contains(l.change.Survivors, id):
				g.send(id, Msg{Type: MsgCommit, View: g.view.ID, Ballot: l.ballot, Change: l.change})
			}
		}
	}
	if l.change == nil {
		g.tryCommit()
	} else {
		for _, id := range l.need {
			if i := g.pos[id]; !l.ready[id] && g.suspected(i) {
				// A survivor died before it was ready: start over.
				g.lead = nil
				return
			}
		}
	}
}

// tryCommit ends phase I once every member not suspected has answered and
// they are a majority of the view.
func (g *Group) tryCommit() {
	l := g.lead
	for i, m := range g.view.Members {
		if _, ok := l.acks[m.ID]; !ok && !g.suspected(i) {
			return
		}
	}
	// A member that quit having promised nothing in this view answers
	// no proposal of it, so it is in no change's majority: leave it out
	// of the count. Safe: if changes A and B had disjoint answers, each
	// more than half of the members less quitters it left out (all of
	// them among the true quitters Q, which answer neither), then
	// |A|+|B| > n−|Q|, yet both lie among the n−|Q| others.
	count := len(g.view.Members)
	for m, out := range g.quit {
		if _, acked := l.acks[m.ID]; out && !acked && g.cfg.bug != bugQuitCounted {
			count--
		}
	}
	if g.cfg.bug == bugQuitSuspected {
		count = len(l.acks)
		for i, m := range g.view.Members {
			if _, acked := l.acks[m.ID]; acked || !g.suspected(i) {
				count++
			}
		}
		count -= len(l.acks)
	}
	if 2*len(l.acks) <= count && !g.cfg.EVS {
		return // a minority cannot change the view (primary component)
	}
	// Nita-Rotaru's CS7610 notes, leader failure: a change some member has accepted may
	// already be installed somewhere. Take the highest accepted one, as
	// long as the members that answered hold every message of its cut
	// (if one of its survivors lacks some, nobody installed it: an install
	// waits until every survivor is ready).
	var best *Change
	var bestB Ballot
	for _, a := range l.acks {
		if a.Change != nil && (best == nil || bestB.less(a.Accepted)) {
			best, bestB = a.Change, a.Accepted
		}
	}
	if best != nil {
		ok := true
		for id, a := range l.acks {
			if slices.Contains(best.Survivors, id) && !covers(a.Recv, a.Ordered, a.Finals, best) {
				ok = false
			}
		}
		if ok {
			l.change = best
			for id := range l.acks {
				if slices.Contains(best.Survivors, id) {
					l.need = append(l.need, id)
				}
			}
		}
	}
	if l.change == nil {
		c := &Change{Cut: make([]uint64, len(g.view.Members))}
		for _, m := range g.view.Members {
			a, ok := l.acks[m.ID]
			if !ok {
				continue
			}
			c.Survivors = append(c.Survivors, m.ID)
			for j := range c.Cut {
				c.Cut[j] = max(c.Cut[j], a.Recv[j])
			}
			c.OrderCut = max(c.OrderCut, a.Ordered)
			if g.order.agreed() != nil && len(a.Finals) == len(g.view.Members) {
				if c.FinalCut == nil {
					c.FinalCut = make([]uint64, len(g.view.Members))
				}
				for j := range c.FinalCut {
					c.FinalCut[j] = max(c.FinalCut[j], a.Finals[j])
				}
			}
		}
		joinIDs := map[node.ID]bool{}
		var joined []Member
		for m := range g.joins {
			joinIDs[m.ID] = true
			joined = append(joined, m)
		}
		joined = newestPerID(joined)
		c.Next.ID = g.view.ID + 1
		for _, m := range g.view.Members {
			if _, ok := l.acks[m.ID]; ok && !g.leaves[m.ID] && !joinIDs[m.ID] && !(g.cfg.bug == bugDropLive && m.ID != g.cfg.ID && m == g.view.Members[len(g.view.Members)-1] && len(l.acks) < len(g.view.Members) && 2*(len(l.acks)-1) > len(g.view.Members)) {
				c.Next.Members = append(c.Next.Members, m)
			} else {
				c.Next.Left = append(c.Next.Left, m)
			}
		}
		c.Next.Members = append(c.Next.Members, joined...)
		c.Next.Joined = joined
		for _, m := range joined {
			c.Merged = c.Merged || g.mergeJoins[m]
		}
		whole := len(c.Survivors) == len(g.view.Members)
		if g.mergeInto != node.None && !whole && g.cfg.bug != bugMergePartial {
			// EVS: a component merges as a whole view. Members that did
			// not answer are in another component by now (or on their
			// way to one: a straggler that installs this view late);
			// were this change to take the rest into the other
			// component, such a member would later leave this view by
			// a merge of its own, and the two merges would look to the
			// checks (CheckViews keys a merge by the view it leaves) as
			// one that the members moved on from together with
			// different deliveries (TestSimGroups none/evs seed 85,
			// once MsgGone no longer ended stragglers, laggard). So this
			// change installs the view of those that answered, and the
			// merge follows from there (install keeps mergeInto):
			// "each subset continues observing the (partitionable)
			// Virtual Synchrony model separately. Upon re-merging, the
			// merged set will be virtually synchronized from the merging
			// membership change message" (Nita-Rotaru's CS7610 notes,
			// "Partitions").
			g.mergeNext = g.mergeInto
		} else if g.mergeInto != node.None {
			// EVS: the whole component leaves to join another (no joins:
			// the joiners will find the merged group).
			c.Next = View{ID: g.view.ID + 1}
			for _, m := range g.view.Members {
				c.Next.Left = append(c.Next.Left, m)
			}
			c.Into, c.Merged = g.mergeInto, false
		}
		l.change, l.need = c, slices.Clone(c.Survivors)
	}
	l.ready = map[node.ID]bool{}
	l.resent = time.Time{}
	g.stats["commits"]++
	for _, id := range l.change.Survivors {
		g.send(id, Msg{Type: MsgCommit, View: g.view.ID, Ballot: l.ballot, Change: l.change})
	}
	l.resent = g.now
	g.onCommit(g.cfg.ID, l.ballot, l.change) // last: it may install the next view
}

// newestPerID sorts ms by ID and keeps the newest incarnation of each
// process (two incarnations of one process never share a view).
func newestPerID(ms []Member) []Member {
	slices.SortFunc(ms, func(a, b Member) int {
		if a.ID != b.ID {
			return int(a.ID) - int(b.ID)
		}
		return cmp.Compare(a.Inc, b.Inc)
	})
	var out []Member
	for i, m := range ms {
		if i+1 < len(ms) && ms[i+1].ID == m.ID {
			continue
		}
		out = append(out, m)
	}
	return out
}

// covers reports whether recv, ordered and finals reach the change's cut.
func covers(recv []uint64, ordered uint64, finals []uint64, c *Change) bool {
	if len(recv) != len(c.Cut) || ordered < c.OrderCut {
		return false
	}
	if len(c.FinalCut) > 0 {
		if len(finals) != len(c.FinalCut) {
			return false
		}
		for j, v := range c.FinalCut {
			if finals[j] < v {
				return false
			}
		}
	}
	for j, v := range c.Cut {
		if recv[j] < v {
			return false
		}
	}
	return true
}
