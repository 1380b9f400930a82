package group

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/scenariotest"
)

// sendCommand is "send N PAYLOAD...": member N multicasts each PAYLOAD,
// in the request msg builds.
func sendCommand[M any](msg func([]mcast.Item) M) func(*sim.Run[M], []string) error {
	return func(r *sim.Run[M], args []string) error {
		if len(args) < 2 {
			return fmt.Errorf("usage: send N PAYLOAD...")
		}
		id, err := r.ID(args[0])
		if err != nil {
			return err
		}
		var items []mcast.Item
		for _, p := range args[1:] {
			items = append(items, mcast.Item{Payload: []byte(p)})
		}
		return r.Inject(id, msg(items))
	}
}

// groupConfig is the group of a transcript, from its file's name:
// isis-* (ISIS total order), totem-* (TOTEM with safe delivery), safe-*
// (safe delivery, no total order), seq-* (the fixed sequencer), lamport-*
// (Lamport total order), evs-* (extended virtual synchrony), window-*
// (FIFO with a Window of 128 messages); anything else FIFO per sender.
func groupConfig(base string) Config {
	switch {
	case strings.HasPrefix(base, "isis-"):
		return Config{Total: TotalISIS}
	case strings.HasPrefix(base, "totem-"):
		return Config{Total: TotalTotem, Safe: true}
	case strings.HasPrefix(base, "safe-"):
		return Config{Safe: true}
	case strings.HasPrefix(base, "seq-"):
		return Config{Total: TotalSequencer}
	case strings.HasPrefix(base, "lamport-"):
		return Config{Total: TotalLamport}
	case strings.HasPrefix(base, "evs-"):
		return Config{EVS: true}
	case strings.HasPrefix(base, "window-"):
		return Config{Window: 128}
	}
	return Config{}
}

// transcript plays the group transcripts: member 1 founds the group, the
// others join through everyone; base is the configuration (groupConfig),
// bug a planted bug. A checker sees every view installed (one view per
// number: primary component, but with EVS), and with safe delivery every
// delivery (checked at once against what the view's members hold). Each
// incarnation's log is kept as CheckViews reads it; "check" judges the
// logs so far. A member that is done exits, as 'mcast run' does (it
// crashes here).
func transcript(base Config, bug bug) *sim.Scenario[Msg] {
	l := scenariotest.Links{}
	logs := map[Member][]Record{}
	cur := map[node.ID]Member{}
	transitional := map[Member]uint64{}
	removed := map[Member]uint64{}        // the view an incarnation was removed from
	missed := map[Member]map[Stamp]bool{} // what it reported missed there (MissedEvent)
	lost := map[Member]map[uint64]bool{}  // and which of its own it reported lost (LostEvent)
	ended := map[node.ID]time.Time{}      // when a member's input ended (end N)
	views := map[uint64][]Member{}        // the members of each view number, as first installed
	var failed error
	quiet := false // "quiet on": sends and deliveries counted, not printed
	delivered := map[node.ID]int{}
	burst := map[node.ID]int{} // messages a member's bursts have offered
	return &sim.Scenario[Msg]{
		Codec:   Codec{},
		Options: sim.Options{Latency: l.Latency},
		Event: func(ev node.Event) string {
			switch ev.(type) {
			case DeliverEvent, SendEvent:
				if quiet {
					return ""
				}
			}
			return fmt.Sprint(ev)
		},
		Machine: func(id node.ID, peers []node.ID, inc int, _ *rand.Rand) node.Machine[Msg] {
			cfg := base
			cfg.ID, cfg.Inc, cfg.Found, cfg.Contacts, cfg.bug = id, uint64(inc), id == 1 && inc == 1, peers, bug
			m, err := New(cfg)
			if err != nil {
				panic(err)
			}
			cur[id] = m.me
			return m
		},
		Setup: func(r *sim.Run[Msg]) {
			group := func(id node.ID) *Group { g, _ := r.Sim.Machine(id).(*Group); return g }
			// Safe delivery (Nita-Rotaru's CS7610 notes, TOTEM's and
			// Spread's): a message delivered before the view's
			// transitional configuration is held by every member of the
			// view up at that instant.
			safe := func(p Member, e DeliverEvent) error {
				if !base.Safe || transitional[p] == e.View {
					return nil
				}
				for _, id := range r.Sim.IDs() {
					g := group(id)
					if g == nil || !r.Sim.Alive(id) || !g.inView || g.view.ID != e.View {
						continue
					}
					if j, ok := g.pos[e.Sender]; !ok || g.recv[j] < e.Seq {
						return fmt.Errorf("safe delivery: member %d delivered %d/%d/%d while member %d of the view had not received it",
							p.ID, e.View, e.Sender, e.Seq, id)
					}
				}
				return nil
			}
			r.Sim.Invariant = func() error { return failed }
			r.Sim.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
				p := cur[id]
				switch e := ev.(type) {
				case SendEvent:
					logs[p] = append(logs[p], Record{Kind: VSend, View: e.View, Seq: e.Seq, Payload: e.Payload})
				case DeliverEvent:
					delivered[id]++
					if err := safe(p, e); err != nil {
						return err
					}
					logs[p] = append(logs[p], Record{Kind: VDeliver, View: e.View, Sender: e.Sender, Seq: e.Seq, Payload: e.Payload})
				case TransitionalEvent:
					transitional[p] = e.View
					logs[p] = append(logs[p], Record{Kind: VTransitional, View: e.View, Members: e.Members})
				case ViewEvent:
					logs[p] = append(logs[p], Record{Kind: VView, View: e.View, Members: e.Members})
					// Primary component (doc.go: a view changes only with a
					// majority of it): one view per number, but with EVS.
					if was, ok := views[e.View]; ok && !base.EVS && !sameMembers(was, e.Members) {
						return fmt.Errorf("primary component: view %d is %s at member %d, but %s elsewhere", e.View, idList(e.Members), id, idList(was))
					} else if !ok {
						views[e.View] = e.Members
					}
				case LeftEvent:
					rec := Record{Kind: VLeft, View: e.View}
					if e.Leader != nil {
						rec.Leader = *e.Leader
					}
					logs[p] = append(logs[p], rec)
				case MergeEvent:
					logs[p] = append(logs[p], Record{Kind: VMerge, View: e.View, Members: e.Members})
					if e.Into != node.None {
						logs[p] = append(logs[p], Record{Kind: VLeft, View: e.View + 1})
						cur[id] = Member{id, e.Inc}
					}
				case MissedEvent:
					if missed[p] == nil {
						missed[p] = map[Stamp]bool{}
					}
					for _, q := range e.Seqs {
						missed[p][Stamp{e.Sender, q}] = true
					}
				case LostEvent:
					if lost[p] == nil {
						lost[p] = map[uint64]bool{}
					}
					for _, q := range e.Seqs {
						lost[p][q] = true
					}
				case RemovedEvent:
					removed[p] = e.View
					cur[id] = Member{id, e.Inc}
				case mcast.DoneEvent:
					// 'mcast run' exits here: nobody is left to answer
					// stragglers.
					r.Sim.Crash(id)
				}
				return nil
			}
		},
		Commands: map[string]func(*sim.Run[Msg], []string) error{
			"send": sendCommand(func(items []mcast.Item) Msg { return Msg{Type: MsgSend, Items: items} }),
			// burst N K: member N multicasts K more messages (m1, m2, ...
			// on from its last burst), one request each, at one instant,
			// until its window refuses one.
			"burst": func(r *sim.Run[Msg], args []string) error {
				if len(args) != 2 {
					return fmt.Errorf("usage: burst N K")
				}
				id, err := r.ID(args[0])
				if err != nil {
					return err
				}
				k, err := strconv.Atoi(args[1])
				if err != nil || k < 1 || k > 10000 {
					return fmt.Errorf("burst wants a count from 1 to 10000, not %q", args[1])
				}
				for i := 1; i <= k; i++ {
					if err := r.Inject(id, Msg{Type: MsgSend, Items: []mcast.Item{{Payload: []byte(fmt.Sprintf("m%d", burst[id]+1))}}}); err != nil {
						r.Printf("%d: %d of %d taken, m%d refused", id, i-1, k, burst[id]+1)
						return nil
					}
					burst[id]++
				}
				r.Printf("%d: %d of %d taken", id, k, k)
				return nil
			},
			// quiet on|off: count sends and deliveries without printing
			// them (delivered shows the counts), or print them again.
			"quiet": func(r *sim.Run[Msg], args []string) error {
				if len(args) != 1 || args[0] != "on" && args[0] != "off" {
					return fmt.Errorf("usage: quiet on|off")
				}
				quiet = args[0] == "on"
				return nil
			},
			// delivered: how many messages each member has delivered.
			"delivered": func(r *sim.Run[Msg], args []string) error {
				for _, id := range r.Sim.IDs() {
					r.Printf("%d: %d delivered", id, delivered[id])
				}
				return nil
			},
			// end N: member N's input ends; it leaves the group.
			"end": func(r *sim.Run[Msg], args []string) error {
				if len(args) != 1 {
					return fmt.Errorf("usage: end N")
				}
				id, err := r.ID(args[0])
				if err != nil {
					return err
				}
				ended[id] = r.Sim.Now()
				return r.Inject(id, Msg{Type: MsgEnd})
			},
			// quit N: member N says it quits and stops (MsgAbandon: its
			// reader stalled).
			"quit": func(r *sim.Run[Msg], args []string) error {
				if len(args) != 1 {
					return fmt.Errorf("usage: quit N")
				}
				id, err := r.ID(args[0])
				if err != nil {
					return err
				}
				return r.Inject(id, Msg{Type: MsgAbandon})
			},
			"slow": scenariotest.SlowCommand[Msg](l),
			// check: CheckViews on the logs so far, the members up (and
			// not left) as the final ones; what removed members report
			// (checkRemoved); every member whose input ended 4·Suspect
			// ago has left, and every other member up is in a view.
			"check": func(r *sim.Run[Msg], args []string) error {
				final := map[Member]bool{}
				for _, id := range r.Sim.IDs() {
					if g, ok := r.Sim.Machine(id).(*Group); ok && r.Sim.Alive(id) && !g.done {
						final[cur[id]] = true
					}
				}
				err := CheckViewsEVS(base.Total != TotalNone, base.EVS, logs, final)
				if v, ok := err.(*mcast.Violation); ok {
					err = fmt.Errorf("%s", v.Detail())
				}
				if err == nil {
					err = checkRemoved(logs, removed, missed, lost)
				}
				if err == nil {
					err = checkTransitional(logs)
				}
				// A member whose input ended leaves within 4·Suspect (doc.go:
				// a member that leaves lingers until the others confirm).
				for _, id := range r.Sim.IDs() {
					g, ok := r.Sim.Machine(id).(*Group)
					if at, end := ended[id]; err == nil && end && ok && r.Sim.Alive(id) && !g.done && r.Sim.Now().Sub(at) > 4*g.cfg.Suspect {
						err = fmt.Errorf("member %d's input ended %v ago and it has not left", id, r.Sim.Now().Sub(at))
					}
					if _, end := ended[id]; err == nil && !end && ok && r.Sim.Alive(id) && !g.done && !g.inView {
						err = fmt.Errorf("member %d is in no view", id)
					}
				}
				if err == nil {
					r.Printf("check: ok")
				}
				scenariotest.FailNow(r, &failed, err)
				return nil
			},
		},
	}
}

// checkRemoved judges what a member the group went on without says of its
// last view (doc.go, the gaps filled: a removed member reports the
// messages the members that stay delivered there and it did not,
// MissedEvent; and its own messages they did not deliver are sent again
// from its next incarnation or reported, LostEvent, never dropped in
// silence).
func checkRemoved(logs map[Member][]Record, removed map[Member]uint64, missed map[Member]map[Stamp]bool, lost map[Member]map[uint64]bool) error {
	delivered := func(q Member, v uint64) map[Stamp]bool {
		out := map[Stamp]bool{}
		for _, rec := range logs[q] {
			if rec.Kind == VDeliver && rec.View == v {
				out[Stamp{rec.Sender, rec.Seq}] = true
			}
		}
		return out
	}
	for _, p := range slices.SortedFunc(maps.Keys(removed), func(a, b Member) int { return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Inc, b.Inc)) }) {
		v := removed[p]
		mine := delivered(p, v)
		stayed := map[Stamp]bool{}
		for q := range logs {
			if q.ID != p.ID && removed[q] != v {
				maps.Copy(stayed, delivered(q, v))
			}
		}
		for _, st := range slices.SortedFunc(maps.Keys(stayed), func(a, b Stamp) int { return cmp.Or(cmp.Compare(a.Sender, b.Sender), cmp.Compare(a.Seq, b.Seq)) }) {
			if !mine[st] && !missed[p][st] {
				return fmt.Errorf("removed member %d/%d did not deliver %d/%d/%d, which the members that stay delivered, and did not report it missed", p.ID, p.Inc, v, st.Sender, st.Seq)
			}
		}
		for _, rec := range logs[p] {
			if rec.Kind != VSend || rec.View != v || stayed[Stamp{p.ID, rec.Seq}] || lost[p][rec.Seq] {
				continue
			}
			again := false
			for q, recs := range logs {
				for _, later := range recs {
					again = again || q.ID == p.ID && q.Inc > p.Inc && later.Kind == VSend && bytes.Equal(later.Payload, rec.Payload)
				}
			}
			if !again {
				return fmt.Errorf("removed member %d/%d's message %d/%d/%d (%s) was delivered by none of the members that stay, neither sent again nor reported lost", p.ID, p.Inc, v, p.ID, rec.Seq, rec.Payload)
			}
		}
	}
	return nil
}

// checkTransitional: a member's transitional configuration is exactly
// the members that move with it from the view into the same next one
// (Nita-Rotaru's CS7610 notes, extended virtual synchrony's transitional
// configuration), judged from the views each incarnation installed; a
// view is its number and its leader.
func checkTransitional(logs map[Member][]Record) error {
	type view struct {
		n      uint64
		leader Member
	}
	// moves[p] maps each view p installed to the one it installed next.
	moves := map[Member]map[view]view{}
	for p, recs := range logs {
		moves[p] = map[view]view{}
		var last *view
		for _, rec := range recs {
			if rec.Kind != VView || len(rec.Members) == 0 {
				continue
			}
			v := view{rec.View, rec.Members[0]}
			if last != nil {
				moves[p][*last] = v
			}
			last = &v
		}
	}
	for _, p := range slices.SortedFunc(maps.Keys(logs), func(a, b Member) int { return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Inc, b.Inc)) }) {
		var cur view
		for _, rec := range logs[p] {
			if rec.Kind == VView && len(rec.Members) > 0 {
				cur = view{rec.View, rec.Members[0]}
			}
			if rec.Kind != VTransitional || rec.View != cur.n {
				continue
			}
			next, ok := moves[p][cur]
			if !ok {
				continue // it ended in this view
			}
			var with []Member
			for q, m := range moves {
				if n, ok := m[cur]; ok && n == next {
					with = append(with, q)
				}
			}
			if !sameMembers(with, rec.Members) {
				slices.SortFunc(with, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
				return fmt.Errorf("transitional set: member %d/%d's for view %d is %s, but %s move with it to view %d", p.ID, p.Inc, cur.n, idList(rec.Members), idList(with), next.n)
			}
		}
	}
	return nil
}

// TestScenarioTranscripts plays testdata/*.txt.
func TestScenarioTranscripts(t *testing.T) {
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), func(path string, rewrite bool) (string, string, error) {
		return transcript(groupConfig(filepath.Base(path)), 0).RunFile(path, rewrite)
	})
}

// TestScenarioPlantedBugs: the planted bugs of the group protocols change
// the transcript that exercises them (docs/testing.md lists them).
func TestScenarioPlantedBugs(t *testing.T) {
	play := func(path string, b bug) (string, string, error) {
		return transcript(groupConfig(filepath.Base(path)), b).RunFile(path, false)
	}
	scenariotest.CatchPlanted(t, play, []scenariotest.Bug[bug]{
		{Name: "bugISISEarly", File: "isis-flush-cut.txt", Plant: bugISISEarly, Shows: "+300ms 2: 2 2.1 a"},
		{Name: "bugTotemStaleAru", File: "totem-lost-token.txt", Plant: bugTotemStaleAru, Shows: "+615ms 1: 1 2.1 b"}, // delivered while 3 lacks it
		{Name: "bugSafeSkipLast", File: "safe-transitional.txt", Plant: bugSafeSkipLast, Shows: "failed: sim seed 0 at +302ms: node 2: safe delivery: member 2 delivered 2/2/1 while member 3 of the view had not received it"},
		{Name: "bugTransWholeView", File: "safe-transitional.txt", Plant: bugTransWholeView, Shows: "failed: sim seed 0 at +800ms: transitional set: member 1/1's for view 2 is [{1 1} {2 1} {3 1}], not all of them in the next view 3"},
		{Name: "bugEarlyInstall", File: "seq-removed.txt", Plant: bugEarlyInstall, Shows: "failed: sim seed 0 at +850ms: integrity: member 5/1 delivered 2/4/1 with another payload"}, // installed before 5 held y
		{Name: "bugFlushDeliver", File: "seq-removed.txt", Plant: bugFlushDeliver, Shows: "+475ms 5: 4 2.1 y"},                                                                        // during the flush, not at the install
		{Name: "bugQuitSuspected", File: "seq-removed.txt", Plant: bugQuitSuspected, Shows: "failed: sim seed 0 at +476ms: node 1: primary component: view 3 is 1,2,4,5 at member 1, but 3 elsewhere"},
		{Name: "bugNoRequeue", File: "seq-removed.txt", Plant: bugNoRequeue, Shows: "failed: sim seed 0 at +850ms: removed member 3/1's message 2/3/1 (x) was delivered by none of the members that stay"},
		{Name: "bugDropLive", File: "seq-removed.txt", Plant: bugDropLive, Shows: "+476ms 1: view 3 members 1,2,4 joined - left 3,5"}, // 5 answered
		{Name: "bugNoMissed", File: "seq-removed.txt", Plant: bugNoMissed, Shows: "failed: sim seed 0 at +850ms: removed member 3/1 did not deliver 2/2/1, which the members that stay delivered, and did not report it missed"},
		{Name: "bugSkipGap", File: "seq-removed.txt", Plant: bugSkipGap, Shows: "failed: sim seed 0 at +850ms: agreed order: member 1/1 delivered 2/4/1 before 2/2/1, member 5/1 the other way"},
		{Name: "bugQuitCounted", File: "quit-and-leave.txt", Plant: bugQuitCounted, Shows: "failed: sim seed 0 at +1.6s: member 1's input ended 900ms ago and it has not left"}, // "+960ms 1: minority in view 2"
		{Name: "bugNoLinger", File: "quit-and-leave.txt", Plant: bugNoLinger, Shows: "failed: sim seed 0 at +1.6s: member 2's input ended 900ms ago and it has not left"},
		{Name: "bugLamportNoAck", File: "lamport-slow-copy.txt", Plant: bugLamportNoAck, Shows: "failed: sim seed 0 at +335ms: agreed order: member 1/1 delivered 2/1/1 before 2/2/1, member 2/1 the other way"}, // "+301ms 3: 2 2.1 b"
		{Name: "bugFixedWindow", File: "window-share.txt", Plant: bugFixedWindow, Shows: "+300ms 1: 100 of 100 taken"},
		{Name: "bugFlushUnheard", File: "flush-unled.txt", Plant: bugFlushUnheard, Shows: "failed: sim seed 0 at +1.48s: agreement: members 1/1 and 2/1 end in view 2; only the first delivered 2/1/1"}, // "+920ms 2: minority in view 2"
		{Name: "bugNoHealth", File: "health-late-ticks.txt", Plant: bugNoHealth, Shows: "+650ms 3->1 propose view=2 inc=1 ballot={n=1 id=3}"},
		{Name: "bugMergeNoFlush", File: "evs-merge.txt", Plant: bugMergeNoFlush, Shows: "failed: sim seed 0 at +1.165s: virtual synchrony: members 3/1 and 4/1 moved from view 1099511627779 to 1099511627780; 4/1 delivered 1099511627779/4/1 there, 3/1 did not"},
		{Name: "bugMergeEitherWay", File: "evs-merge.txt", Plant: bugMergeEitherWay, Shows: "failed: sim seed 0 at +1.165s: member 1 is in no view"}, // "+814ms 1: merge view 3 members 1,2 into 3", and 3's into 1
		{Name: "bugTransLocal", File: "safe-one-way-cut.txt", Plant: bugTransLocal, Shows: "failed: sim seed 0 at +650ms: transitional set: member 2/1's for view 2 is 1,2, but 1,2,3 move with it to view 3"},
	})
}
