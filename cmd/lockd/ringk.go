package main

import (
	"fmt"
	"math/big"
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mutex"
)

func ringK(c *ucli.Context) error {
	p, ok := new(big.Rat).SetString(c.String("prob"))
	if !ok {
		return cli.Exitf(cli.ExitUsage, "--prob %q is not a number", c.String("prob"))
	}
	n, f := c.Int("nodes"), c.Int("failures")
	k, pk, err := mutex.RingK(n, f, p)
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	out := cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON))
	if c.Bool(cli.FlagJSON) {
		out.JSON(map[string]any{"event": "ring-k", "nodes": n, "failures": f, "prob": p.FloatString(6), "k": k, "p_k": pk.FloatString(9)})
	} else {
		out.Line(fmt.Sprintf("k %d p %s", k, pk.FloatString(9)))
	}
	return nil
}
