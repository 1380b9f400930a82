package mcastd

import (
	"fmt"
	"github.com/roundtable-go/roundtable/pkg/mcast/group"
	"slices"
	"strings"

	"github.com/roundtable-go/roundtable/pkg/cli"
	"github.com/roundtable-go/roundtable/pkg/mcast"
	"github.com/roundtable-go/roundtable/pkg/node"
)

// CheckConfig is what 'mcast check' checks: the 'mcast run --json' logs
// in Files, one member each, against what the run promised.
type CheckConfig struct {
	Files []string
	// Views: the logs of a dynamic group, checked for virtual synchrony
	// (with Total, total order too; with EVS, extended virtual
	// synchrony). Otherwise Order is the fixed group's order.
	Views, Total, EVS bool
	Order             mcast.Order
}

// Check reads and checks the logs and returns the line that says what
// holds. A log that cannot be read is exit 64; a failed check is exit 1
// with the violation, its log lines named FILE:LINE.
func Check(cfg CheckConfig) (string, error) {
	if len(cfg.Files) == 0 {
		cmd := "mcast check LOG..."
		if cfg.Views {
			cmd = "mcast check --views LOG..."
		}
		return "", cli.Exitf(cli.ExitUsage, "check needs the --json logs of the members (%s)", cmd)
	}
	if cfg.Views {
		return checkViews(cfg)
	}
	logs := map[node.ID][]mcast.Record{}
	files := map[node.ID]string{}
	crashed := map[node.ID]bool{}
	deliveries := 0
	for _, file := range cfg.Files {
		id, recs, clean, err := ReadLog(file)
		if err != nil {
			return "", cli.Exitf(cli.ExitUsage, "%s: %v", file, err)
		}
		if _, dup := logs[id]; dup {
			return "", cli.Exitf(cli.ExitUsage, "%s: a second log of member %d", file, id)
		}
		logs[id] = recs
		files[id] = file
		crashed[id] = !clean
		deliveries += len(recs)
	}
	if err := mcast.Check(cfg.Order, logs, crashed); err != nil {
		return "", checkFailed(err, files)
	}
	var down []string
	for id, c := range crashed {
		if c {
			down = append(down, id.String())
		}
	}
	slices.Sort(down)
	msg := fmt.Sprintf("ok: %d members, %d sends and deliveries, %s order holds", len(logs), deliveries, cfg.Order)
	if len(down) > 0 {
		msg += fmt.Sprintf("; members without a clean exit (agreement not required of them): %v", down)
	}
	return msg, nil
}

// checkViews is 'mcast check --views': Nita-Rotaru's properties of virtual
// synchrony over the logs of a dynamic group.
func checkViews(cfg CheckConfig) (string, error) {
	logs := map[group.Member][]group.Record{}
	final := map[group.Member]bool{}
	files := map[node.ID]string{}
	lines, views, safe, merged := 0, map[uint64]bool{}, false, false
	for _, file := range cfg.Files {
		vl, err := ReadViewLog(file)
		if err != nil {
			return "", cli.Exitf(cli.ExitUsage, "%s: %v", file, err)
		}
		if _, dup := files[vl.ID]; dup {
			return "", cli.Exitf(cli.ExitUsage, "%s: a second log of member %d", file, vl.ID)
		}
		files[vl.ID] = file
		for m, recs := range vl.Lives {
			logs[m] = recs
			lines += len(recs)
			for _, r := range recs {
				switch r.Kind {
				case group.VView:
					views[r.View] = true
				case group.VTransitional:
					safe = true
				case group.VMerge:
					merged = true
				}
			}
		}
		if vl.Final != nil {
			final[*vl.Final] = true
		}
	}
	if merged && !cfg.EVS {
		return "", cli.Exitf(cli.ExitUsage, "the logs show merges of components: check them with --partitions evs")
	}
	if err := group.CheckViewsEVS(cfg.Total, cfg.EVS, logs, final); err != nil {
		return "", checkFailed(err, files)
	}
	what := "virtual synchrony"
	if cfg.Total {
		what += ", total order"
	}
	if safe {
		what += ", safe delivery"
	}
	if cfg.EVS {
		what += ", extended virtual synchrony"
	}
	what += " hold"
	return fmt.Sprintf("ok: %d members (%d incarnations), %d views, %d records; %s", len(files), len(logs), len(views), lines, what), nil
}

// checkFailed is a failed check, exit 1, with a violation's log lines as
// FILE:LINE.
func checkFailed(err error, files map[node.ID]string) error {
	msg := err.Error()
	if v, ok := err.(*mcast.Violation); ok {
		msg = v.Detail()
		for id, f := range files {
			msg = strings.ReplaceAll(msg, fmt.Sprintf("member %d line ", id), f+":")
		}
	}
	return cli.Exitf(1, "check failed: %s", msg)
}

// ParsePartitions is --partitions: primary (false) or evs (true).
func ParsePartitions(p string) (evs bool, err error) {
	switch p {
	case "primary":
		return false, nil
	case "evs":
		return true, nil
	}
	return false, cli.Exitf(cli.ExitUsage, "--partitions: %q is not one of: primary, evs", p)
}

// ParseTotal is --total: how a dynamic group makes its one order, one of
// the orders pkg/mcast/group registers.
func ParseTotal(t string) (group.Total, error) {
	if total, ok := group.ParseTotal(t); ok {
		return total, nil
	}
	return 0, cli.Exitf(cli.ExitUsage, "--total: %q is not one of: %s", t, strings.Join(group.TotalNames(), ", "))
}
