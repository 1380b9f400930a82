package main

import (
	"fmt"
	"math/big"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mutex"
)

var votingRiskCommand = &ucli.Command{
	Name:  "voting-risk",
	Usage: "the chance that voting with forgetful coordinators breaks mutual exclusion (Lin et al., Tanenbaum ch. 6)",
	Description: `p_v = Σ_{k=2m−n}^{n} C(m,k) p^k (1−p)^(m−k), computed exactly: n replica
coordinators, m > n/2 votes needed, p the probability that a coordinator
crashes and recovers (forgetting its votes) within Δt. lockd's own voting
does not take this risk: votes are leases, and a restarted coordinator
votes for nobody during its first lease.

Examples:
   lockd voting-risk --n 32 --m 24 --p 0.001     # p_v 7.300e-43
   lockd voting-risk --n 32 --m 24 --p 1/1080    # Δt 10 s of a 3 h session: 2.132e-43`,
	Flags: []ucli.Flag{
		&ucli.IntFlag{Name: "n", Usage: "replicas (coordinators) of a resource"},
		&ucli.IntFlag{Name: "m", DefaultText: "n/2+1", Usage: "votes needed, more than n/2"},
		&ucli.StringFlag{Name: "p", Usage: "probability that a coordinator resets within Δt (a decimal or a fraction such as 1/1080)"},
		&ucli.BoolFlag{Name: cli.FlagJSON, Usage: "print JSON"},
	},
	Action: votingRisk,
}

func votingRisk(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "unexpected argument %q", c.Args().First())
	}
	p, ok := new(big.Rat).SetString(c.String("p"))
	if !ok {
		return cli.Exitf(cli.ExitUsage, "--p %q is not a number", c.String("p"))
	}
	n, m := c.Int("n"), c.Int("m")
	if !c.IsSet("m") {
		m = n/2 + 1
	}
	pv, err := mutex.VotingRisk(n, m, p)
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	f := new(big.Float).SetPrec(64).SetRat(pv).Text('e', 3)
	out := cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON))
	if c.Bool(cli.FlagJSON) {
		out.JSON(map[string]any{"event": "voting-risk", "n": n, "m": m, "p": c.String("p"), "p_v": f})
	} else {
		out.Line(fmt.Sprintf("n %d m %d p %s p_v %s", n, m, c.String("p"), f))
	}
	return nil
}
