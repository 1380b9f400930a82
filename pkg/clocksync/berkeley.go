package clocksync

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/roundtable-go/roundtable/pkg/clock"
	"github.com/roundtable-go/roundtable/pkg/election"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// The Berkeley algorithm (Tanenbaum ch. 6, "The Berkeley Algorithm"): a time
// daemon (the master) polls every machine, itself included, for its clock;
// corrects each reading for half the round trip; averages the readings,
// leaving out those further than MaxDeviation from the median; and tells
// every machine how much to adjust. Machines slew by that much (package
// Discipline: never backwards). Without a fixed master, the master is the
// leader of an embedded bully election and is re-elected when it fails.

// BerkeleyConfig configures a Berkeley machine. Zero values mean the default.
type BerkeleyConfig struct {
	ID    node.ID
	Peers []node.ID
	// Master is the fixed time daemon; None: elect one (bully).
	Master node.ID
	// Interval between polls (default 1s).
	Interval time.Duration
	// MaxDeviation: readings further than this from the median are left
	// out of the average (default 100ms).
	MaxDeviation time.Duration
	// The node's virtual clock: system time seen through Skew and DriftPPM
	// from Epoch (package clock's Skewed), then disciplined.
	Skew     time.Duration
	DriftPPM float64
	Epoch    time.Time
	// Discipline settings (MaxSlewPPM, MakeStep).
	Discipline Discipline
	// Election timing when Master is None.
	Heartbeat, Timeout time.Duration
	Rand               *rand.Rand
}

// AdjustEvent reports an adjustment this node was told to make.
type AdjustEvent struct {
	Event  string        `json:"event"` // "adjust"
	Master node.ID       `json:"master"`
	Delta  time.Duration `json:"-"`
	Used   int           `json:"used"` // readings averaged (master only)
}

// MarshalJSON writes Delta in seconds (delta_s), the unit of every
// duration the tools print.
func (e AdjustEvent) MarshalJSON() ([]byte, error) {
	type plain AdjustEvent
	return json.Marshal(struct {
		plain
		DeltaS float64 `json:"delta_s"`
	}{plain(e), e.Delta.Seconds()})
}

func (e AdjustEvent) Kind() string { return "adjust" }
func (e AdjustEvent) String() string {
	return fmt.Sprintf("adjust %+.6fs master %d", e.Delta.Seconds(), e.Master)
}

// Berkeley is one node's Berkeley time daemon state.
type Berkeley struct {
	cfg    BerkeleyConfig
	others []node.ID
	el     *election.Machine
	elWake time.Time
	master node.ID
	raw    clock.Skewed
	d      Discipline

	// master state
	seq      uint64
	sentAt   time.Time                 // local disciplined time the poll went out
	readings map[node.ID]time.Duration // where each clock is, relative to ours
	pending  map[node.ID]time.Duration // and how much it is still slewing
	nextPoll time.Time
	collect  time.Time

	seen time.Time // the latest system time seen, for Status

	out    []node.Envelope[BerkeleyMsg]
	events []node.Event
}

// NewBerkeley returns a Berkeley machine; the runner must call Tick once.
func NewBerkeley(cfg BerkeleyConfig) (*Berkeley, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.MaxDeviation <= 0 {
		cfg.MaxDeviation = 100 * time.Millisecond
	}
	if !slices.Contains(cfg.Peers, cfg.ID) {
		return nil, fmt.Errorf("clocksync: id %d not among the peers", cfg.ID)
	}
	if cfg.Master != node.None && !slices.Contains(cfg.Peers, cfg.Master) {
		return nil, fmt.Errorf("clocksync: master %d not among the peers", cfg.Master)
	}
	if cfg.Discipline.PhaseGain == 0 {
		// The master's adjustment is already an average: apply it whole.
		cfg.Discipline.PhaseGain = 1
	}
	b := &Berkeley{cfg: cfg, master: cfg.Master, d: cfg.Discipline,
		raw: clock.Skewed{Offset: cfg.Skew, DriftPPM: cfg.DriftPPM, Epoch: cfg.Epoch}}
	for _, p := range cfg.Peers {
		if p != cfg.ID && !slices.Contains(b.others, p) {
			b.others = append(b.others, p)
		}
	}
	slices.Sort(b.others)
	if cfg.Master == node.None {
		el, err := election.New(election.Config{ID: cfg.ID, Peers: cfg.Peers, Heartbeat: cfg.Heartbeat, Timeout: cfg.Timeout, Rand: cfg.Rand})
		if err != nil {
			return nil, err
		}
		b.el = el
	}
	return b, nil
}

// Local is this node's disciplined clock at system time now.
func (b *Berkeley) Local(now time.Time) time.Time { return b.d.Now(b.raw.At(now)) }

// Master is the time daemon this node follows.
func (b *Berkeley) Master() node.ID { return b.master }

// Status implements node.Statuser: the node's clock relative to the
// system clock of its host.
func (b *Berkeley) Status() any {
	return map[string]any{"id": b.cfg.ID, "master": b.master, "freq_ppm": b.d.FrequencyPPM(),
		"offset_ns": b.Local(b.seen).Sub(b.seen).Nanoseconds(), "at": b.seen}
}

func (b *Berkeley) send(to node.ID, m BerkeleyMsg) {
	b.out = append(b.out, node.Envelope[BerkeleyMsg]{From: b.cfg.ID, To: to, Msg: m})
}

// Step implements node.Machine.
func (b *Berkeley) Step(now time.Time, in node.Envelope[BerkeleyMsg]) error {
	b.seen = now
	if !slices.Contains(b.others, in.From) {
		return fmt.Errorf("clocksync: message from %d, not a peer", in.From)
	}
	m := in.Msg
	switch {
	case m.Type < 32:
		if b.el == nil {
			return nil
		}
		err := b.el.Step(now, node.Envelope[election.Msg]{From: in.From, To: in.To, Msg: m.Elect})
		b.afterElection(now)
		return err
	case m.Type == BerkeleyPoll:
		if in.From == b.master {
			// The reading says where this clock is and how much of its
			// last adjustment it has still to slew.
			b.send(in.From, BerkeleyMsg{Type: BerkeleyReading, Seq: m.Seq, Time: b.Local(now), Delta: b.d.Pending(b.raw.At(now))})
		}
	case m.Type == BerkeleyReading:
		if b.master == b.cfg.ID && m.Seq == b.seq && b.readings != nil {
			// Cristian's correction: the reading is half a round trip old.
			recv := b.Local(now)
			est := m.Time.Add(recv.Sub(b.sentAt) / 2)
			b.readings[in.From] = est.Sub(recv)
			b.pending[in.From] = m.Delta
			if len(b.readings) == len(b.others)+1 {
				b.average(now)
			}
		}
	case m.Type == BerkeleyAdjust:
		if in.From == b.master {
			b.d.Update(b.raw.At(now), m.Delta)
			b.events = append(b.events, AdjustEvent{Event: "adjust", Master: in.From, Delta: m.Delta})
		}
	}
	return nil
}

func (b *Berkeley) afterElection(now time.Time) {
	rd := b.el.Ready()
	for _, env := range rd.Msgs {
		b.out = append(b.out, node.Envelope[BerkeleyMsg]{From: env.From, To: env.To, Msg: BerkeleyMsg{Type: uint8(env.Msg.Type), Elect: env.Msg}})
	}
	b.elWake = rd.Wake
	for _, ev := range rd.Events {
		if le, ok := ev.(election.LeaderEvent); ok {
			b.master = le.Leader
			if le.Self {
				b.nextPoll = now
			}
		}
	}
}

// average ends a polling round: median, outliers out, mean, adjustments.
// Clocks still slewing an earlier adjustment count where they are headed
// (reading + pending), so rate-limited slews do not drag the average.
func (b *Berkeley) average(now time.Time) {
	pos, pend := b.readings, b.pending
	b.readings, b.pending, b.collect = nil, nil, time.Time{}
	if 2*len(pos) <= len(b.cfg.Peers) {
		// Too few answers this round: without a majority the median
		// could be an outlier's. Skip it.
		return
	}
	ids := make([]node.ID, 0, len(pos))
	for id := range pos {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// Outliers are judged by where clocks are (Tanenbaum ch. 6: readings beyond
	// the maximum deviation are left out); the average is taken over
	// where the others are headed.
	now0 := make([]time.Duration, 0, len(ids))
	for _, id := range ids {
		now0 = append(now0, pos[id])
	}
	sorted := slices.Clone(now0)
	slices.Sort(sorted)
	median := sorted[len(sorted)/2]
	var sum time.Duration
	used := 0
	for _, id := range ids {
		if d := pos[id]; d-median <= b.cfg.MaxDeviation && median-d <= b.cfg.MaxDeviation {
			sum += pos[id] + pend[id]
			used++
		}
	}
	avg := sum / time.Duration(used)
	for _, id := range ids {
		delta := avg - pos[id]
		if id == b.cfg.ID {
			b.d.Update(b.raw.At(now), delta)
			b.events = append(b.events, AdjustEvent{Event: "adjust", Master: b.cfg.ID, Delta: delta, Used: used})
			continue
		}
		b.send(id, BerkeleyMsg{Type: BerkeleyAdjust, Delta: delta})
	}
}

// Tick implements node.Machine.
func (b *Berkeley) Tick(now time.Time) {
	b.seen = now
	if b.el != nil {
		b.el.Tick(now)
		b.afterElection(now)
	}
	if b.master != b.cfg.ID {
		return
	}
	if !b.collect.IsZero() && !now.Before(b.collect) && b.readings != nil {
		b.average(now) // whoever answered in time
	}
	if !now.Before(b.nextPoll) {
		b.seq++
		b.sentAt = b.Local(now)
		b.readings = map[node.ID]time.Duration{b.cfg.ID: 0}
		b.pending = map[node.ID]time.Duration{b.cfg.ID: b.d.Pending(b.raw.At(now))}
		for _, p := range b.others {
			b.send(p, BerkeleyMsg{Type: BerkeleyPoll, Seq: b.seq})
		}
		b.collect = now.Add(b.cfg.Interval / 2)
		b.nextPoll = now.Add(b.cfg.Interval)
	}
}

// Ready implements node.Machine.
func (b *Berkeley) Ready() node.Ready[BerkeleyMsg] {
	r := node.Ready[BerkeleyMsg]{Msgs: b.out, Events: b.events, Wake: b.elWake}
	b.out, b.events = nil, nil
	for _, t := range []time.Time{b.nextPoll, b.collect} {
		if b.master == b.cfg.ID && !t.IsZero() && (r.Wake.IsZero() || t.Before(r.Wake)) {
			r.Wake = t
		}
	}
	return r
}
