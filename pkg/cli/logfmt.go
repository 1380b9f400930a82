package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	ucli "github.com/urfave/cli/v2"
)

// FlagLogFormat is --log-format.
const FlagLogFormat = "log-format"

// LogFormatFlag is --log-format: text lines, or one JSON object per line.
func LogFormatFlag() ucli.Flag {
	return &ucli.StringFlag{Name: FlagLogFormat, Value: "text", Usage: "text, or json (one object per line: time, level, msg, tool, member and the record's fields)"}
}

// exitLog, once a command has asked for JSON logs, carries Exit's message
// as a JSON record too, so that stderr stays JSON lines to the end.
var exitLog atomic.Pointer[slog.Logger]

// LogConfig is how a tool logs on stderr.
type LogConfig struct {
	JSON   bool       // log/slog's JSON handler instead of text lines
	Level  slog.Level // records below it are dropped
	Colour bool       // text: colour the level
	Stamp  bool       // text: start each line with the time
}

// Logger returns the logger lc asks for, writing to w, every record
// naming tool.
func (lc LogConfig) Logger(w io.Writer, tool string) *slog.Logger {
	if lc.JSON {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lc.Level, ReplaceAttr: jsonAttr})).With("tool", tool)
	}
	return slog.New(&lineHandler{w: w, tool: tool, level: lc.Level, colour: lc.Colour, stamp: lc.Stamp, mu: &sync.Mutex{}})
}

// jsonAttr writes durations and signals as the text logs do ("1.5s",
// "terminated") rather than as bare numbers of nanoseconds or a signal's
// number.
func jsonAttr(_ []string, a slog.Attr) slog.Attr {
	switch v := a.Value.Any().(type) {
	case time.Duration:
		return slog.String(a.Key, v.String())
	case os.Signal:
		return slog.String(a.Key, v.String())
	}
	return a
}

// ParseLogFormat parses --log-format.
func ParseLogFormat(s string) (json bool, err error) {
	switch s {
	case "text", "":
		return false, nil
	case "json":
		return true, nil
	}
	return false, Exitf(ExitUsage, "--log-format must be text or json, not %q", s)
}

// logConfig reads --log-level, --log-format and --no-color. Text lines
// carry a timestamp when stderr is not a terminal, unless stderr is the
// journal, which stamps every line itself.
func logConfig(c *ucli.Context) (LogConfig, error) {
	level, err := ParseLevel(c.String(FlagLogLevel))
	if err != nil {
		return LogConfig{}, err
	}
	js, err := ParseLogFormat(c.String(FlagLogFormat))
	if err != nil {
		return LogConfig{}, err
	}
	tty := isatty.IsTerminal(os.Stderr.Fd()) || isatty.IsCygwinTerminal(os.Stderr.Fd())
	return LogConfig{JSON: js, Level: level, Colour: UseColor(os.Stderr, c.Bool(FlagNoColor)),
		Stamp: !tty && !toJournal(os.Stderr)}, nil
}

// toJournal reports whether f is the stream systemd connected to the
// journal: JOURNAL_STREAM is its "device:inode" (systemd.exec(5)).
func toJournal(f *os.File) bool {
	js := os.Getenv("JOURNAL_STREAM")
	if js == "" {
		return false
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return js == fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

// warnNoKey says on stderr, whatever --log-level, that frames travel
// unauthenticated: a text line, or a JSON record with --log-format json.
func (m *Member) warnNoKey() {
	if m.logJSON {
		LogConfig{JSON: true, Level: slog.LevelWarn}.Logger(os.Stderr, m.Tool).
			Warn("no --key-file: frames are NOT authenticated", "member", m.ID, "addr", m.Net.Addr())
		return
	}
	fmt.Fprintf(os.Stderr, "%s: warning: no --key-file: frames are NOT authenticated; anyone who can reach %s can take part\n", m.Tool, m.Net.Addr())
}
