package coords

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/sim"
	"github.com/roundtable-go/roundtable/pkg/sim/scenariotest"
)

// scenarioPlane is where the transcripts' members sit, in milliseconds of
// round trip: the corners of a 30 × 40 rectangle, with a fifth member at
// its centre; a message takes half the distance between its ends.
var scenarioPlane = map[node.ID][2]float64{1: {0, 0}, 2: {30, 0}, 3: {0, 40}, 4: {30, 40}, 5: {15, 20}}

// transcript plays the coordinates transcripts: files named gnp-* run GNP
// in 2 dimensions with landmarks 1, 2 and 3, vivaldi-* Vivaldi in 2
// dimensions; members ping every 20ms and report at +3s.
func transcript(path string) *sim.Scenario[Msg] {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gnp := strings.HasPrefix(filepath.Base(path), "gnp-")
	return &sim.Scenario[Msg]{
		Codec: Codec{},
		Options: sim.Options{Start: start, Latency: func(_ *rand.Rand, from, to node.ID) time.Duration {
			a, b := scenarioPlane[from], scenarioPlane[to]
			return time.Duration(math.Hypot(a[0]-b[0], a[1]-b[1]) / 2 * float64(time.Millisecond))
		}},
		Format: func(m Msg) string {
			if m.Type == MsgPing {
				return fmt.Sprintf("ping seq=%d", m.Seq)
			}
			out := fmt.Sprintf("pong seq=%d", m.Seq)
			if len(m.Pos.Vec) > 0 {
				out += " at " + vecString(m.Pos.Vec)
			}
			for _, r := range m.Row {
				out += fmt.Sprintf(" rtt(%d)=%.1fms", r.ID, float64(r.RTT)/1000)
			}
			for _, l := range m.Landmarks {
				out += fmt.Sprintf(" landmark %d at %s", l.ID, vecString(l.Pos.Vec))
			}
			return out
		},
		Machine: func(id node.ID, peers []node.ID, _ int, rng *rand.Rand) node.Machine[Msg] {
			cfg := Config{ID: id, Peers: peers, Dims: 2, End: start.Add(3 * time.Second), Rand: rng}
			if gnp {
				cfg.Algo, cfg.Landmarks = AlgoGNP, []node.ID{1, 2, 3}
			}
			m, err := New(cfg)
			if err != nil {
				panic(err)
			}
			return m
		},
	}
}

// TestScenarioTranscripts plays testdata/*.txt. The package plants no
// bug; mutants 48 to 50 (testdata/mutants) change these transcripts.
func TestScenarioTranscripts(t *testing.T) {
	scenariotest.Transcripts(t, filepath.Join("testdata", "*.txt"), func(path string, rewrite bool) (string, string, error) {
		return transcript(path).RunFile(path, rewrite)
	})
}
