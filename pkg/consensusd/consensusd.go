// Package consensusd is consensus's service: one process of one agreement
// (FloodSet, EIG or signed chains, pkg/consensus) on real sockets. It
// decides nothing: it starts the machine, prints the machine's one outcome
// and maps it to the process's end.
package consensusd

import (
	"os"
	"syscall"
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/consensus"
)

// Run runs one process until its outcome: a decision (nil), no decision
// (69), an injected crash (the process kills itself with SIGKILL, as kill
// -9 would), a signal (128+signal) or a failed transport (69). The
// member's ID and peers fill cfg's; a nil Rand is seeded from them.
func Run(mb *cli.Member, cfg consensus.Config) error {
	mb.Identify(&cfg.ID, &cfg.Peers, &cfg.Rand)
	m, err := cli.Build(consensus.New(cfg))
	if err != nil {
		return err
	}
	start := "barrier"
	if !cfg.Start.IsZero() {
		start = cfg.Start.Format(time.RFC3339Nano)
	}
	_, live, err := cli.StartMachine[consensus.Msg](mb, m, consensus.Codec{}, "algo", cfg.Algo, "f", cfg.F, "round", cfg.Round, "start", start)
	if err != nil {
		return err
	}
	defer live.Stop()
	select {
	case ev := <-live.Events:
		mb.Out.Event(ev)
		switch ev := ev.(type) {
		case consensus.CrashEvent:
			// An injected crash is a real one: no goodbye, no clean-up,
			// the same exit status as kill -9.
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		case consensus.UndecidedEvent:
			return cli.Exitf(cli.ExitUnavailable, "no decision: %s", ev.Reason)
		}
		return nil
	case err := <-live.Done:
		return cli.Failed(err)
	case s := <-live.Signals:
		return &cli.ExitError{Code: cli.SignalCode(s)}
	}
}
