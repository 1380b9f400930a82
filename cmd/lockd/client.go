package main

import (
	"os"

	ucli "github.com/urfave/cli/v2"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/lockd"
)

// waitOpts reads the flags of the commands that wait for a lock.
func waitOpts(c *ucli.Context) lockd.WaitOpts {
	return lockd.WaitOpts{Socket: c.String("socket"), Timeout: c.Duration("timeout"), NonBlock: c.Bool("nonblock"), Conflict: c.Int("conflict-exit-code"), Quiet: c.Bool("quiet")}
}

func out(c *ucli.Context) *cli.Output { return cli.NewOutput(os.Stdout, c.Bool(cli.FlagJSON)) }

func runCmd(c *ucli.Context) error {
	return lockd.Run(lockd.RunOpts{WaitOpts: waitOpts(c), KillGrace: c.Duration("kill-grace"), Shell: c.Bool("shell"), Args: c.Args().Slice()})
}

func holdCmd(c *ucli.Context) error {
	name, err := lockd.CheckName(c.Args().Slice())
	if err != nil {
		return err
	}
	if c.Args().Len() > 1 {
		return cli.Exitf(cli.ExitUsage, "hold takes one NAME, got %q too", c.Args().Get(1))
	}
	return lockd.Hold(waitOpts(c), name, out(c))
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
