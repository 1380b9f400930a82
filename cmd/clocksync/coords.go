package main

import (
	"strings"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/clockd"
	"github.com/roundtable-go/roundtable/pkg/coords"
	"github.com/roundtable-go/roundtable/pkg/node"
)

var coordsCommand = &ucli.Command{
	Name:  "coords",
	Usage: "network coordinates: position this member so that distances predict round trips (GNP or Vivaldi)",
	Description: `Every member pings the others in turn (--probe-every), keeps the median of
the last few round trips to each, and positions itself:

  vivaldi (default; Dabek et al. 2004): each round trip is a spring between
      two members; a member moves along it by a step scaled by its
      confidence against the other's, and keeps an error estimate. Vectors
      of --dims dimensions plus a height (the access link).
  gnp (Ng and Zhang 2002, Tanenbaum ch. 6): the landmarks (--landmarks, default
      the first dims+5 members by ID, at least dims+1) measure each other;
      the first of them fits their positions and hands them out; every
      member places itself by minimising the relative error to the
      landmarks. --dims defaults to 7 (Tanenbaum ch. 6: 6 or 7 dimensions keep
      predictions within a factor 2), fewer when there are too few
      landmarks.

After --duration it prints its coordinates and, per member, the measured
and the predicted round trip, then keeps answering pings for a second
(the others may still be measuring) and exits 0.

Examples:
   clocksync coords --id 1 --peers @peers.txt --duration 20s
   clocksync coords --id 3 --peers @peers.txt --algo gnp --landmarks 1,2,3,4,5,6,7,8 --json
   clocksync coords --id 2 --peers @peers.txt --fault-latency 1=20ms,3=35ms   # a test geometry`,
	Flags: cli.WithEnv(tool, append(cli.NodeFlags(),
		&ucli.StringFlag{Name: "algo", Value: "vivaldi", Usage: "vivaldi or gnp"},
		&ucli.IntFlag{Name: "dims", DefaultText: "2 for vivaldi; 7 for gnp, at most landmarks-1", Usage: "dimensions of the coordinate space (Vivaldi adds a height; GNP needs dims+1 landmarks)"},
		&ucli.StringFlag{Name: "landmarks", DefaultText: "the first dims+5 members", Usage: "gnp: the landmark members' IDs, comma-separated (at least dims+1)"},
		&ucli.DurationFlag{Name: "probe-every", Value: 20 * time.Millisecond, Usage: "one ping this often, to the members in turn"},
		&ucli.DurationFlag{Name: "duration", Value: 15 * time.Second, Usage: "measure this long, then print the coordinates"},
	)),
	Action: coordsCmd,
}

func coordsCmd(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "unexpected argument %q", c.Args().First())
	}
	algo, err := coords.ParseAlgo(c.String("algo"))
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "--algo: %v", err)
	}
	var landmarks []node.ID
	if s := c.String("landmarks"); s != "" {
		if algo != coords.AlgoGNP {
			return cli.Exitf(cli.ExitUsage, "--landmarks goes with --algo gnp")
		}
		for _, f := range strings.Split(s, ",") {
			id, err := node.ParseID(strings.TrimSpace(f))
			if err != nil {
				return cli.Exitf(cli.ExitUsage, "--landmarks: %v", err)
			}
			landmarks = append(landmarks, id)
		}
	}
	if c.Duration("duration") <= 0 || c.Duration("probe-every") <= 0 {
		return cli.Exitf(cli.ExitUsage, "--duration and --probe-every must be positive")
	}
	mb, err := cli.Join(c, tool)
	if err != nil {
		return err
	}
	defer mb.Close()
	return clockd.Coords(mb, coords.Config{Algo: algo, Dims: c.Int("dims"), Landmarks: landmarks,
		Interval: c.Duration("probe-every"), End: time.Now().Add(c.Duration("duration"))})
}
