package main

import (
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/claim"
	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/lockd"
)

func out(c *ucli.Context) *cli.Output { return cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON)) }

func runCmd(c *ucli.Context) error {
	return lockd.Run(claim.RunOptions(c))
}

func holdCmd(c *ucli.Context) error {
	name, err := lockd.CheckName(c.Args().Slice())
	if err != nil {
		return err
	}
	if c.Args().Len() > 1 {
		return cli.Exitf(cli.ExitUsage, "hold takes one NAME, got %q too", c.Args().Get(1))
	}
	return lockd.Hold(claim.WaitOptions(c), name, out(c))
}

func sessionCmd(c *ucli.Context) error {
	if c.Args().Len() > 0 {
		return cli.Exitf(cli.ExitUsage, "session takes no arguments (commands come on stdin), got %q", c.Args().First())
	}
	return lockd.Session(c.String("socket"), os.Stdin, out(c))
}

func statusCmd(c *ucli.Context) error { return lockd.Status(c.String("socket"), out(c)) }

func watchCmd(c *ucli.Context) error {
	return lockd.Watch(c.String("socket"), c.Bool("all-members"), c.String(cli.FlagReadyFile), out(c))
}
