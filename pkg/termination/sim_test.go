package termination

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	_ "github.com/roundtable-go/roundtable/pkg/sim/simtest" // -seeds, -seed and SIM_SEEDS for sim.Seeds
	"github.com/roundtable-go/roundtable/pkg/wire"
)

func TestCodec(t *testing.T) {
	for _, m := range []Msg{
		{Type: MsgWork, Seq: 9},
		{Type: MsgMarker, Seq: 1 << 40, NCrashed: 1, White: []node.ID{2, 3}, Members: []node.ID{4, 5, 6}},
		{Type: MsgDone, Members: []node.ID{4}},
	} {
		typ, p, err := Codec{}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Codec{}.Unmarshal(typ, p)
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("%+v -> %+v, %v", m, got, err)
		}
	}
	if _, _, err := (Codec{}).Marshal(Msg{Type: MsgIdle}); err == nil {
		t.Fatal("a local request must not be encodable")
	}
}

func FuzzCodec(f *testing.F) {
	typ, p, _ := Codec{}.Marshal(Msg{Type: MsgMarker, Seq: 3, NCrashed: 1, Members: []node.ID{1, 2}})
	f.Add(typ, p)
	f.Fuzz(func(t *testing.T, typ uint8, p []byte) {
		if err := wire.RoundTrip[Msg](Codec{}, typ, p); err != nil {
			t.Fatal(err)
		}
	})
}

// job is one simulated distributed computation: every process starts
// active, works for a while in sessions, sends work to random others
// (within a budget of messages), and goes passive when it has no session
// left; work arriving starts a session. Up to k processes crash, each the
// marker's holder at that moment when one holds it.
type job struct {
	seed    uint64
	bug     bug
	crash   bool
	n, k    int
	crashes int
	holders int           // crashes of the marker's holder
	took    time.Duration // from the last work to the announcement everywhere
}

func (j *job) run() error {
	r := rand.New(rand.NewPCG(j.seed, 404))
	j.n = 4 + r.IntN(5)
	j.k = 1 + r.IntN(min(3, j.n-2))
	ids := make([]node.ID, j.n)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	factory := func(id node.ID, inc int, rng *rand.Rand) node.Machine[Msg] {
		m, err := New(Config{ID: id, Peers: ids, Backups: j.k, Active: true, bug: j.bug})
		if err != nil {
			panic(err)
		}
		return m
	}
	s := sim.New[Msg](sim.Options{Seed: j.seed, MinLatency: time.Millisecond,
		MaxLatency: time.Duration(2+r.IntN(15)) * time.Millisecond}, Codec{}, factory, ids...)
	mach := func(id node.ID) *Machine { return s.Machine(id).(*Machine) }
	budget := 20 + r.IntN(150)
	sessions := map[node.ID]int{}
	sentTo, recvBy := map[node.ID]int{}, map[node.ID]int{}
	lastWork := s.Now()
	var announced bool
	var session func(id node.ID)
	session = func(id node.ID) {
		sessions[id]++
		at := s.Now()
		for range r.IntN(3) {
			at = at.Add(time.Duration(1+r.IntN(20)) * time.Millisecond)
			s.At(at, func() {
				if budget == 0 || !s.Alive(id) || !mach(id).Active() {
					return
				}
				to := ids[r.IntN(len(ids))]
				if to == id {
					return
				}
				budget--
				sentTo[to]++
				lastWork = s.Now()
				s.Inject(id, Msg{Type: MsgSend, To: to})
			})
		}
		s.At(at.Add(time.Duration(1+r.IntN(20))*time.Millisecond), func() {
			if sessions[id]--; sessions[id] == 0 && s.Alive(id) {
				s.Inject(id, Msg{Type: MsgIdle})
			}
		})
	}
	// safety: when termination is first announced, every live process is
	// passive and no work is on its way to a live process.
	check := func(by node.ID) error {
		for _, id := range ids {
			if !s.Alive(id) {
				continue
			}
			if mach(id).Active() {
				return fmt.Errorf("process %d announced termination while process %d is active", by, id)
			}
			if sentTo[id] != recvBy[id] {
				return fmt.Errorf("process %d announced termination with %d work messages on their way to process %d",
					by, sentTo[id]-recvBy[id], id)
			}
		}
		return nil
	}
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		switch ev.(type) {
		case WorkEvent:
			recvBy[id]++
			session(id)
		case TerminatedEvent:
			if !announced {
				announced = true
				return check(id)
			}
		}
		return nil
	}
	for _, id := range ids {
		session(id)
	}
	if j.crash {
		for range j.k {
			at := s.Now().Add(time.Duration(r.IntN(400)) * time.Millisecond)
			s.At(at, func() {
				if announced {
					return
				}
				victim := node.None
				for _, id := range ids {
					if s.Alive(id) && mach(id).Holding() {
						victim = id
					}
				}
				if victim == node.None {
					victim = ids[r.IntN(len(ids))]
				}
				if s.Alive(victim) {
					j.crashes++
					if mach(victim).Holding() {
						j.holders++
					}
					s.Crash(victim)
				}
			})
		}
	}
	// liveness: after the work stops, every live process hears of the end.
	for range 1000 {
		if err := s.RunFor(10 * time.Millisecond); err != nil {
			return err
		}
		all := true
		for _, id := range ids {
			if s.Alive(id) && !mach(id).Terminated() {
				all = false
			}
		}
		if all {
			j.took = s.Now().Sub(lastWork)
			return nil
		}
	}
	state := ""
	for _, id := range ids {
		if !s.Alive(id) {
			state += fmt.Sprintf("\n  %d crashed", id)
			continue
		}
		m := mach(id)
		state += fmt.Sprintf("\n  %d active=%v holding=%v count=%d backup-of=%v terminated=%v", id, m.active, m.holding, m.count, m.det, m.done)
	}
	return fmt.Errorf("no announcement 10 s in:%s", state)
}

// TestSimTermination: 1,000 simulated computations without crashes and
// 1,000 with up to k crashes of the marker's holder; termination is
// announced only when every live process is passive and no work is on
// its way, and always announced once the work has stopped.
func TestSimTermination(t *testing.T) {
	for _, crash := range []bool{false, true} {
		var worst time.Duration
		crashes, holders := 0, 0
		for _, seed := range seeds1000() {
			j := &job{seed: seed, crash: crash}
			if err := j.run(); err != nil {
				t.Fatalf("crashes=%v seed %d (n=%d k=%d): %v\nreplay: go test ./pkg/termination -run TestSimTermination -seed %d",
					crash, seed, j.n, j.k, err, seed)
			}
			worst = max(worst, j.took)
			crashes += j.crashes
			holders += j.holders
		}
		t.Logf("crashes=%v: %d seeds, %d crashes (%d of the marker's holder), announced everywhere at most %v after the last work",
			crash, len(seeds1000()), crashes, holders, worst)
		if crash && holders == 0 {
			t.Fatal("no crash hit the marker's holder")
		}
	}
}

// TestSimTerminationCatchesBug: a sender that stays white lets the marker
// announce termination while work is still on its way; the checker sees it.
func TestSimTerminationCatchesBug(t *testing.T) {
	for seed := uint64(1); seed <= 1000; seed++ {
		j := &job{seed: seed, bug: bugNoColour}
		if err := j.run(); err != nil {
			t.Logf("caught at seed %d: %v", seed, err)
			return
		}
	}
	t.Fatal("a sender that stays white was not caught in 1,000 seeds")
}

func seeds1000() []uint64 {
	s := sim.Seeds()
	if len(s) == 1 || len(s) >= 1000 {
		return s
	}
	out := make([]uint64, 1000)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}
