package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// unixPair returns both ends of a connected Unix stream socket.
func unixPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// TestOnlyNonBlocking: raw I/O for a non-blocking socket, never for a
// blocking descriptor (which would stall the P inside RawSyscall) or for
// a connection without a descriptor.
func TestOnlyNonBlocking(t *testing.T) {
	a, _ := unixPair(t)
	if NewStream(a) == nil {
		t.Fatal("no raw I/O for a non-blocking Unix socket")
	}
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	defer r.Close()
	defer w.Close()
	if NewStream(r) != nil {
		t.Fatal("raw I/O chosen for a blocking descriptor")
	}
	x, y := net.Pipe()
	defer x.Close()
	defer y.Close()
	if NewStream(x) != nil {
		t.Fatal("raw I/O chosen for a connection without a descriptor")
	}
}

// TestStreamWholeAndEOF: a write larger than the socket buffer arrives
// whole and in order (partial writes are continued after waiting for
// room), and the peer closing reads as io.EOF.
func TestStreamWholeAndEOF(t *testing.T) {
	a, b := unixPair(t)
	w, r := NewStream(a), NewStream(b)
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
		a.Close()
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

// TestDeadline: a deadline set on the connection ends a raw read that
// has nothing to read, as it ends net.Conn's.
func TestDeadline(t *testing.T) {
	a, _ := unixPair(t)
	r := NewStream(a)
	a.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := r.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v", err)
	}
}
