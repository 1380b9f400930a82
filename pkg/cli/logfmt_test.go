package cli

import (
	"encoding/json"
	"flag"
	"log/slog"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	ucli "github.com/urfave/cli/v2"
)

// TestLogFormatJSON: --log-format json writes one JSON object per record
// with time, level, msg, tool, and the record's fields.
func TestLogFormatJSON(t *testing.T) {
	var b strings.Builder
	log := LogConfig{JSON: true, Level: slog.LevelInfo}.Logger(&b, "lockd").With("member", 3)
	log.Debug("hidden")
	log.Info("started", "addr", "127.0.0.1:7001", "members", 3, "lease", 1500*time.Millisecond, "signal", syscall.SIGTERM)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1 (debug is below info): %q", len(lines), b.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("not JSON: %q: %v", lines[0], err)
	}
	for k, v := range map[string]any{"level": "INFO", "msg": "started", "tool": "lockd", "member": 3.0, "addr": "127.0.0.1:7001", "members": 3.0,
		"lease": "1.5s", "signal": "terminated"} {
		if rec[k] != v {
			t.Errorf("%s = %v, want %v in %s", k, rec[k], v, lines[0])
		}
	}
	if _, ok := rec["time"].(string); !ok {
		t.Errorf("no time in %s", lines[0])
	}
}

// TestLogTextStamp: text lines start with the time when asked (stderr not
// a terminal), and not otherwise.
func TestLogTextStamp(t *testing.T) {
	var b strings.Builder
	LogConfig{Level: slog.LevelInfo, Stamp: true}.Logger(&b, "elect").Info("started", "id", 1)
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d) INFO elect: started id=1\n$`).MatchString(b.String()) {
		t.Errorf("stamped: %q", b.String())
	}
	b.Reset()
	LogConfig{Level: slog.LevelInfo}.Logger(&b, "elect").Info("started", "id", 1)
	if b.String() != "INFO elect: started id=1\n" {
		t.Errorf("unstamped: %q", b.String())
	}
}

// TestLogFormatFlag: --log-format takes text or json; anything else is a
// usage error.
func TestLogFormatFlag(t *testing.T) {
	for _, c := range []struct {
		v    string
		json bool
		code int
	}{{"text", false, 0}, {"json", true, 0}, {"", false, 0}, {"JSON", false, ExitUsage}, {"logfmt", false, ExitUsage}} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		for _, f := range LogFlags() {
			f.Apply(fs)
		}
		fs.Set(FlagLogFormat, c.v)
		lc, err := logConfig(ucli.NewContext(nil, fs, nil))
		if Code(err) != c.code || err == nil && lc.JSON != c.json {
			t.Errorf("--log-format %q: %+v, exit %d; want json=%v, exit %d", c.v, lc, Code(err), c.json, c.code)
		}
		if err != nil && !strings.Contains(err.Error(), "text or json") {
			t.Errorf("--log-format %q: %v", c.v, err)
		}
	}
}

// TestNoKeyWarningQuiet: the warning about unauthenticated frames is left
// out only for --insecure with every member on loopback.
func TestNoKeyWarningQuiet(t *testing.T) {
	for _, c := range []struct {
		peers    string
		insecure bool
		quiet    bool
	}{
		{"1=127.0.0.1:7999", false, false},
		{"1=127.0.0.1:7999", true, true},
		{"1=127.0.0.1:7999,2=192.0.2.7:7001", true, false},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		for _, f := range NodeFlags() {
			f.Apply(fs)
		}
		fs.Set(FlagPeers, c.peers)
		fs.Set(FlagID, "1")
		fs.Set(FlagBind, "127.0.0.1:0")
		if c.insecure {
			fs.Set(FlagInsecure, "true")
		}
		m, err := Join(ucli.NewContext(nil, fs, nil), "elect")
		if err != nil {
			t.Fatalf("%s: %v", c.peers, err)
		}
		m.Close()
		if m.quietNoKey != c.quiet {
			t.Errorf("--peers %s --insecure=%v: quiet %v, want %v", c.peers, c.insecure, m.quietNoKey, c.quiet)
		}
	}
}
