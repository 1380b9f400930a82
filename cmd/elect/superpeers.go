package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/coords"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/superpeer"
)

var superpeersCommand = &ucli.Command{
	Name:  "superpeers",
	Usage: "choose a fraction of the members as superpeers and attach every other member to one (Lo et al., Tanenbaum ch. 6)",
	Description: `Places the members of --peers on a Chord ring of --bits-bit identifiers
(a hash of each ID) and selects superpeers by the DHT scheme: with
k = ⌈log₂ S⌉ reserved bits, a member is a superpeer when the lookup of
its identifier AND 1…10…0 (k ones) routes to itself, and every other
member attaches to the member that lookup of its own identifier reaches.
With --max-load L, a prefix with more than L+1 members takes more
superpeers from its own members, so that none serves more than L.
With --coords FILE (the 'coords' lines of 'clocksync coords --json' of
every member), the geometric scheme instead: S superpeers spread over the
coordinates, each member attached to the nearest one with room.

Every member that runs it with the same --peers gets the same answer: no
messages are needed. Prints 'member M superpeer S' per member, then
'superpeers S1,S2,...'.

Examples:
   elect superpeers --peers @peers.txt --fraction 0.05
   elect superpeers --peers @peers.txt --superpeers 8 --max-load 20 --json
   elect superpeers --peers @peers.txt --superpeers 4 --coords coords.jsonl`,
	Flags: cli.WithEnv(tool, []ucli.Flag{
		cli.PeersFlag(), cli.DNSServerFlag(),
		&ucli.Float64Flag{Name: "fraction", Value: 0.05, Usage: "the fraction of members to make superpeers (S = ⌈fraction·N⌉)"},
		&ucli.IntFlag{Name: "superpeers", DefaultText: "from --fraction", Usage: "how many superpeers (S)"},
		&ucli.IntFlag{Name: "max-load", Usage: "no superpeer serves more than this many members (0: no bound)"},
		&ucli.UintFlag{Name: "bits", Value: 32, Usage: "identifier bits of the ring (m)"},
		&ucli.StringFlag{Name: "coords", Usage: "geometric scheme: a file of 'clocksync coords --json' lines, one per member"},
		&ucli.BoolFlag{Name: cli.FlagJSON, Usage: "print JSON lines instead of text"},
	}),
	Action: superpeers,
}

type spMember struct {
	Event     string  `json:"event"` // "member"
	ID        node.ID `json:"id"`
	Superpeer node.ID `json:"superpeer"`
}

type spSet struct {
	Event      string    `json:"event"` // "superpeers"
	Scheme     string    `json:"scheme"`
	Superpeers []node.ID `json:"superpeers"`
	Bits       uint      `json:"bits"`
	K          uint      `json:"k"`
	MaxLoad    int       `json:"max_load"`
}

func superpeers(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "unexpected argument %q", c.Args().First())
	}
	peers, _, err := cli.Peers(c)
	if err != nil {
		return err
	}
	ids := cli.IDs(peers)
	s := c.Int("superpeers")
	if !c.IsSet("superpeers") {
		f := c.Float64("fraction")
		if f <= 0 || f > 1 {
			return cli.Exitf(cli.ExitUsage, "--fraction must be in (0, 1]")
		}
		s = int(math.Ceil(f * float64(len(ids))))
	}
	if s < 1 || s > len(ids) {
		return cli.Exitf(cli.ExitUsage, "--superpeers must be 1 to %d (the members)", len(ids))
	}
	if c.Int("max-load") < 0 {
		return cli.Exitf(cli.ExitUsage, "--max-load must not be negative")
	}
	out := cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON))
	set := spSet{Event: "superpeers", MaxLoad: c.Int("max-load")}
	var a superpeer.Assignment
	if file := c.String("coords"); file != "" {
		pos, err := readCoords(file)
		if err != nil {
			return cli.Exitf(cli.ExitUsage, "--coords: %v", err)
		}
		for _, id := range ids {
			if _, ok := pos[id]; !ok {
				return cli.Exitf(cli.ExitUsage, "--coords: no coordinates for member %d", id)
			}
		}
		set.Scheme = "geometric"
		a = superpeer.Geometric(pos, s, set.MaxLoad)
	} else {
		r, err := superpeer.NewRing(ids, c.Uint("bits"))
		if err != nil {
			return cli.Exitf(cli.ExitUsage, "%v", err)
		}
		set.Scheme, set.Bits, set.K = "dht", r.M, superpeer.PrefixBits(s)
		a = superpeer.DHT(r, set.K, set.MaxLoad)
	}
	for _, id := range ids {
		e := spMember{Event: "member", ID: id, Superpeer: a.Of[id]}
		out.Value(fmt.Sprintf("member %d superpeer %d", e.ID, e.Superpeer), e)
	}
	set.Superpeers = a.Superpeers
	names := make([]string, len(a.Superpeers))
	for i, id := range a.Superpeers {
		names[i] = fmt.Sprint(id)
	}
	out.Value("superpeers "+strings.Join(names, ","), set)
	return nil
}

// readCoords reads 'clocksync coords --json' lines (other lines are
// skipped): member ID → coordinates.
func readCoords(file string) (map[node.ID]coords.Coord, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pos := map[node.ID]coords.Coord{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var e coords.CoordsEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Event != "coords" {
			continue
		}
		if e.ID == node.None || len(e.Pos.Vec) == 0 {
			return nil, fmt.Errorf("line %d: a coords line without a member or coordinates", n)
		}
		pos[e.ID] = e.Pos
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	dims := -1
	for id, p := range pos {
		if dims >= 0 && len(p.Vec) != dims {
			return nil, fmt.Errorf("member %d's coordinates have %d dimensions, others %d", id, len(p.Vec), dims)
		}
		dims = len(p.Vec)
	}
	return pos, nil
}
