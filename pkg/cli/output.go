package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"

	"github.com/roundtable-go/roundtable/pkg/node"
)

// Output prints events on stdout: one text line each, or one JSON object
// per line. It is safe for concurrent use.
type Output struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
}

// NewOutput returns an Output on w.
func NewOutput(w io.Writer, jsonLines bool) *Output { return &Output{w: w, json: jsonLines} }

// Event prints one event. JSON lines also carry "time", when the event
// was printed (RFC 3339, nanoseconds), so scripts can measure intervals
// across processes on one host.
func (o *Output) Event(ev node.Event) {
	if !o.json {
		o.Line(ev.String())
		return
	}
	b, err := json.Marshal(ev)
	if err != nil || len(b) < 2 || b[0] != '{' {
		o.JSON(ev)
		return
	}
	stamp := fmt.Sprintf(`{"time":%q`, time.Now().Format(time.RFC3339Nano))
	if b[1] != '}' {
		stamp += ","
	}
	o.Line(stamp + string(b[1:]))
}

// Line prints one text line, in one write: a reader sees it at once. It is
// not fsync'ed: an event stream needs no durability, and a disk flush per
// event would slow a stdout redirected to a file many times over.
func (o *Output) Line(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := make([]byte, 0, len(s)+1)
	o.w.Write(append(append(b, s...), '\n'))
}

// JSON prints v as one JSON line.
func (o *Output) JSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"event":"error","error":%q}`, err.Error()))
	}
	o.Line(string(b))
}

// Value prints text, or v as one JSON line with --json.
func (o *Output) Value(text string, v any) {
	if o.json {
		o.JSON(v)
	} else {
		o.Line(text)
	}
}

// IsJSON reports whether the output is JSON lines.
func (o *Output) IsJSON() bool { return o.json }

// UseColor reports whether logs on w may be coloured: only on a terminal,
// never with --no-color or a non-empty NO_COLOR.
func UseColor(w *os.File, noColor bool) bool {
	if noColor || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return isatty.IsTerminal(w.Fd()) || isatty.IsCygwinTerminal(w.Fd())
}

// ParseLevel parses --log-level.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, Exitf(ExitUsage, "--log-level must be debug, info, warn or error, not %q", s)
	}
	return l, nil
}

// NewLogger returns a logger writing "LEVEL tool: message key=value" lines to
// w, coloured by level when colour is on.
func NewLogger(w io.Writer, tool string, level slog.Level, colour bool) *slog.Logger {
	return LogConfig{Level: level, Colour: colour}.Logger(w, tool)
}

type lineHandler struct {
	w      io.Writer
	tool   string
	level  slog.Level
	colour bool
	stamp  bool // start each line with the record's time
	attrs  []slog.Attr
	mu     *sync.Mutex
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	lvl := r.Level.String()
	if h.colour {
		c := color.New(color.FgCyan)
		switch {
		case r.Level >= slog.LevelError:
			c = color.New(color.FgRed, color.Bold)
		case r.Level >= slog.LevelWarn:
			c = color.New(color.FgYellow)
		case r.Level < slog.LevelInfo:
			c = color.New(color.Faint)
		}
		c.EnableColor()
		lvl = c.Sprint(lvl)
	}
	if h.stamp {
		b.WriteString(r.Time.Format("2006-01-02T15:04:05.000Z07:00 "))
	}
	fmt.Fprintf(&b, "%s %s: %s", lvl, h.tool, r.Message)
	write := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &n
}

func (h *lineHandler) WithGroup(string) slog.Handler { return h }
