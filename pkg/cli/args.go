package cli

import (
	"regexp"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// Reorder moves the flags a user typed after a command's positional
// arguments in front of them, so that urfave/cli (which, as Go's flag
// package, stops at the first positional argument) reads them:
// `clocksync query HOST:PORT --samples 4` is `clocksync query --samples 4
// HOST:PORT`. It also reads `-E3` as `-E 3`, as getopt does.
//
// A command that runs a child (its ArgsUsage contains "--") takes as many
// positional arguments as its ArgsUsage names before the "--"; the first
// word past them starts the child's command line, and nothing from there
// on is touched: everything after "--" belongs to the child, always.
func Reorder(app *ucli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	i, flags, cmd := 1, app.Flags, (*ucli.Command)(nil)
	for i < len(args) {
		next := findCommand(commandsOf(app, cmd), args[i])
		if next == nil {
			break
		}
		cmd, flags = next, next.Flags
		i++
	}
	if cmd == nil {
		return args
	}
	head := append([]string{}, args[:i]...)
	positional, child := childArgs(cmd.ArgsUsage)
	var moved, pos []string
	rest := args[i:]
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if a == "--" || child && len(pos) > positional {
			pos = append(pos, rest[j:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		f := findFlag(flags, name)
		if f == nil && !strings.HasPrefix(a, "--") && len(name) > 1 {
			// -E3: the one-letter flag E with its value attached.
			if short := findFlag(flags, name[:1]); short != nil && takesValue(short) {
				moved = append(moved, "-"+name[:1], name[1:])
				continue
			}
		}
		moved = append(moved, a)
		if f != nil && takesValue(f) && !hasValue && j+1 < len(rest) {
			moved = append(moved, rest[j+1])
			j++
		}
	}
	return append(append(head, moved...), pos...)
}

func commandsOf(app *ucli.App, cmd *ucli.Command) []*ucli.Command {
	if cmd == nil {
		return app.Commands
	}
	return cmd.Subcommands
}

func findCommand(cmds []*ucli.Command, name string) *ucli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func findFlag(flags []ucli.Flag, name string) ucli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func takesValue(f ucli.Flag) bool {
	_, isBool := f.(*ucli.BoolFlag)
	return !isBool
}

var childUsage = regexp.MustCompile(`^((?:[A-Z]+ )*)\[?--`)

// childArgs reads a command's ArgsUsage ("NAME -- command args...",
// "[-- command args...]"): whether it runs a child, and how many
// positional arguments come before the child's command line.
func childArgs(usage string) (positional int, child bool) {
	m := childUsage.FindStringSubmatch(usage)
	if m == nil {
		return 0, false
	}
	return len(strings.Fields(m[1])), true
}
