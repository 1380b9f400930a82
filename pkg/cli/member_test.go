package cli

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// TestIdentifyAndBuild: a service's preamble (fill the Config's identity,
// build the machine, a bad Config is exit 64) behaves the same for every
// tool.
func TestIdentifyAndBuild(t *testing.T) {
	mb := &Member{Common: &Common{Peers: map[node.ID]string{1: "a", 2: "b", 3: "c"}}, ID: 2, Incarnation: 7}
	var (
		id    node.ID
		peers []node.ID
		r     *rand.Rand
	)
	mb.Identify(&id, &peers, &r)
	if id != 2 || len(peers) != 3 || r == nil {
		t.Fatalf("Identify: id %d peers %v rand %v", id, peers, r)
	}
	mine := rand.New(rand.NewPCG(1, 1))
	mb.Identify(&id, &peers, &mine)
	if mine.Uint64() != rand.New(rand.NewPCG(1, 1)).Uint64() {
		t.Fatal("Identify replaced a Rand the Config already had")
	}
	if v, err := Build(5, nil); v != 5 || err != nil {
		t.Fatalf("Build(5, nil) = %v, %v", v, err)
	}
	if _, err := Build(0, errors.New("f must be below n")); Code(err) != ExitUsage {
		t.Fatalf("Build with an error: code %d, want %d", Code(err), ExitUsage)
	}
}
