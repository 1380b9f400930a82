// Package rawio reads and writes non-blocking stream sockets through the
// runtime's poller with syscall.RawSyscall. It imports only io, syscall
// and unsafe, so that lockd's quick client can use it without
// initialising package net.
package rawio

import (
	"io"
	"syscall"
	"unsafe"
)

// Stream reads and writes a non-blocking socket through the runtime's
// poller, issuing read(2) and write(2) with syscall.RawSyscall.
//
// Why: a Go system call made with syscall.Syscall (what net and os do)
// first tells the scheduler it may block. When every P had been idle —
// which is how a daemon or a client spends the time between two control
// messages — that bookkeeping wakes the runtime's monitor thread (sysmon)
// from its deep sleep with a futex, and the monitor then polls every 20 µs
// until it sees the process idle again. So one message exchanged meant a
// thread wake-up and a burst of timer sleeps on the other CPU, on both
// ends. On a non-blocking socket read and write return at once (data or
// EAGAIN), so the P never needs handing off and RawSyscall is safe: the
// waiting is still the poller's, through RawConn.
//
// docs/performance.md gives what this saves per exchange.
//
// Deadlines set on the connection still apply: RawConn waits on the same
// poller descriptor.
type Stream struct{ rc syscall.RawConn }

// NewStream returns raw I/O for c when c is a socket (or file) whose
// descriptor is non-blocking, and nil otherwise: a blocking descriptor
// would stall the whole P inside RawSyscall.
func NewStream(c any) *Stream {
	sc, ok := c.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil || !NonBlocking(rc) {
		return nil
	}
	return &Stream{rc: rc}
}

// NonBlocking reports whether rc's descriptor is in non-blocking mode, the
// condition for issuing its reads and writes with RawSyscall.
func NonBlocking(rc syscall.RawConn) bool {
	nonblock := false
	_ = rc.Control(func(fd uintptr) {
		fl, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonblock = e == 0 && fl&syscall.O_NONBLOCK != 0
	})
	return nonblock
}

// Read reads what is there, waiting in the poller until something is.
func (r *Stream) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n uintptr
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			n, _, errno = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			if errno != syscall.EINTR {
				return errno != syscall.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, errno
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}

// Write writes all of b (a stream socket may take it in parts), waiting
// in the poller while the socket's buffer is full.
func (r *Stream) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		var n uintptr
		var errno syscall.Errno
		err := r.rc.Write(func(fd uintptr) bool {
			for {
				n, _, errno = syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[done])), uintptr(len(b)-done))
				if errno != syscall.EINTR {
					return errno != syscall.EAGAIN
				}
			}
		})
		if err != nil {
			return done, err
		}
		if errno != 0 {
			return done, errno
		}
		done += int(n)
	}
	return done, nil
}
