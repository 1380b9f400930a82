package transport

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/roundtable-go/roundtable/pkg/rawio"
)

// rawUDP sends and receives on the UDP socket's descriptor with
// syscall.RawSyscall, waiting for readiness in the runtime's poller
// through RawConn — what net.UDPConn does, less the entry into a
// blocking system call, for the reason package rawio gives (that entry
// wakes the runtime's monitor thread whenever the process had been idle,
// which a daemon is between two datagrams). A datagram socket's
// descriptor is non-blocking (the net package makes it so), so recvfrom
// and sendto return at once.
type rawUDP struct {
	rc  syscall.RawConn
	v6  bool // the socket is AF_INET6 (IPv4 peers go as v4-mapped)
	buf [syscall.SizeofSockaddrAny]byte
}

// newRawUDP returns raw I/O for a non-blocking AF_INET or AF_INET6
// socket, or nil (and the caller keeps to net.UDPConn).
func newRawUDP(rc syscall.RawConn) *rawUDP {
	var fam uint16
	nonblock := rawio.NonBlocking(rc)
	_ = rc.Control(func(fd uintptr) {
		var sa syscall.RawSockaddrAny
		l := uint32(syscall.SizeofSockaddrAny)
		if _, _, e := syscall.RawSyscall(syscall.SYS_GETSOCKNAME, fd, uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&l))); e == 0 {
			fam = sa.Addr.Family
		}
	})
	if !nonblock || (fam != syscall.AF_INET && fam != syscall.AF_INET6) {
		return nil
	}
	return &rawUDP{rc: rc, v6: fam == syscall.AF_INET6}
}

var errAddrFamily = errors.New("transport: address family does not match the socket")

// sockaddr encodes ap for this socket's family into b and returns its
// length.
func (r *rawUDP) sockaddr(ap netip.AddrPort, b *[syscall.SizeofSockaddrAny]byte) (int, error) {
	a := ap.Addr()
	if r.v6 {
		sa := (*syscall.RawSockaddrInet6)(unsafe.Pointer(b))
		*sa = syscall.RawSockaddrInet6{Family: syscall.AF_INET6}
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], ap.Port())
		sa.Addr = a.As16() // an IPv4 address becomes v4-mapped
		if a.Is6() && a.Zone() != "" {
			return 0, errAddrFamily // scoped peers keep to net's resolution
		}
		return syscall.SizeofSockaddrInet6, nil
	}
	a = a.Unmap()
	if !a.Is4() {
		return 0, errAddrFamily
	}
	sa := (*syscall.RawSockaddrInet4)(unsafe.Pointer(b))
	*sa = syscall.RawSockaddrInet4{Family: syscall.AF_INET}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], ap.Port())
	sa.Addr = a.As4()
	return syscall.SizeofSockaddrInet4, nil
}

// sendTo sends one datagram to ap, waiting in the poller while the
// socket's buffer is full.
func (r *rawUDP) sendTo(p []byte, ap netip.AddrPort) error {
	var sa [syscall.SizeofSockaddrAny]byte
	l, err := r.sockaddr(ap, &sa)
	if err != nil {
		return err
	}
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	var errno syscall.Errno
	if err := r.rc.Write(func(fd uintptr) bool {
		for {
			_, _, errno = syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(ptr), uintptr(len(p)), 0,
				uintptr(unsafe.Pointer(&sa)), uintptr(l))
			if errno != syscall.EINTR {
				return errno != syscall.EAGAIN
			}
		}
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// recvFrom reads one datagram into p and says where it came from.
func (r *rawUDP) recvFrom(p []byte) (int, netip.AddrPort, error) {
	var n uintptr
	var errno syscall.Errno
	sa := &r.buf
	var l uint32
	if err := r.rc.Read(func(fd uintptr) bool {
		for {
			l = uint32(len(sa))
			n, _, errno = syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 0,
				uintptr(unsafe.Pointer(sa)), uintptr(unsafe.Pointer(&l)))
			if errno != syscall.EINTR {
				return errno != syscall.EAGAIN
			}
		}
	}); err != nil {
		return 0, netip.AddrPort{}, err
	}
	if errno != 0 {
		return 0, netip.AddrPort{}, errno
	}
	return int(n), decodeSockaddr(sa[:l]), nil
}

// decodeSockaddr reads an AF_INET or AF_INET6 address; anything else (or
// a short one) is the zero AddrPort.
func decodeSockaddr(b []byte) netip.AddrPort {
	if len(b) < 2 {
		return netip.AddrPort{}
	}
	switch *(*uint16)(unsafe.Pointer(&b[0])) {
	case syscall.AF_INET:
		if len(b) < syscall.SizeofSockaddrInet4 {
			return netip.AddrPort{}
		}
		sa := (*syscall.RawSockaddrInet4)(unsafe.Pointer(&b[0]))
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), port)
	case syscall.AF_INET6:
		if len(b) < syscall.SizeofSockaddrInet6 {
			return netip.AddrPort{}
		}
		sa := (*syscall.RawSockaddrInet6)(unsafe.Pointer(&b[0]))
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
		a := netip.AddrFrom16(sa.Addr)
		if sa.Scope_id != 0 {
			// A link-local sender: keep its interface, by index, so the
			// reply (sent through net, which reads numeric zones) goes
			// back out the same way.
			a = a.WithZone(strconv.FormatUint(uint64(sa.Scope_id), 10))
		}
		return netip.AddrPortFrom(a, port)
	}
	return netip.AddrPort{}
}
