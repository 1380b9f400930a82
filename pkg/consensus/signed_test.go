package consensus

import (
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/simtest"
)

// testKeys makes n key pairs from rng (deterministic per seed).
func testKeys(rng *rand.Rand, ids []node.ID) (map[node.ID]ed25519.PrivateKey, map[node.ID]ed25519.PublicKey) {
	priv, pub := map[node.ID]ed25519.PrivateKey{}, map[node.ID]ed25519.PublicKey{}
	for _, id := range ids {
		seed := make([]byte, ed25519.SeedSize)
		for i := range seed {
			seed[i] = byte(rng.Uint32())
		}
		priv[id] = ed25519.NewKeyFromSeed(seed)
		pub[id] = priv[id].Public().(ed25519.PublicKey)
	}
	return priv, pub
}

// signedRun builds a random run of the signed algorithm: n processes, f =
// ⌊(n−1)/2⌋, up to f traitors with random strategies (force: all of one),
// multi-valued inputs (a third of the runs: every loyal process the same).
func signedRun(seed uint64, n int, force Strategy, b bug) (*run, int, sim.Options) {
	rng := rand.New(rand.NewPCG(seed, 3))
	f := (n - 1) / 2
	roundLen := 50 * time.Millisecond
	r := &run{cfgs: map[node.ID]Config{}, faulty: map[node.ID]bool{}}
	var ids []node.ID
	for i := 1; i <= n; i++ {
		ids = append(ids, node.ID(i))
	}
	priv, pub := testKeys(rng, ids)
	traitors := rng.Perm(n)[:rng.IntN(f+1)]
	if force != Honest {
		traitors = rng.Perm(n)[:f]
	}
	same := rng.IntN(3) == 0
	values := []string{"red", "green", "blue", "black"}
	for i, id := range ids {
		v := values[rng.IntN(len(values))]
		if same {
			v = "green"
		}
		cfg := Config{ID: id, Peers: ids, Algo: Signed, F: f, Value: v, Round: roundLen, Key: priv[id], Keys: pub,
			Session: "test", Start: epoch.Add(time.Duration(rng.Int64N(int64(roundLen / 5)))), Lie: values[rng.IntN(len(values))]}
		if slices.Contains(traitors, i) {
			cfg.Byzantine = Strategy(1 + rng.IntN(5))
			if force != Honest {
				cfg.Byzantine = force
			}
			r.faulty[id] = true
		} else {
			cfg.bug = b
		}
		r.cfgs[id] = cfg
	}
	return r, f, sim.Options{MinLatency: time.Millisecond, MaxLatency: time.Duration(2+rng.IntN(15)) * time.Millisecond}
}

// checkVector: every loyal process agreed on the whole vector, and a loyal
// origin's entry is its input (nobody forged a value in its name).
func (r *run) checkVector() error {
	var first []string
	var firstID node.ID
	for id, c := range r.cfgs {
		if r.faulty[id] {
			continue
		}
		d := r.decided[id]
		if len(d.Vector) != len(c.Peers) {
			return fmt.Errorf("process %d's vector has %d entries, want %d", id, len(d.Vector), len(c.Peers))
		}
		for j, p := range c.sortedPeers() {
			if !r.faulty[p] && d.Vector[j] != r.cfgs[p].Value {
				return fmt.Errorf("process %d holds %q for loyal process %d, whose input is %q", id, d.Vector[j], p, r.cfgs[p].Value)
			}
		}
		if first == nil {
			first, firstID = d.Vector, id
		} else if !slices.Equal(first, d.Vector) {
			return fmt.Errorf("vector agreement: process %d has %v, process %d %v", firstID, first, id, d.Vector)
		}
	}
	return nil
}

func signedSize(seed uint64) int { return 3 + int(seed%7) }

// judge runs a signed run and checks agreement, validity, termination and
// the vector; it returns the run (for its log) and the forged entries the
// loyal processes rejected.
func judge(t *testing.T, r *run, f int, seed uint64, opts sim.Options) (forged int, err error) {
	t.Helper()
	if _, err := r.execute(seed, opts, time.Duration(f+3)*50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err = r.check(f, true); err == nil {
		err = r.checkVector()
	}
	for _, d := range r.decided {
		forged += d.Forged
	}
	return forged, err
}

func TestSimSignedProperties(t *testing.T) {
	forged := 0
	for _, seed := range sim.Seeds() {
		n := signedSize(seed)
		r, f, opts := signedRun(seed, n, Honest, 0)
		k, err := judge(t, r, f, seed, opts)
		if err != nil {
			t.Fatalf("sim seed %d (n=%d f=%d): %v\nreplay: %s\n%s",
				seed, n, f, err, simtest.Replay(t, seed), strings.Join(r.log, "\n"))
		}
		forged += k
	}
	t.Logf("signed: %d seeds passed (n 3..9, f = ⌊(n−1)/2⌋, up to f traitors: silent, random, two-faced, liar, forger; %d forged entries rejected)",
		len(sim.Seeds()), forged)
}

// TestSignedForgeriesFail: with f forgers, every forgery is rejected (the
// loyal processes count them) and changes nothing.
func TestSignedForgeriesFail(t *testing.T) {
	seeds := sim.Seeds()
	seeds = seeds[:min(100, len(seeds))] // 20 under -race (scripts/test.sh)
	for _, s := range []Strategy{Liar, Forger, TwoFaced, Random} {
		forged := 0
		for _, seed := range seeds {
			n := 4 + int(seed%6)
			r, f, opts := signedRun(seed, n, s, 0)
			k, err := judge(t, r, f, seed, opts)
			if err != nil {
				t.Fatalf("%v, seed %d (n=%d f=%d): %v", s, seed, n, f, err)
			}
			forged += k
		}
		if (s == Liar || s == Forger) && forged == 0 {
			t.Fatalf("%v: no forged entry was rejected: the strategy forged nothing", s)
		}
		t.Logf("%v: %d seeds, %d forged entries rejected", s, len(seeds), forged)
	}
}

// TestSimSignedPlantedBug: loyal processes that skip the origin's signature
// of a relayed value take a forger's value in a loyal process's name.
func TestSimSignedPlantedBug(t *testing.T) {
	caught, seeds := 0, min(200, len(sim.Seeds()))
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		n := 4 + int(seed%6)
		r, f, opts := signedRun(seed, n, Forger, bugOneBadSignature)
		if _, err := judge(t, r, f, seed, opts); err != nil {
			caught++
		}
	}
	if caught*5 < seeds {
		t.Fatalf("planted bug (origin signature unchecked) caught in %d of %d seeds, want at least 20%%", caught, seeds)
	}
	t.Logf("planted bug (origin signature unchecked): caught in %d of %d seeds", caught, seeds)
}

// TestSimSignedRepeatSignerBug: loyal processes that accept a chain with
// a repeated signer take a forger's late value that only some of them see.
func TestSimSignedRepeatSignerBug(t *testing.T) {
	simtest.Catch(t, "repeated signer accepted", min(200, len(sim.Seeds())), func(seed uint64) error {
		r, f, opts := signedRun(seed, 4+int(seed%6), Forger, bugRepeatSigner)
		_, err := judge(t, r, f, seed, opts)
		return err
	})
}

// TestSignedRefusesTwoF: n ≤ 2f is refused with the reason, as EIG refuses
// n ≤ 3f; n = 2f+1 is accepted.
func TestSignedRefusesTwoF(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, nf := range [][2]int{{4, 2}, {2, 1}, {5, 2}, {3, 1}} {
		n, f := nf[0], nf[1]
		var ids []node.ID
		for i := 1; i <= n; i++ {
			ids = append(ids, node.ID(i))
		}
		priv, pub := testKeys(rng, ids)
		cfg := Config{ID: 1, Peers: ids, Algo: Signed, F: f, Value: "x", Key: priv[1], Keys: pub}
		err := cfg.Validate()
		if ok := n > 2*f; ok != (err == nil) {
			t.Fatalf("n=%d f=%d: %v", n, f, err)
		}
		if err != nil && !strings.Contains(err.Error(), "n > 2f") {
			t.Fatalf("n=%d f=%d: the error does not say why: %v", n, f, err)
		}
	}
}

// BenchmarkSignedChainVerify: verifying a relayed entry with a chain of
// three signatures, as a receiver in round 3 does (three Ed25519
// verifications each); ns/op over 3 is one signature.
func BenchmarkSignedChainVerify(b *testing.B) {
	ids := []node.ID{1, 2, 3, 4, 5}
	priv, pub := testKeys(rand.New(rand.NewPCG(1, 1)), ids)
	ms := map[node.ID]*Machine{}
	for _, id := range ids {
		m, err := New(Config{ID: id, Peers: ids, Algo: Signed, F: 2, Value: "v", Key: priv[id], Keys: pub, Session: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		ms[id] = m
	}
	e := ms[1].sign(SignedEntry{Value: "attack"})
	e = ms[2].sign(e)
	e = ms[3].sign(e)
	b.ResetTimer()
	for b.Loop() {
		if !ms[4].verify(3, 3, e) {
			b.Fatal("a good chain failed")
		}
	}
	b.ReportMetric(float64(3*b.N)/b.Elapsed().Seconds(), "sigs/s")
}
