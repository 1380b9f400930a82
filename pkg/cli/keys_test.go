package cli

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roundtable-go/roundtable/pkg/node"
	"github.com/roundtable-go/roundtable/pkg/transport"
	"github.com/roundtable-go/roundtable/pkg/wire"
)

type idle struct{}

func (idle) Run(ctx context.Context, _ func(node.Event)) error { <-ctx.Done(); return nil }

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestSIGHUPReloadsKeys: a started member re-reads --key-file on SIGHUP
// (every tool's member starts through Member.Start), keeps its keys and
// logs an ERROR when the file is bad, passes SIGHUP on Hangups and not
// on Signals, and still stops on SIGTERM.
func TestSIGHUPReloadsKeys(t *testing.T) {
	a, b := bytes.Repeat([]byte{1}, wire.KeySize), bytes.Repeat([]byte{2}, wire.KeySize)
	path := filepath.Join(t.TempDir(), "cluster.key")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(hex.EncodeToString(a) + "\n")
	cm := &Common{Tool: "test", Log: slog.New(slog.DiscardHandler)}
	if err := cm.loadKeys(path); err != nil {
		t.Fatal(err)
	}
	var logs syncBuf
	cm.Log = NewLogger(&logs, "test", slog.LevelInfo, false)
	m := &Member{Common: cm, ID: 1, Net: transport.NewNetwork().Endpoint(1), Framer: wire.NewFramerRing("c", 1, 1, cm.Key)}
	r, err := m.Start(idle{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	hangup := func() {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		select {
		case <-r.Hangups:
		case s := <-r.Signals:
			t.Fatalf("SIGHUP arrived as a stop signal (%v)", s)
		case <-time.After(10 * time.Second):
			t.Fatal("SIGHUP not passed on Hangups")
		}
	}
	ids := func(keys ...[]byte) string {
		var out []string
		for _, k := range keys {
			out = append(out, fmt.Sprintf("%04x", wire.KeyID(k)))
		}
		return fmt.Sprint(out)
	}

	write(hex.EncodeToString(b) + "\n" + hex.EncodeToString(a) + "\n")
	hangup()
	if got := fmt.Sprint(cm.Key.IDs()); got != ids(b, a) {
		t.Fatalf("after SIGHUP the keys are %v, want %v", got, ids(b, a))
	}
	if !strings.Contains(logs.String(), "key file reloaded") {
		t.Fatalf("log: %s", logs.String())
	}

	write(hex.EncodeToString(b) + "\nnot a key\n")
	hangup()
	if got := fmt.Sprint(cm.Key.IDs()); got != ids(b, a) {
		t.Fatalf("a bad file changed the keys to %v", got)
	}
	if l := logs.String(); !strings.Contains(l, "ERROR") || !strings.Contains(l, "key file not reloaded") || !strings.Contains(l, "line 2") {
		t.Fatalf("no ERROR for the bad file: %s", l)
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-r.Signals:
		if s != syscall.SIGTERM {
			t.Fatalf("got %v on Signals", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM not passed on Signals")
	}
}
