package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
