package mcastd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/cli"
)

func feedAll(t *testing.T, in string, b64 bool, limit int) ([]string, error) {
	t.Helper()
	var got []string
	_, err := Feed(context.Background(), strings.NewReader(in), b64, limit, func(b [][]byte) error {
		for _, l := range b {
			got = append(got, string(l))
		}
		return nil
	})
	return got, err
}

// TestFeedKeepsBytes: a line is its bytes up to the newline, a carriage
// return included; with --base64 the carriage return is white space.
func TestFeedKeepsBytes(t *testing.T) {
	got, err := feedAll(t, "a\r\n\r\nb\rc\nlast\r", false, 100)
	if err != nil || strings.Join(got, "|") != "a\r|\r|b\rc|last\r" {
		t.Fatalf("%q, %v", got, err)
	}
	got, err = feedAll(t, "YQ0=\r\nYg==\n", true, 100)
	if err != nil || strings.Join(got, "|") != "a\r|b" {
		t.Fatalf("base64: %q, %v", got, err)
	}
}

// TestFeedLimit: a line of exactly the limit goes; one byte more is a
// usage error naming the line and its size.
func TestFeedLimit(t *testing.T) {
	at := strings.Repeat("x", 1000)
	if got, err := feedAll(t, "a\n"+at+"\n", false, 1000); err != nil || len(got) != 2 {
		t.Fatalf("%d lines, %v", len(got), err)
	}
	for _, in := range []string{"a\n" + at + "x\n", "a\n" + at + "x"} {
		_, err := feedAll(t, in, false, 1000)
		var ee *cli.ExitError
		if !errors.As(err, &ee) || ee.Code != cli.ExitUsage || !strings.Contains(err.Error(), "line 2 is 1001 bytes, over the limit of 1000") {
			t.Fatalf("got %v", err)
		}
	}
}

// TestReadViewLogChecksIncarnation: a delivery names its sender's
// incarnation, which must be the one in the view it is delivered in.
func TestReadViewLogChecksIncarnation(t *testing.T) {
	view := `{"time":"t","event":"view","member":1,"view":4,"leader":1,"members":[{"id":1,"inc":5},{"id":2,"inc":7}]}`
	deliver := func(inc int) string {
		return fmt.Sprintf(`{"time":"t","event":"deliver","member":1,"view":4,"inc":%d,"sender":2,"seq":1,"payload":"x"}`, inc)
	}
	dir := t.TempDir()
	for inc, ok := range map[int]bool{7: true, 8: false} {
		f := filepath.Join(dir, fmt.Sprint(inc))
		os.WriteFile(f, []byte(view+"\n"+deliver(inc)+"\n"), 0o644)
		_, err := ReadViewLog(f)
		if ok != (err == nil) || !ok && !strings.Contains(err.Error(), "line 2: delivery 4/1 from incarnation 8 of member 2, which is in view 4 as incarnation 7") {
			t.Fatalf("inc %d: %v", inc, err)
		}
	}
}
