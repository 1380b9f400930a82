package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

func TestParsePeers(t *testing.T) {
	p, err := ParsePeers("1=127.0.0.1:7001, 2=127.0.0.1:7002")
	if err != nil || len(p) != 2 || p[2] != "127.0.0.1:7002" {
		t.Fatalf("%v %v", p, err)
	}
	file := filepath.Join(t.TempDir(), "peers")
	os.WriteFile(file, []byte("# members\n1=h1:1\n3=h3:3 # third\n"), 0o644)
	if p, err := ParsePeers("@" + file); err != nil || len(p) != 2 || p[3] != "h3:3" {
		t.Fatalf("file: %v %v", p, err)
	}
	if p, err := ParsePeers("@../../testdata/peers-5.txt"); err != nil || len(p) != 5 || p[5] != "127.0.0.1:7005" {
		t.Fatalf("testdata: %v %v", p, err)
	}
	for _, bad := range []string{"", "1", "0=h:1", "x=h:1", "1=h", "1=h:1,1=h:2", "1=h:1,2=h:1", "@/nonexistent"} {
		if _, err := ParsePeers(bad); err == nil {
			t.Errorf("ParsePeers(%q) accepted", bad)
		}
	}
}

func TestEnvName(t *testing.T) {
	if got := Env("elect", "key-file"); got != "ELECT_KEY_FILE" {
		t.Fatal(got)
	}
}

func TestResolveBind(t *testing.T) {
	if got, err := ResolveBind("127.0.0.1:7000"); err != nil || got != "127.0.0.1:7000" {
		t.Fatal(got, err)
	}
	tmpl := `{{ GetAllInterfaces | include "flags" "loopback" | include "type" "IPv4" | limit 1 | attr "address" }}:7000`
	if got, err := ResolveBind(tmpl); err != nil || got != "127.0.0.1:7000" {
		t.Fatal(got, err)
	}
	if _, err := ResolveBind("{{ nonsense }}"); err == nil {
		t.Fatal("bad template accepted")
	}
}

func TestOutputJSON(t *testing.T) {
	var b strings.Builder
	o := NewOutput(&b, true)
	o.JSON(map[string]int{"a": 1})
	if b.String() != "{\"a\":1}\n" {
		t.Fatalf("%q", b.String())
	}
}

// TestUsageErrorsOnStderr: a flag urfave/cli cannot parse, at the top or in
// a command, is one usage error (exit 64) with the flag as typed, and
// nothing on stdout, where urfave/cli would print its help.
func TestUsageErrorsOnStderr(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"tool", "--bogus"}, "flag provided but not defined: --bogus (see 'tool --help')"},
		{[]string{"tool", "cmd", "--jsn"}, "flag provided but not defined: --jsn (see 'tool cmd --help')"},
		{[]string{"tool", "cmd", "-x"}, "flag provided but not defined: -x (see 'tool cmd --help')"},
		{[]string{"tool", "cmd", "--timeout", "soon"}, `invalid value "soon" for flag --timeout: parse error (see 'tool cmd --help')`},
		{[]string{"tool", "cmd", "sub", "--timeout"}, "flag needs an argument: --timeout (see 'tool cmd sub --help')"},
	}
	for _, c := range cases {
		var stdout strings.Builder
		ran := false
		action := func(*ucli.Context) error { ran = true; return nil }
		flags := []ucli.Flag{&ucli.DurationFlag{Name: "timeout"}}
		app := &ucli.App{Name: "tool", Writer: &stdout, ErrWriter: &stdout, Action: action, Commands: []*ucli.Command{{
			Name: "cmd", Flags: flags, Action: action,
			Subcommands: []*ucli.Command{{Name: "sub", Flags: flags, Action: action}},
		}}}
		err := Prepare(app).Run(c.args)
		if Code(err) != ExitUsage || err.Error() != c.want || ran || stdout.Len() > 0 {
			t.Errorf("%q: exit %d, error %q, action ran %v, output %q; want exit 64, %q, no action, no output",
				c.args, Code(err), err, ran, stdout.String(), c.want)
		}
	}
}

// TestStateNumbers: a state file keeps several numbers on one line; one
// written with fewer (an older format) reads the rest as 0.
func TestStateNumbers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	if v, err := ReadUints(path, 2); err != nil || v[0] != 0 || v[1] != 0 {
		t.Fatalf("missing file: %v %v", v, err)
	}
	if err := WriteUint(path, 7); err != nil {
		t.Fatal(err)
	}
	if v, err := ReadUints(path, 2); err != nil || v[0] != 7 || v[1] != 0 {
		t.Fatalf("one number, read as two: %v %v", v, err)
	}
	if err := WriteUints(path, 9, 1<<40); err != nil {
		t.Fatal(err)
	}
	if v, err := ReadUints(path, 2); err != nil || v[0] != 9 || v[1] != 1<<40 {
		t.Fatalf("two numbers: %v %v", v, err)
	}
	if v, err := ReadUint(path); err != nil || v != 9 {
		t.Fatalf("ReadUint of two numbers: %v %v", v, err)
	}
	os.WriteFile(path, []byte("x\n"), 0o600)
	if _, err := ReadUints(path, 2); err == nil {
		t.Fatal("a state file that is not numbers read without error")
	}
}
