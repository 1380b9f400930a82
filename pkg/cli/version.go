package cli

import (
	"fmt"
	"runtime/debug"
	"strings"

	ucli "github.com/urfave/cli/v2"
)

// Version is the running binary's module version and VCS revision, as the
// Go toolchain recorded them: "v1.2.0" for a tagged `go install`,
// "(devel) 0123abcd4567 (modified)" for a build in a git clone whose tree
// had changes. A build that recorded no revision says so, and why it may
// not have. A release build stamps its version instead (see stamped).
func Version() string {
	if stamped != "" {
		return stamped
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return versionOf(bi.Main.Version, bi.Settings)
}

// stamped is the version a release build sets with
// -ldflags "-X github.com/roundtable-go/roundtable/pkg/cli.stamped=V"
// (scripts/release.sh: the output of git describe). Empty otherwise.
var stamped string

// noRevision ends a version that carries no VCS revision.
const noRevision = ", no VCS revision recorded (built outside a git clone, in a git worktree, or with -buildvcs=false)"

func versionOf(v string, settings []debug.BuildSetting) string {
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	switch {
	case rev != "" && !strings.Contains(v, rev):
		v += " " + rev
	case rev == "" && v == "(devel)":
		return v + noRevision
	}
	return v + modified
}

func versionCommand(app *ucli.App) *ucli.Command {
	return &ucli.Command{
		Name:  "version",
		Usage: "print the version (module version and VCS revision)",
		Action: func(c *ucli.Context) error {
			_, err := fmt.Fprintf(c.App.Writer, "%s %s\n", app.Name, app.Version)
			return err
		},
	}
}

// completionCommand prints a script that completes the tool's commands
// and flags, through urfave/cli's --generate-bash-completion.
func completionCommand(app *ucli.App) *ucli.Command {
	return &ucli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: `Load it in the current shell, or install it for every new one:

   source <(` + app.Name + ` completion bash)
   ` + app.Name + ` completion bash > /etc/bash_completion.d/` + app.Name + `
   ` + app.Name + ` completion zsh > "${fpath[1]}/_` + app.Name + `"
   ` + app.Name + ` completion fish > ~/.config/fish/completions/` + app.Name + `.fish`,
		Action: func(c *ucli.Context) error {
			shell := c.Args().First()
			if c.Args().Len() != 1 || shell != "bash" && shell != "zsh" && shell != "fish" {
				return Exitf(ExitUsage, "completion takes one shell: bash, zsh or fish")
			}
			_, err := fmt.Fprint(c.App.Writer, completionScript(app.Name, shell))
			return err
		},
	}
}

func completionScript(tool, shell string) string {
	fn := "_" + strings.ReplaceAll(tool, "-", "_") + "_complete"
	bash := fmt.Sprintf(`%[1]s() {
  local cur words
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == -* ]]; then
    words=$("${COMP_WORDS[@]:0:COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    words=$("${COMP_WORDS[@]:0:COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o bashdefault -o default -F %[1]s %[2]s
`, fn, tool)
	if shell == "fish" {
		// The same question as bash's: the words typed so far, then
		// --generate-bash-completion; fish offers files beside the
		// answers, as bash's -o default does.
		return fmt.Sprintf(`function %[1]s
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    if string match -q -- '-*' $cur
        $words $cur --generate-bash-completion 2>/dev/null
    else
        $words --generate-bash-completion 2>/dev/null
    end
end
complete -c %[2]s -a '(%[1]s)'
`, fn, tool)
	}
	if shell == "zsh" {
		return "#compdef " + tool + "\nautoload -U +X bashcompinit && bashcompinit\n" + bash
	}
	return bash
}
