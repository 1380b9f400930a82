package clockd

import (
	"time"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/clocksync"
	"github.com/roundtable-go/roundtable/pkg/coords"
)

// Berkeley runs one member of Berkeley averaging (`clocksync berkeley`)
// and prints its events until a signal (nil) or a failed transport (69).
// The member's ID and peers fill cfg's; a nil Rand is seeded from them.
func Berkeley(mb *cli.Member, cfg clocksync.BerkeleyConfig) error {
	mb.Identify(&cfg.ID, &cfg.Peers, &cfg.Rand)
	b, err := cli.Build(clocksync.NewBerkeley(cfg))
	if err != nil {
		return err
	}
	_, live, err := cli.StartMachine[clocksync.BerkeleyMsg](mb, b, clocksync.BerkeleyCodec{}, "master", cfg.Master)
	if err != nil {
		return err
	}
	defer live.Stop()
	for {
		select {
		case ev := <-live.Events:
			mb.Out.Event(ev)
		case err := <-live.Done:
			return cli.Failed(err)
		case s := <-live.Signals:
			mb.Log.Info("signal: stopping", "signal", s)
			return nil
		}
	}
}

// Coords runs one member of `clocksync coords` until its coordinates are
// printed and one more second has passed for the others still measuring
// (nil), a signal (128+signal) or a failed transport (69). The member's ID
// and peers fill cfg's; a nil Rand is seeded from them.
func Coords(mb *cli.Member, cfg coords.Config) error {
	mb.Identify(&cfg.ID, &cfg.Peers, &cfg.Rand)
	m, err := cli.Build(coords.New(cfg))
	if err != nil {
		return err
	}
	_, live, err := cli.StartMachine[coords.Msg](mb, m, coords.Codec{}, "algo", cfg.Algo, "dims", cfg.Dims)
	if err != nil {
		return err
	}
	defer live.Stop()
	var linger <-chan time.Time
	for {
		select {
		case ev := <-live.Events:
			mb.Out.Event(ev)
			if _, ok := ev.(coords.CoordsEvent); ok {
				linger = time.After(time.Second)
			}
		case <-linger:
			return nil
		case err := <-live.Done:
			return cli.Failed(err)
		case s := <-live.Signals:
			return &cli.ExitError{Code: cli.SignalCode(s)}
		}
	}
}
