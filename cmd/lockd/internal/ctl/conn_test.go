package ctl

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/roundtable-go/roundtable/pkg/rawio"
)

// unixPair returns both ends of a connected Unix stream socket, as the
// daemon (net) and lockd run (connectUnix) each open theirs.
func unixPair(t *testing.T) (*net.UnixConn, *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := connectUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); f.Close() })
	return c.(*net.UnixConn), f
}

// TestConnOverRawIO: requests and replies cross a real socket pair in both
// directions through Conn.
func TestConnOverRawIO(t *testing.T) {
	srv, cli := unixPair(t)
	s, c := NewConn(srv), NewConn(cli)
	if _, ok := s.rw.(*rawio.Stream); !ok {
		t.Fatal("daemon side not on raw I/O")
	}
	if _, ok := c.rw.(*rawio.Stream); !ok {
		t.Fatal("client side not on raw I/O")
	}
	for i := 0; i < 100; i++ {
		if err := c.Send(Request{Op: "acquire", Name: "db"}); err != nil {
			t.Fatal(err)
		}
		var req Request
		if err := s.Next(&req); err != nil || req != (Request{Op: "acquire", Name: "db"}) {
			t.Fatalf("daemon read %+v, %v", req, err)
		}
		if err := s.Send(Reply{Event: "acquired", Name: "db", Token: uint64(i + 1)}); err != nil {
			t.Fatal(err)
		}
		var rep Reply
		if err := c.Next(&rep); err != nil || rep.Token != uint64(i+1) {
			t.Fatalf("client read %+v, %v", rep, err)
		}
	}
}
