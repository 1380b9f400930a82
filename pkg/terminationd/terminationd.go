// Package terminationd is 'consensus terminate': one process of a
// distributed job whose end is detected by pkg/termination. It moves the
// job's lines from stdin to the machine and the machine's events to
// stdout; it decides nothing.
package terminationd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/termination"
)

// Run runs one process until termination is announced and settled (nil), stdin holds
// a line it does not understand (64), a signal (128+signal) or a failed
// transport (69). Stdin lines: 'send ID' sends one unit of work to
// process ID (only while active); 'idle' makes the process passive.
// The end of stdin is 'idle'. The member's ID and peers fill cfg's.
func Run(mb *cli.Member, cfg termination.Config, in io.Reader) error {
	cfg.ID, cfg.Peers = mb.ID, cli.IDs(mb.Peers)
	m, err := termination.New(cfg)
	if err != nil {
		return cli.Exitf(cli.ExitUsage, "%v", err)
	}
	drv, live, err := cli.StartMachine[termination.Msg](mb, m, termination.Codec{}, "backups", cfg.Backups, "active", cfg.Active)
	if err != nil {
		return err
	}
	defer live.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bad := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			msg, err := parse(sc.Text())
			if err == nil && msg.Type != 0 {
				err = drv.Request(ctx, msg)
			}
			if err != nil {
				if ctx.Err() == nil {
					bad <- fmt.Errorf("stdin %q: %v", sc.Text(), err)
				}
				return
			}
		}
		drv.Request(ctx, termination.Msg{Type: termination.MsgIdle})
	}()
	for {
		select {
		case ev := <-live.Events:
			// The announcer stays until every live process has
			// acknowledged the end (or stayed silent for Timeout).
			if _, ok := ev.(termination.SettledEvent); ok {
				return nil
			}
			mb.Out.Event(ev)
		case err := <-bad:
			return cli.Exitf(cli.ExitUsage, "%v", err)
		case err := <-live.Done:
			return cli.Failed(err)
		case s := <-live.Signals:
			return &cli.ExitError{Code: cli.SignalCode(s)}
		}
	}
}

// parse reads one stdin line; an empty line is nothing.
func parse(line string) (termination.Msg, error) {
	f := strings.Fields(line)
	switch {
	case len(f) == 0:
		return termination.Msg{}, nil
	case f[0] == "idle" && len(f) == 1:
		return termination.Msg{Type: termination.MsgIdle}, nil
	case f[0] == "send" && len(f) == 2:
		id, err := strconv.ParseUint(f[1], 10, 32)
		if err != nil || id == 0 {
			return termination.Msg{}, fmt.Errorf("want 'send ID' with a member's ID")
		}
		return termination.Msg{Type: termination.MsgSend, To: node.ID(id)}, nil
	}
	return termination.Msg{}, fmt.Errorf("want 'send ID' or 'idle'")
}
