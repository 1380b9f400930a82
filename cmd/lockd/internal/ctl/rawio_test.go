package ctl

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
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

// TestRawIOOnlyOnNonBlocking: raw I/O is used for both kinds of socket the
// control protocol runs over, and never for a blocking descriptor (which
// would stall the P inside RawSyscall) or for something with no
// descriptor at all.
func TestRawIOOnlyOnNonBlocking(t *testing.T) {
	srv, cli := unixPair(t)
	if newRawIO(srv) == nil || newRawIO(cli) == nil {
		t.Fatal("no raw I/O for a non-blocking Unix socket")
	}
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	defer r.Close()
	defer w.Close()
	if newRawIO(r) != nil {
		t.Fatal("raw I/O chosen for a blocking descriptor")
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if newRawIO(a) != nil {
		t.Fatal("raw I/O chosen for a connection without a descriptor")
	}
}

// TestRawIOStream: a write larger than the socket buffer arrives whole and
// in order (partial writes are continued after waiting for room), and the
// peer closing reads as io.EOF.
func TestRawIOStream(t *testing.T) {
	srv, cli := unixPair(t)
	w, r := newRawIO(srv), newRawIO(cli)
	want := make([]byte, 4<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	errc := make(chan error, 1)
	go func() {
		n, err := w.Write(want)
		if err == nil && n != len(want) {
			err = io.ErrShortWrite
		}
		srv.Close()
		errc <- err
	}()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
	}
	if n, err := r.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("read after EOF: %d, %v", n, err)
	}
}

// TestConnOverRawIO: requests and replies cross a real socket pair in both
// directions through Conn.
func TestConnOverRawIO(t *testing.T) {
	srv, cli := unixPair(t)
	s, c := NewConn(srv), NewConn(cli)
	if _, ok := s.rw.(*rawIO); !ok {
		t.Fatal("daemon side not on raw I/O")
	}
	if _, ok := c.rw.(*rawIO); !ok {
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
