package coords

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// simRun runs n members of the machine in the simulator over a synthetic
// matrix (each way half the round trip) for d, and returns their reports.
func simRun(t *testing.T, seed uint64, n int, algo Algo, dims int, d time.Duration) (map[node.ID][]PeerEvent, [][]float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 21))
	rtt, _ := Synth{N: n, Spread: 80, MaxHeight: 8, Noise: 0.03}.Matrix(rng)
	ids := make([]node.ID, n)
	for i := range ids {
		ids[i] = node.ID(i + 1)
	}
	opts := sim.Options{Seed: seed, Start: epoch, MinLatency: time.Millisecond, MaxLatency: time.Millisecond,
		Latency: func(_ *rand.Rand, from, to node.ID) time.Duration {
			return time.Duration(rtt[from-1][to-1] / 2 * float64(time.Millisecond))
		}}
	got := map[node.ID][]PeerEvent{}
	s := sim.New[Msg](opts, Codec{}, func(id node.ID, _ int, r *rand.Rand) node.Machine[Msg] {
		m, err := New(Config{ID: id, Peers: ids, Algo: algo, Dims: dims, End: epoch.Add(d), Rand: r})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}, ids...)
	s.OnEvent = func(_ time.Time, id node.ID, ev node.Event) error {
		if e, ok := ev.(PeerEvent); ok {
			got[id] = append(got[id], e)
		}
		return nil
	}
	if err := s.RunFor(d + time.Second); err != nil {
		t.Fatal(err)
	}
	return got, rtt
}

// errorsOf: relative errors of the members' reports against the matrix.
func errorsOf(t *testing.T, got map[node.ID][]PeerEvent, rtt [][]float64) []float64 {
	var errs []float64
	for id, ps := range got {
		for _, p := range ps {
			if p.Predicted == 0 {
				t.Fatalf("member %d has no prediction for %d", id, p.ID)
			}
			errs = append(errs, RelErr(p.Predicted, rtt[id-1][p.ID-1]))
		}
	}
	return errs
}

func TestMachineVivaldiInSimulator(t *testing.T) {
	got, rtt := simRun(t, 1, 16, AlgoVivaldi, 2, 20*time.Second)
	if len(got) != 16 {
		t.Fatalf("%d of 16 members reported", len(got))
	}
	errs := errorsOf(t, got, rtt)
	med, p90 := Quantile(errs, 0.5), Quantile(errs, 0.9)
	if med > 0.15 {
		t.Fatalf("median relative error %.3f", med)
	}
	t.Logf("vivaldi machines, 16 members, 20 s: median %.3f, 90th percentile %.3f", med, p90)
}

func TestMachineGNPInSimulator(t *testing.T) {
	got, rtt := simRun(t, 2, 16, AlgoGNP, 2, 10*time.Second)
	errs := errorsOf(t, got, rtt)
	med, p90 := Quantile(errs, 0.5), Quantile(errs, 0.9)
	if med > 0.25 {
		t.Fatalf("median relative error %.3f", med)
	}
	t.Logf("gnp machines, 16 members, 7 landmarks, 10 s: median %.3f, 90th percentile %.3f", med, p90)
}

func TestCodecRoundTrip(t *testing.T) {
	m := Msg{Type: MsgPong, Seq: 7, EchoNS: 123456789, Pos: Coord{Vec: []float64{1.5, -2}, Height: 3}, Err: 0.25,
		Row: []RowEntry{{2, 1500}}, Landmarks: []Placed{{1, Coord{Vec: []float64{0, 0}, Height: 0}}}}
	typ, p, err := Codec{}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Codec{}.Unmarshal(typ, p)
	if err != nil || got.Seq != 7 || got.Pos.Vec[1] != -2 || got.Row[0].RTT != 1500 || got.Landmarks[0].ID != 1 {
		t.Fatalf("%+v %v", got, err)
	}
}

func FuzzCodec(f *testing.F) {
	_, p, _ := Codec{}.Marshal(Msg{Type: MsgPong, Seq: 1, Pos: Coord{Vec: []float64{1, 2}}, Row: []RowEntry{{3, 10}}})
	f.Add(uint8(MsgPong), p)
	f.Add(uint8(9), []byte{1})
	f.Fuzz(func(t *testing.T, typ uint8, p []byte) {
		m, err := Codec{}.Unmarshal(typ, p)
		if err != nil {
			return
		}
		mc, err := New(Config{ID: 1, Peers: []node.ID{1, 2, 3}, Algo: AlgoGNP, Landmarks: []node.ID{1, 2, 3}, Rand: rand.New(rand.NewPCG(1, 1))})
		if err != nil {
			t.Fatal(err)
		}
		mc.Tick(epoch)
		_ = mc.Step(epoch.Add(time.Millisecond), node.Envelope[Msg]{From: 2, To: 1, Msg: m})
		mc.Tick(epoch.Add(2 * time.Second))
		mc.Ready()
	})
}

// TestGNPDefaultDims: GNP's dimension defaults to Tanenbaum's 6–7 (7), and
// follows the landmarks: never more than one fewer than their count; an
// explicit dimension with too few landmarks is refused.
func TestGNPDefaultDims(t *testing.T) {
	ids := func(n int) []node.ID {
		out := make([]node.ID, n)
		for i := range out {
			out[i] = node.ID(i + 1)
		}
		return out
	}
	for _, c := range []struct {
		peers     int
		landmarks []node.ID
		algo      Algo
		dims      int
		wantDims  int
		wantLM    int
	}{
		{16, nil, AlgoGNP, 0, GNPDims, GNPDims + 5},
		{8, nil, AlgoGNP, 0, 7, 8},
		{4, nil, AlgoGNP, 0, 3, 4},
		{16, []node.ID{1, 2, 3}, AlgoGNP, 0, 2, 3},
		{16, nil, AlgoGNP, 3, 3, 8},
		{16, nil, AlgoVivaldi, 0, 2, 0},
	} {
		m, err := New(Config{ID: 1, Peers: ids(c.peers), Algo: c.algo, Dims: c.dims, Landmarks: c.landmarks, Rand: rand.New(rand.NewPCG(1, 1))})
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if m.cfg.Dims != c.wantDims || len(m.cfg.Landmarks) != c.wantLM {
			t.Errorf("%d members, landmarks %v, %v, dims %d: got %d dimensions and %d landmarks, want %d and %d",
				c.peers, c.landmarks, c.algo, c.dims, m.cfg.Dims, len(m.cfg.Landmarks), c.wantDims, c.wantLM)
		}
	}
	if _, err := New(Config{ID: 1, Peers: ids(16), Algo: AlgoGNP, Dims: 7, Landmarks: []node.ID{1, 2, 3, 4}, Rand: rand.New(rand.NewPCG(1, 1))}); err == nil {
		t.Fatal("7 dimensions from 4 landmarks accepted")
	}
}
