package election

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

func TestCodecClaim(t *testing.T) {
	for _, m := range []Msg{
		{Type: MsgClaim, Term: 3, Prio: 1, Origin: 4, Round: 1 << 40, Leader: 4, Count: 7,
			Members: []Member{{4, 9}, {5, 0}, {6, 0}}},
		{Type: MsgProbe},
		{Type: MsgAck, Of: MsgProbe},
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
}

// claimChecker checks the uniqueness of every claim (Arantes and Sopena
// §II, safety: at most one process holds the token): the emission counts
// at which processes hold one claim only grow. A copy taken twice, or a
// backup used while the real claim still moves, holds a count at or
// below one already held.
type claimChecker struct {
	held map[[2]uint64]uint64 // (origin, round) -> highest count held
	err  error
}

func (c *claimChecker) hold(self, origin node.ID, round, count uint64) {
	k := [2]uint64{uint64(origin), round}
	if prev, ok := c.held[k]; ok && count <= prev && c.err == nil {
		c.err = fmt.Errorf("process %d holds claim %d/%d at count %d, after count %d was held", self, origin, round, count, prev)
	}
	c.held[k] = max(c.held[k], count)
}

type backupRun struct {
	seed     uint64
	n, k     int
	bug      backupBug
	crashed  int
	backups  int // regenerations
	emits    int
	copies   int
	restarts int
}

// run: the first election, then the leader's crash and the election after
// it; whenever a claim is passed on, its next holder may crash before the
// claim reaches it. At most k processes crash in all, so at most k
// consecutive ones. Every election must end with the best live process
// leading and everyone following it in one term.
func (br *backupRun) run() error {
	r := rand.New(rand.NewPCG(br.seed, 303))
	br.n = 4 + r.IntN(6)
	br.k = 1 + r.IntN(min(3, br.n-2))
	ids := make([]node.ID, br.n)
	prio := map[node.ID]uint64{}
	for i, p := range r.Perm(br.n) {
		ids[i] = node.ID(i + 1)
		prio[ids[i]] = uint64(p + 1)
	}
	chk := &claimChecker{held: map[[2]uint64]uint64{}}
	var s *sim.Sim[Msg]
	budget := 1
	crashP := 0.2 + r.Float64()*0.5
	onEmit := func(self, origin node.ID, round, count uint64, to []node.ID) {
		br.emits++
		br.copies += len(to)
		if br.crashed < budget && r.Float64() < crashP {
			br.crashed++
			victim := to[0]
			s.At(s.Now(), func() { s.Crash(victim) })
		}
	}
	factory := func(id node.ID, inc int, rng *rand.Rand) node.Machine[Msg] {
		m, err := New(Config{ID: id, Peers: ids, Algo: ChangRoberts, Priority: prio[id], Rand: rng,
			Backups: br.k, backupBug: br.bug, onEmit: onEmit, onHold: chk.hold,
			onBackup: func(node.ID, node.ID, uint64) { br.backups++ }})
		if err != nil {
			panic(err)
		}
		return m
	}
	s = sim.New[Msg](sim.Options{Seed: br.seed, MinLatency: time.Millisecond,
		MaxLatency: time.Duration(2+r.IntN(10)) * time.Millisecond, Dup: 0.05}, Codec{}, factory, ids...)
	terms := NewChecker()
	s.OnEvent = func(at time.Time, id node.ID, ev node.Event) error {
		if le, ok := ev.(LeaderEvent); ok {
			return terms.Observe(id, le)
		}
		return nil
	}
	s.Invariant = func() error { return chk.err }
	best := func() node.ID {
		var b node.ID
		for _, id := range ids {
			if s.Alive(id) && (b == node.None || prio[id] > prio[b]) {
				b = id
			}
		}
		return b
	}
	settle := func(phase string) error {
		for range 150 {
			if err := s.RunFor(10 * time.Millisecond); err != nil {
				return err
			}
			if agreed(s, best()) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: no single leader %v after it began: %v", phase, livenessBound, agreed(s, best()))
	}
	if err := settle("first election"); err != nil {
		return err
	}
	budget = br.k
	if br.crashed < budget {
		br.crashed++
		s.Crash(best())
	}
	// Claims die away before the check: let the election run its course.
	if err := s.RunFor(300 * time.Millisecond); err != nil {
		return err
	}
	if err := settle("election after the leader's crash"); err != nil {
		return err
	}
	if err := s.RunFor(time.Second); err != nil {
		return err
	}
	for _, id := range ids {
		if s.Alive(id) {
			br.restarts += s.Machine(id).(*Machine).restarts
		}
	}
	return chk.err
}

// TestSimClaimBackups: Chang–Roberts with claims backed up on k = 1..3
// members (Arantes and Sopena §III), the next holder of a claim crashing
// while the claim is on its way to it, at most k crashes: 1,000 seeds,
// every claim held at increasing counts only (one holder at a time), one
// leader per term, and each election ending with the best live process
// leading.
func TestSimClaimBackups(t *testing.T) {
	var regen, crashes, emits, copies, restarts int
	n := simtest.EverySeedOf(t, simtest.AtLeast(1000), func(seed uint64) error {
		br := &backupRun{seed: seed}
		if err := br.run(); err != nil {
			return fmt.Errorf("n=%d k=%d: %v", br.n, br.k, err)
		}
		regen += br.backups
		crashes += br.crashed
		emits += br.emits
		copies += br.copies
		restarts += br.restarts
		return nil
	})
	t.Logf("%d seeds: %d crashes, %d claims regenerated from backups, %d emissions carrying %d copies, %d elections started again",
		n, crashes, regen, emits, copies, restarts)
	if regen == 0 {
		t.Fatal("no claim was ever regenerated from a backup: the crashes missed the claims")
	}
}

// TestSimClaimBackupsCatchBugs: the claim checker catches a backup that
// takes an old copy, and one that regenerates while a member between it
// and the holder is alive.
func TestSimClaimBackupsCatchBugs(t *testing.T) {
	for _, bug := range []backupBug{bugOldCopy, bugEager} {
		simtest.CatchOne(t, fmt.Sprintf("backup bug %d", bug), 1000, func(seed uint64) error {
			br := &backupRun{seed: seed, bug: bug}
			return br.run()
		})
	}
}

// TestClaimBackupCost counts one Chang–Roberts election with claims backed
// up on k members against the acknowledged ring without backups: the same
// number of emissions (§II: "its message complexity remains equal to that
// of the original algorithm"), each sent to k+1 members ("k additional
// messages per emission"), and no acknowledgement of a copy.
func TestClaimBackupCost(t *testing.T) {
	const n = 8
	ids := make([]node.ID, n)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	measure := func(k int) (emits, claims, acks, elections int) {
		factory := func(id node.ID, inc int, rng *rand.Rand) node.Machine[Msg] {
			cfg := Config{ID: id, Peers: ids, Algo: ChangRoberts, Rand: rng, Backups: k,
				onEmit: func(node.ID, node.ID, uint64, uint64, []node.ID) { emits++ }}
			if id != 1 {
				cfg.Timeout = time.Hour
			}
			m, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		s := sim.New[Msg](sim.Options{Seed: 1, MinLatency: time.Millisecond, MaxLatency: time.Millisecond}, Codec{}, factory, ids...)
		if err := s.RunFor(time.Second); err != nil {
			t.Fatal(err)
		}
		if err := agreed(s, n); err != nil {
			t.Fatal(err)
		}
		before, beforeDel := maps3(s.Stats.Sent), maps3(s.Stats.Delivered)
		emits = 0
		s.Crash(n)
		if err := s.RunFor(3 * time.Second); err != nil {
			t.Fatal(err)
		}
		if err := agreed(s, n-1); err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		d := func(typ MsgType) int { return s.Stats.Sent[uint8(typ)] - before[uint8(typ)] }
		if k == 0 {
			// The hop to the crashed process is sent and retried to the
			// next one; count the passes that arrived.
			return emits, 0, 0, s.Stats.Delivered[uint8(MsgElection)] - beforeDel[uint8(MsgElection)]
		}
		// The election is over: no copy is watched any more.
		probes := s.Stats.Sent[uint8(MsgProbe)]
		if err := s.RunFor(time.Second); err != nil {
			t.Fatal(err)
		}
		if p := s.Stats.Sent[uint8(MsgProbe)] - probes; p != 0 {
			t.Errorf("k=%d: %d probes in the second after the election", k, p)
		}
		return emits, d(MsgClaim), d(MsgAck), d(MsgElection)
	}
	_, _, _, plain := measure(0)
	for k := 1; k <= 3; k++ {
		emits, claims, _, elections := measure(k)
		t.Logf("n=%d k=%d: %d emissions (acknowledged ring without backups: %d election messages delivered), %d claim messages = (k+1)·%d",
			n, k, emits, plain, claims, emits)
		if elections != 0 {
			t.Errorf("k=%d: %d acknowledged election messages besides the claims", k, elections)
		}
		if emits != plain {
			t.Errorf("k=%d: %d emissions, want %d as without backups", k, emits, plain)
		}
		if claims != (k+1)*emits {
			t.Errorf("k=%d: %d claim messages for %d emissions, want (k+1)·emissions = %d", k, claims, emits, (k+1)*emits)
		}
	}
}
