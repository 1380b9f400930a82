package mcastd

import (
	"context"
	"errors"
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
