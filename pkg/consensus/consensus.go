package consensus

import (
	"cmp"
	"crypto/ed25519"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/rounds"
)

// Algo selects the algorithm.
type Algo uint8

const (
	FloodSet Algo = 1
	EIG      Algo = 2
	// Signed is Lamport–Shostak–Pease's signed-messages algorithm SM(f)
	// for every process at once (signed.go): f Byzantine faults, n > 2f.
	Signed Algo = 3
)

func (a Algo) String() string {
	switch a {
	case FloodSet:
		return "floodset"
	case EIG:
		return "eig"
	case Signed:
		return "signed"
	}
	return fmt.Sprintf("algo(%d)", uint8(a))
}

// ParseAlgo parses "floodset", "eig" or "signed".
func ParseAlgo(s string) (Algo, error) {
	switch s {
	case "floodset":
		return FloodSet, nil
	case "eig":
		return EIG, nil
	case "signed":
		return Signed, nil
	}
	return 0, fmt.Errorf("consensus: unknown algorithm %q (want floodset, eig or signed)", s)
}

// Strategy is how a Byzantine process misbehaves (EIG).
type Strategy uint8

const (
	Honest Strategy = iota
	// Silent sends nothing at all.
	Silent
	// Random sends, per recipient and entry, a random choice among its own
	// value, the lie and the default.
	Random
	// TwoFaced is honest about its own value in round 1, then tells the
	// first half of the other processes (its successors in ID order) that everyone said its own
	// value and the second half that everyone said the lie. Against n = 3,
	// f = 1 this splits the two loyal generals (Schaffernicht, Topic V's example).
	TwoFaced
	// Liar is honest in round 1 and relays the lie in place of every value.
	// With signatures, it keeps the chain it altered the value under.
	Liar
	// Forger (signed messages) tries, per recipient and round, one of the
	// forgeries signatures must stop: an altered value under its chain, a
	// signature dropped or two swapped, an entry of an earlier round
	// replayed, another process's slot in a chain signed with its own key,
	// and a value of its own with a chain too short for the round; it
	// relays the rest honestly.
	Forger
)

var strategyNames = []string{"honest", "silent", "random", "two-faced", "liar", "forger"}

func (s Strategy) String() string {
	if int(s) < len(strategyNames) {
		return strategyNames[s]
	}
	return fmt.Sprintf("strategy(%d)", uint8(s))
}

// ParseStrategy parses a --byzantine value.
func ParseStrategy(s string) (Strategy, error) {
	for i, n := range strategyNames {
		if n == s && i > 0 {
			return Strategy(i), nil
		}
	}
	return 0, fmt.Errorf("consensus: unknown Byzantine strategy %q (want silent, random, two-faced, liar or forger)", s)
}

// Rule decides FloodSet's value from the set W.
type Rule uint8

const (
	Min Rule = iota // the minimum: numeric when every value is an integer, else bytewise
	Max             // the maximum, ordered the same way
)

// Config configures a Machine. Zero values mean the default.
type Config struct {
	ID    node.ID
	Peers []node.ID // every process, this one included
	Algo  Algo      // default FloodSet
	F     int       // the number of faults tolerated; f+1 rounds are run
	Value string    // this process's input

	Rule    Rule   // FloodSet's decision rule (default Min)
	Default string // EIG: the value of silence and of no majority (default "0")

	// Start, when set, is when round 1 begins on a clock every process
	// shares (--start-at), and there is no start barrier. A message that
	// arrives earlier starts the process at once, aligned to the sender
	// ("the first message seen").
	//
	// Zero: the start barrier (doc.go). From its first Tick the process
	// announces itself to every peer once per Round and starts round 1 as
	// soon as it has heard from every peer; after Wait, as soon as n−f
	// processes (itself included) have each waited Wait; or when a round
	// message arrives. At Timeout it starts if it has heard from n−f−1
	// peers, and otherwise gives up (UndecidedEvent).
	Start   time.Time
	Wait    time.Duration // the barrier's wait for every peer; default 1s
	Timeout time.Duration // the barrier's wait for n−f processes; default 10s, at least Wait
	Round   time.Duration // round length (deadline); default 50ms

	// Fault injection for demonstrations and tests.
	CrashRound int      // crash during this round (0: never) ...
	CrashAfter int      // ... after sending to this many peers (its successors in ID order, wrapping)
	Byzantine  Strategy // EIG only
	Lie        string   // the value a Byzantine process lies with (default "lie")
	Rand       *rand.Rand

	// Unsafe allows EIG with n ≤ 3f (Signed: n ≤ 2f), to demonstrate the
	// impossibility.
	Unsafe bool

	// Signed: this process's private key, every process's public key,
	// and a name of the run that signatures are bound to (signed.go).
	Key     ed25519.PrivateKey
	Keys    map[node.ID]ed25519.PublicKey
	Session string

	bug bug // planted bugs, tests only

	// rounds overrides f+1 (negative controls in tests only).
	rounds int
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{Algo: FloodSet, Round: 50 * time.Millisecond, Wait: time.Second, Timeout: 10 * time.Second,
		Default: "0", Lie: "lie"}
}

// Validate fills defaults and checks the configuration.
func (c *Config) Validate() error {
	d := DefaultConfig()
	if c.Algo == 0 {
		c.Algo = d.Algo
	}
	if c.Round <= 0 {
		c.Round = d.Round
	}
	if c.Wait <= 0 {
		c.Wait = d.Wait
	}
	if c.Timeout <= 0 {
		c.Timeout = d.Timeout
	}
	c.Timeout = max(c.Timeout, c.Wait)
	if c.Default == "" {
		c.Default = d.Default
	}
	if c.Lie == "" {
		c.Lie = d.Lie
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(uint64(c.ID), 7))
	}
	n := len(c.Peers)
	switch {
	case c.ID == node.None || !slices.Contains(c.Peers, c.ID):
		return fmt.Errorf("consensus: id %d is not among the %d peers", c.ID, n)
	case c.F < 0 || c.F >= n:
		return fmt.Errorf("consensus: f = %d is out of range: with n = %d processes, 0 ≤ f < n", c.F, n)
	case c.Algo == EIG && n <= 3*c.F && !c.Unsafe:
		return fmt.Errorf("consensus: EIG needs n > 3f to tolerate f Byzantine processes (Lamport–Shostak–Pease: n > 3f), but n = %d and f = %d; use --unsafe to run it anyway and watch it fail", n, c.F)
	case c.Algo == Signed && n <= 2*c.F && !c.Unsafe:
		return fmt.Errorf("consensus: signed messages need n > 2f to tolerate f Byzantine processes (the honest processes must be a majority for the decision to be one of their values), but n = %d and f = %d; use --unsafe to run it anyway and watch it fail", n, c.F)
	case c.Algo == FloodSet && c.Byzantine != Honest:
		return errors.New("consensus: FloodSet tolerates crash faults only; Byzantine behaviour needs --algo eig or --signed")
	case c.Algo == Signed && len(c.Key) != ed25519.PrivateKeySize:
		return errors.New("consensus: signed messages need this process's private key")
	case c.Algo == Signed && !c.keysCover():
		return errors.New("consensus: signed messages need every peer's public key, this process's matching its private key")
	case c.Algo != Signed && c.Byzantine == Forger:
		return errors.New("consensus: the forger strategy is for signed messages (--signed)")
	case c.CrashRound < 0 || c.CrashAfter < 0:
		return errors.New("consensus: crash round and count must not be negative")
	case len(c.Value) > maxValue:
		return fmt.Errorf("consensus: value longer than %d bytes", maxValue)
	}
	return nil
}

func (c *Config) keysCover() bool {
	for _, p := range c.Peers {
		if len(c.Keys[p]) != ed25519.PublicKeySize {
			return false
		}
	}
	own, _ := c.Key.Public().(ed25519.PublicKey)
	return own.Equal(c.Keys[c.ID])
}

type bug uint8

const (
	bugOneBadSignature bug = 1 + iota // signed: accept a chain whose last signature is bad
	bugIgnoreMissed                   // decide without the rounds it needs (UndecidedEvent)
	bugRepeatSigner                   // signed: accept a chain in which a signer appears twice
)

// DecideEvent reports the decision. Text: "decide <value> round <r>".
type DecideEvent struct {
	Event    string `json:"event"` // "decide"
	Value    string `json:"value"`
	Round    int    `json:"round"`
	Rounds   int    `json:"rounds"`
	Messages int    `json:"messages"` // sent by this process
	Bytes    int    `json:"bytes"`    // payload bytes sent by this process
	Values   int    `json:"values"`   // values (entries) sent by this process
	Late     int    `json:"late"`     // messages dropped for arriving after their round
	// Missed: the peers not heard in some round (at most f, or the
	// process would not decide), treated as crashed.
	Missed   []node.ID `json:"missed,omitempty"`
	TreeSize int       `json:"tree_size,omitempty"`
	// Signed: the agreed vector (one value per process, in ID order) the
	// decision is the majority of, and the entries rejected as forged.
	Vector []string `json:"vector,omitempty"`
	Forged int      `json:"forged,omitempty"`
}

func (e DecideEvent) Kind() string   { return "decide" }
func (e DecideEvent) String() string { return fmt.Sprintf("decide %s round %d", e.Value, e.Round) }

// UndecidedEvent reports that the process ends without deciding, because
// the synchronous model's assumption failed where it could see it (doc.go):
// it missed some round's messages from more than f peers, who cannot all
// have crashed, so it was itself cut off or late; or its start barrier
// heard from fewer than n−f processes before the timeout. Text:
// "undecided round <r> missed <ids>".
type UndecidedEvent struct {
	Event  string    `json:"event"`  // "undecided"
	Round  int       `json:"round"`  // the last round it ran (0: it never started)
	Missed []node.ID `json:"missed"` // peers not heard in some round (at the barrier: not heard at all)
	F      int       `json:"f"`
	Reason string    `json:"reason"`
}

func (e UndecidedEvent) Kind() string { return "undecided" }
func (e UndecidedEvent) String() string {
	ids := make([]string, len(e.Missed))
	for i, id := range e.Missed {
		ids[i] = strconv.FormatUint(uint64(id), 10)
	}
	return fmt.Sprintf("undecided round %d missed %s", e.Round, strings.Join(ids, ","))
}

// CrashEvent reports an injected crash. Text: "crash round <r>".
type CrashEvent struct {
	Event string `json:"event"` // "crash"
	Round int    `json:"round"`
	Sent  int    `json:"sent"` // messages sent in that round before crashing
}

func (e CrashEvent) Kind() string   { return "crash" }
func (e CrashEvent) String() string { return fmt.Sprintf("crash round %d", e.Round) }

// ByzantineEvent reports that a Byzantine process finished its rounds.
type ByzantineEvent struct {
	Event    string `json:"event"` // "byzantine"
	Strategy string `json:"strategy"`
	Round    int    `json:"round"`
	Messages int    `json:"messages"`
}

func (e ByzantineEvent) Kind() string { return "byzantine" }
func (e ByzantineEvent) String() string {
	return fmt.Sprintf("byzantine %s round %d", e.Strategy, e.Round)
}

// Machine runs one process's consensus.
type Machine struct {
	cfg     Config
	others  []node.ID // peers without self, sorted
	last    int       // the final round
	sched   rounds.Schedule
	track   *rounds.Tracker
	started bool
	done    bool // decided, crashed or finished
	round   int
	held    map[int][]node.Envelope[Msg]
	missed  map[node.ID]bool // peers not heard in some round
	heard1  int              // peers heard in round 1 (0 when it began later)

	// The start barrier (Config.Start zero).
	t0        time.Time        // the first Tick (or message)
	hello     map[node.ID]bool // peers heard from
	ready     map[node.ID]bool // peers whose Wait is over
	waited    bool             // our own Wait is over
	nextHello time.Time        // when to announce ourselves again

	w    map[string]bool   // FloodSet: the values known
	tree map[string]string // EIG: label → value

	vals    map[node.ID][]string // Signed: V_j, at most two values
	relay   []SignedEntry        // accepted this round, to relay next
	outbox  []SignedEntry        // this round's, signed
	prevOut []SignedEntry        // last round's (a forger replays them)
	forged  int

	msgs, bytes, late, values int
	ignored                   int // messages from peers that had missed a round
	out                       []node.Envelope[Msg]
	events                    []node.Event
}

// New returns a Machine; the runner must call Tick once at start.
func New(cfg Config) (*Machine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Machine{cfg: cfg, last: cfg.F + 1, held: map[int][]node.Envelope[Msg]{},
		w: map[string]bool{}, tree: map[string]string{}, missed: map[node.ID]bool{},
		hello: map[node.ID]bool{}, ready: map[node.ID]bool{}}
	if cfg.rounds > 0 {
		m.last = cfg.rounds
	}
	// Others in ring order after this process: a crash "after K sends"
	// reaches this process's K successors.
	peers := cfg.sortedPeers()
	at := slices.Index(peers, cfg.ID)
	for k := 1; k < len(peers); k++ {
		m.others = append(m.others, peers[(at+k)%len(peers)])
	}
	m.track = rounds.NewTracker(m.others)
	m.sched = rounds.Schedule{Start: cfg.Start, Length: cfg.Round}
	return m, nil
}

// Status describes the machine for status queries.
func (m *Machine) Status() any {
	return map[string]any{"id": m.cfg.ID, "algo": m.cfg.Algo.String(), "round": m.round, "rounds": m.last,
		"done": m.done, "messages": m.msgs, "late": m.late, "missed": m.missedIDs(), "ignored": m.ignored}
}

// Step implements node.Machine.
func (m *Machine) Step(now time.Time, in node.Envelope[Msg]) error {
	if in.From == m.cfg.ID || !slices.Contains(m.others, in.From) {
		return fmt.Errorf("consensus: message from %d, not a peer", in.From)
	}
	if in.Msg.Hello {
		m.heardHello(now, in.From, in.Msg.Ready)
		return nil
	}
	if in.Msg.Round < 1 || in.Msg.Round > uint32(m.last) {
		return fmt.Errorf("consensus: round %d out of range 1..%d", in.Msg.Round, m.last)
	}
	if m.done {
		return nil
	}
	r := int(in.Msg.Round)
	if !m.started {
		// The first message seen starts us, aligned to its sender. Joining
		// in round r > 1, we missed every peer's messages of rounds 1..r−1.
		m.sched = rounds.Align(now, r, m.cfg.Round)
		if r > 1 {
			for _, p := range m.others {
				m.missed[p] = true
			}
		}
		m.held[r] = append(m.held[r], in)
		m.begin(now, r)
		return nil
	}
	switch {
	case r < m.round:
		m.late++ // its round is over: dropped and counted
		return nil
	case r > m.round:
		m.held[r] = append(m.held[r], in)
		return nil
	}
	m.receive(in)
	if m.track.Complete() {
		m.endRound(now)
	}
	return nil
}

// Tick implements node.Machine.
func (m *Machine) Tick(now time.Time) {
	if m.done {
		return
	}
	if !m.started {
		if m.cfg.Start.IsZero() {
			m.barrier(now)
		} else if !now.Before(m.sched.Start) {
			m.begin(now, 1)
		}
		return
	}
	for !m.done && !now.Before(m.sched.End(m.round)) {
		// Silent peers are treated as crashed from now on.
		for _, p := range m.track.Expire() {
			m.missed[p] = true
		}
		m.endRound(now)
	}
}

// Ready implements node.Machine.
func (m *Machine) Ready() node.Ready[Msg] {
	r := node.Ready[Msg]{Msgs: m.out, Events: m.events}
	m.out, m.events = nil, nil
	switch {
	case m.done:
	case !m.started && !m.cfg.Start.IsZero():
		r.Wake = m.sched.Start
	case !m.started:
		r.Wake = m.barrierWake()
	default:
		r.Wake = m.sched.End(m.round)
	}
	return r
}

// begin starts round r (catching up through any rounds skipped).
func (m *Machine) begin(now time.Time, r int) {
	if !m.started {
		m.started = true
		if m.sched.Start.IsZero() {
			m.sched = rounds.Schedule{Start: now, Length: m.cfg.Round}
		}
		switch m.cfg.Algo {
		case FloodSet:
			m.w[m.cfg.Value] = true
		case Signed:
			m.signedStart()
		default:
			m.tree[""] = m.cfg.Value
		}
	}
	m.round = r
	m.track.Begin(r)
	m.broadcast(r)
	if m.done {
		return
	}
	held := m.held[r]
	delete(m.held, r)
	for _, in := range held {
		m.receive(in)
	}
	if m.track.Complete() {
		m.endRound(now)
	}
}

func (m *Machine) endRound(now time.Time) {
	if m.round == 1 {
		m.heard1 = len(m.others) - len(m.missed)
	}
	if m.round >= m.last {
		m.finish()
		return
	}
	m.begin(now, m.round+1)
}

func (m *Machine) finish() {
	m.done = true
	if m.cfg.Byzantine != Honest {
		m.events = append(m.events, ByzantineEvent{Event: "byzantine", Strategy: m.cfg.Byzantine.String(), Round: m.round, Messages: m.msgs})
		return
	}
	missed := m.missedIDs()
	n := len(m.cfg.Peers)
	switch {
	case m.cfg.bug == bugIgnoreMissed:
	case len(missed) > m.cfg.F:
		// More than f peers silent in some round: they cannot all have
		// crashed, so the rounds were not synchronous for this process
		// and its W (or tree) may lack what the others have (doc.go).
		m.events = append(m.events, UndecidedEvent{Event: "undecided", Round: m.round, Missed: missed, F: m.cfg.F,
			Reason: fmt.Sprintf("missed the messages of %d peers in some round, more than f = %d: this process was cut off or late, and deciding could disagree with the others", len(missed), m.cfg.F)})
		return
	case 1+m.heard1 <= n/2:
		// Round 1 without a majority: the processes not heard may be
		// late rather than crashed, and run rounds of their own (doc.go).
		m.events = append(m.events, UndecidedEvent{Event: "undecided", Round: m.round, Missed: missed, F: m.cfg.F,
			Reason: fmt.Sprintf("heard %d of %d peers in round 1: with this process, not a majority of the %d, so the others may be late rather than crashed and decide apart", m.heard1, n-1, n)})
		return
	}
	ev := DecideEvent{Event: "decide", Round: m.round, Rounds: m.last, Messages: m.msgs, Bytes: m.bytes, Values: m.values, Late: m.late, Missed: missed}
	switch m.cfg.Algo {
	case FloodSet:
		ev.Value = m.floodDecision()
	case Signed:
		ev.Value, ev.Vector = m.signedDecision()
		ev.Forged = m.forged
	default:
		ev.Value = m.newval("")
		ev.TreeSize = len(m.tree)
	}
	m.events = append(m.events, ev)
}

// broadcast sends this round's message to every other process (or, when a
// crash is injected for this round, to the first CrashAfter of them).
func (m *Machine) broadcast(r int) {
	crash := m.cfg.CrashRound == r
	if m.cfg.Algo == Signed {
		m.signRound()
	}
	for i, p := range m.others {
		if crash && i >= m.cfg.CrashAfter {
			break
		}
		msg := m.message(r, p, i)
		if msg == nil {
			continue
		}
		m.msgs++
		m.values += len(msg.Entries) + len(msg.Signed)
		if _, b, err := (Codec{}).Marshal(*msg); err == nil {
			m.bytes += len(b)
		}
		m.out = append(m.out, node.Envelope[Msg]{From: m.cfg.ID, To: p, Msg: *msg})
	}
	if m.cfg.Algo == EIG && !crash {
		// Relaying to ourselves: val(σ·self) = val(σ).
		for _, e := range m.eigEntries(r) {
			m.store(append(slices.Clone(e.Label), m.cfg.ID), e.Value)
		}
	}
	if crash {
		sent := min(m.cfg.CrashAfter, len(m.others))
		m.done = true
		m.events = append(m.events, CrashEvent{Event: "crash", Round: r, Sent: sent})
	}
}

// message builds round r's message for peer p (the i-th other process).
func (m *Machine) message(r int, p node.ID, i int) *Msg {
	msg := &Msg{Round: uint32(r)}
	if m.cfg.Algo == Signed {
		msg.Signed = m.signedMessage(r, p, i)
		if msg.Signed == nil && m.cfg.Byzantine == Silent {
			return nil
		}
		return msg
	}
	if m.cfg.Algo == FloodSet {
		for _, v := range m.sortedW() {
			msg.Entries = append(msg.Entries, Entry{Value: v})
		}
		return msg
	}
	entries := m.eigEntries(r)
	switch m.cfg.Byzantine {
	case Silent:
		return nil
	case Random:
		choices := []string{m.cfg.Value, m.cfg.Lie, m.cfg.Default}
		for k := range entries {
			entries[k].Value = choices[m.cfg.Rand.IntN(len(choices))]
		}
	case TwoFaced:
		if r > 1 {
			say := m.cfg.Value
			if i >= (len(m.others)+1)/2 {
				say = m.cfg.Lie
			}
			for k := range entries {
				entries[k].Value = say
			}
		}
	case Liar:
		if r > 1 {
			for k := range entries {
				entries[k].Value = m.cfg.Lie
			}
		}
	}
	msg.Entries = entries
	return msg
}

// --- FloodSet

func (m *Machine) sortedW() []string {
	vals := make([]string, 0, len(m.w))
	for v := range m.w {
		vals = append(vals, v)
	}
	slices.SortFunc(vals, compareValues)
	return vals
}

// compareValues orders integers numerically and anything else bytewise,
// integers first.
func compareValues(a, b string) int {
	ai, aerr := strconv.ParseInt(a, 10, 64)
	bi, berr := strconv.ParseInt(b, 10, 64)
	switch {
	case aerr == nil && berr == nil:
		return cmp.Compare(ai, bi)
	case aerr == nil:
		return -1
	case berr == nil:
		return 1
	}
	return strings.Compare(a, b)
}

func (m *Machine) floodDecision() string {
	vals := m.sortedW()
	if m.cfg.Rule == Max {
		return vals[len(vals)-1]
	}
	return vals[0]
}

// --- EIG

func labelKey(l []node.ID) string {
	var b strings.Builder
	for i, id := range l {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.FormatUint(uint64(id), 10))
	}
	return b.String()
}

// eigEntries lists (σ, val(σ)) for every label σ of length r−1 not
// containing this process, in canonical order; silence is the default.
func (m *Machine) eigEntries(r int) []Entry {
	var out []Entry
	var walk func(prefix []node.ID)
	walk = func(prefix []node.ID) {
		if len(prefix) == r-1 {
			v, ok := m.tree[labelKey(prefix)]
			if !ok {
				v = m.cfg.Default
			}
			out = append(out, Entry{Label: slices.Clone(prefix), Value: v})
			return
		}
		for _, p := range m.cfg.sortedPeers() {
			if p != m.cfg.ID && !slices.Contains(prefix, p) {
				walk(append(prefix, p))
			}
		}
	}
	walk(nil)
	return out
}

func (c *Config) sortedPeers() []node.ID {
	p := slices.Clone(c.Peers)
	slices.Sort(p)
	return slices.Compact(p)
}

func (m *Machine) store(label []node.ID, v string) {
	m.tree[labelKey(label)] = v
}

// receive applies a message of the current round.
func (m *Machine) receive(in node.Envelope[Msg]) {
	if m.missed[in.From] {
		// A peer that missed a round is crashed for this process from
		// then on, as the crash model has it: were it heard again, a
		// value it sat on could reach some processes only in the last
		// round (doc.go). It stays suspected, so rounds need not wait.
		m.ignored++
		return
	}
	m.track.Heard(in.From)
	if m.cfg.Algo == Signed {
		m.signedReceive(in)
		return
	}
	if m.cfg.Algo == FloodSet {
		for _, e := range in.Msg.Entries {
			if len(e.Label) == 0 {
				m.w[e.Value] = true
			}
		}
		return
	}
	// Accept only well-formed entries: label length r−1, distinct
	// members, sender not in it. A Byzantine sender can lie about values
	// but cannot make us store a label it may not speak for.
	r := int(in.Msg.Round)
	for _, e := range in.Msg.Entries {
		if len(e.Label) != r-1 || slices.Contains(e.Label, in.From) || !m.validLabel(e.Label) {
			continue
		}
		key := labelKey(append(slices.Clone(e.Label), in.From))
		if _, dup := m.tree[key]; !dup {
			m.tree[key] = e.Value
		}
	}
}

func (m *Machine) validLabel(l []node.ID) bool {
	for i, id := range l {
		if !slices.Contains(m.cfg.Peers, id) || slices.Contains(l[:i], id) {
			return false
		}
	}
	return true
}

// newval is the recursive majority of Schaffernicht, Topic V's EIG decision: a leaf's
// value is what was stored (the default for silence); an inner node's is
// the strict majority of its children's, else the default.
func (m *Machine) newval(key string) string {
	label := parseKey(key)
	if len(label) == m.last {
		if v, ok := m.tree[key]; ok {
			return v
		}
		return m.cfg.Default
	}
	var kids []string
	for _, p := range m.cfg.sortedPeers() {
		if !slices.Contains(label, p) {
			kids = append(kids, m.newval(labelKey(append(slices.Clone(label), p))))
		}
	}
	return rounds.Majority(kids, m.cfg.Default)
}

func parseKey(k string) []node.ID {
	if k == "" {
		return nil
	}
	var out []node.ID
	for _, s := range strings.Split(k, ".") {
		v, _ := strconv.ParseUint(s, 10, 32)
		out = append(out, node.ID(v))
	}
	return out
}
