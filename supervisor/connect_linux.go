package supervisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"

	kseccomp "github.com/cordon-sandbox/cordon/internal/seccomp"
)

// ConnectEvent is a socket of the sandbox connected to the network proxy:
// who called connect, and which socket (its inode, as /proc/PID/fd shows
// it: socket:[INODE]).
type ConnectEvent struct {
	Pid   int
	Inode uint64
	Addr  netip.AddrPort
}

// i386's system call numbers of connect, listen and socketcall.
const (
	i386Connect    = 362
	i386Listen     = 363
	i386Socketcall = 102
)

// netCall is which call a notification of the network rules is.
type netCall int

const (
	callConnect    netCall = iota
	callSocketcall         // i386's multiplexed call: its arguments are in memory
	callListen             // GatedFilter's
)

// connectTable maps every architecture's number of connect and listen,
// and i386's socketcall (which libseccomp notifies for a connect rule
// too), to which call it is.
func connectTable() (map[createKey]netCall, error) {
	out := map[createKey]netCall{}
	for _, a := range []struct {
		arch  seccomp.ScmpArch
		audit uint32
	}{
		{seccomp.ArchAMD64, unix.AUDIT_ARCH_X86_64},
		{seccomp.ArchX32, unix.AUDIT_ARCH_X86_64},
		{seccomp.ArchX86, unix.AUDIT_ARCH_I386},
	} {
		for _, name := range []string{"connect", "socketcall", "listen"} {
			sc, err := seccomp.GetSyscallFromNameByArch(name, a.arch)
			if err != nil {
				if errors.Is(err, seccomp.ErrSyscallDoesNotExist) {
					continue
				}
				return nil, fmt.Errorf("resolving %s for %v: %w", name, a.arch, err)
			}
			if sc < 0 {
				continue
			}
			out[createKey{a.audit, int32(sc)}] = map[string]netCall{"connect": callConnect, "socketcall": callSocketcall, "listen": callListen}[name]
		}
	}
	// libseccomp resolves i386's connect to a pseudo number (it is
	// multiplexed through socketcall there) but its rule also notifies the
	// direct call the kernel has had since 4.3: both numbers, by hand.
	out[createKey{unix.AUDIT_ARCH_I386, i386Connect}] = callConnect
	out[createKey{unix.AUDIT_ARCH_I386, i386Listen}] = callListen
	out[createKey{unix.AUDIT_ARCH_I386, i386Socketcall}] = callSocketcall
	return out, nil
}

// handleConnect records a connect to the proxy (see noteConnect) and lets
// every connect continue. What it records can only be the caller's own
// doing: another thread of the caller may change the address or the
// descriptor after it was read, which at worst leaves the socket that
// really connects without a record (an unknown owner: rules limited to
// programs do not match it), or records the caller for a socket of its
// own. A socket connected by one process and then passed to another
// (inherited, SCM_RIGHTS) stays the first one's connection.
func (s *Supervisor) handleConnect(n *kseccomp.Notif, call netCall) {
	if s.opts.ConnectGate {
		s.gateConnect(n, call)
		return
	}
	if call == callConnect {
		s.noteConnect(n)
	}
	resp := kseccomp.NotifResp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	if err := kseccomp.NotifSend(s.listener, &resp); err != nil && !errors.Is(err, unix.ENOENT) {
		s.log.Error("answering connect notification", "pid", n.Pid, "err", err)
	}
}

// noteConnect reads connect(fd, addr, len)'s address and, when it is one
// of ConnectPorts on loopback, the socket's inode, and reports them.
func (s *Supervisor) noteConnect(n *kseccomp.Notif) {
	if n.Pid == 0 || s.opts.OnConnect == nil {
		return
	}
	pid := int(n.Pid)
	args := n.Data.Args
	if n.Data.Arch == unix.AUDIT_ARCH_I386 || n.Data.Nr&x32Bit != 0 {
		for i := range args {
			args[i] &= 0xffffffff
		}
	}
	var b [unix.SizeofSockaddrInet6]byte
	size := min(args[2], uint64(len(b)))
	got, err := s.mem.readAt(pid, args[1], b[:size])
	if err != nil || got < 4 {
		return
	}
	ne := binary.NativeEndian
	var ap netip.AddrPort
	port := binary.BigEndian.Uint16(b[2:4])
	switch ne.Uint16(b[0:2]) {
	case unix.AF_INET:
		if got < unix.SizeofSockaddrInet4-8 {
			return
		}
		ap = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
	case unix.AF_INET6:
		if got < 24 {
			return
		}
		ap = netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])).Unmap(), port)
	default:
		return
	}
	if !ap.Addr().IsLoopback() || !slices.Contains(s.opts.ConnectPorts, ap.Port()) {
		return
	}
	link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.FormatUint(args[0]&0xffffffff, 10))
	if err != nil {
		return
	}
	v, ok := strings.CutPrefix(link, "socket:[")
	if !ok || !strings.HasSuffix(v, "]") {
		return
	}
	inode, err := strconv.ParseUint(strings.TrimSuffix(v, "]"), 10, 64)
	if err != nil {
		return
	}
	// pid's memory and descriptors were read: it must still be the task
	// that made this call (not a process that reused its pid).
	if kseccomp.NotifIDValid(s.listener, n.ID) != nil {
		return
	}
	s.opts.OnConnect(ConnectEvent{Pid: pid, Inode: inode, Addr: ap})
}

// ConnectDenial is a connect the supervisor refused (Options.ConnectGate):
// who called it, where to (Addr is invalid when the address could not be
// read), and why.
type ConnectDenial struct {
	Pid  int
	Addr netip.AddrPort
	// Listen: a listen, not a connect (Addr is invalid).
	Listen bool
	Reason string
}

// gateConnect decides a connect when the supervisor is the sandbox's only
// way to connect a TCP socket (Options.ConnectGate). Landlock refuses
// every TCP connect the sandbox makes itself, so letting a call continue
// can never open a TCP connection, whatever another thread changes
// meanwhile (the address, or the socket behind the descriptor). A TCP
// socket is connected here instead: the supervisor takes the caller's
// socket (pidfd_getfd), reads the address once into its own memory,
// checks that copy (127.0.0.1 or ::ffff:127.0.0.1 at a proxy port) and
// connects its descriptor of the same socket to it, so what was checked
// is what is connected. The caller gets connect's result (0, or its
// error: EINPROGRESS on a non-blocking socket).
//
// The connect itself runs on a goroutine of its own, which answers when
// it returns: a blocking connect to a proxy whose backlog is full waits
// for the kernel's retries, and the other notifications of the sandbox
// must not wait with it.
func (s *Supervisor) gateConnect(n *kseccomp.Notif, call netCall) {
	resp := kseccomp.NotifResp{ID: n.ID}
	errno, denial, connect := s.gate(n, call)
	if connect != nil {
		go func() {
			if errno := connect(); errno != 0 {
				resp.Error = -int32(errno)
			}
			s.answerLate(&resp)
		}()
		return
	}
	switch {
	case errno == 0 && denial == nil:
		resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	case errno == okConnected:
	default:
		resp.Error = -int32(errno)
	}
	// Reported before the answer, while the caller waits: what it was
	// exec'd as is still its own.
	if denial != nil && s.opts.OnConnectDenied != nil {
		s.opts.OnConnectDenied(*denial)
	}
	if err := kseccomp.NotifSend(s.listener, &resp); err != nil && !errors.Is(err, unix.ENOENT) {
		s.log.Error("answering connect notification", "pid", n.Pid, "err", err)
	}
}

// answerLate answers a notification from another goroutine than Run's:
// not once the listener is closed (its number may name another file by
// then); the caller then has its answer from the kernel (ENOSYS).
func (s *Supervisor) answerLate(resp *kseccomp.NotifResp) {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed || s.listener < 0 {
		return
	}
	if err := kseccomp.NotifSend(s.listener, resp); err != nil && !errors.Is(err, unix.ENOENT) {
		s.log.Error("answering connect notification", "err", err)
	}
}

// okConnected is gate's answer for a call the supervisor made, which
// succeeded: the call returns 0 without running.
const okConnected = unix.Errno(^uintptr(0) >> 1)

// gate returns 0 and no denial to let the call continue (not a TCP
// socket), okConnected when it made the call, or the errno to fail the
// call with (and, for a refusal of policy, the denial to report); or,
// for a connect to the proxy, the connect to make, which returns the
// call's errno (0: connected).
func (s *Supervisor) gate(n *kseccomp.Notif, call netCall) (errno unix.Errno, denial *ConnectDenial, connect func() unix.Errno) {
	pid := int(n.Pid)
	if call == callSocketcall || pid == 0 {
		// GatedFilter refuses socketcall before it is notified; were
		// it not, Landlock would refuse its TCP connects.
		return 0, nil, nil
	}
	args := n.Data.Args
	if n.Data.Arch == unix.AUDIT_ARCH_I386 || n.Data.Nr&x32Bit != 0 {
		for i := range args {
			args[i] &= 0xffffffff
		}
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return unix.ESRCH, nil, nil
	}
	defer unix.Close(pidfd)
	fd, err := unix.PidfdGetfd(pidfd, int(int32(args[0])), 0)
	if err != nil {
		if errors.Is(err, unix.EBADF) {
			return unix.EBADF, nil, nil
		}
		// Not allowed to take it (a caller that made itself
		// non-dumpable): its TCP connects cannot be checked.
		return unix.EACCES, &ConnectDenial{Pid: pid, Listen: call == callListen,
			Reason: "cordon cannot take the socket to check it (" + err.Error() + ")"}, nil
	}
	keep := false // fd passes to connect
	defer func() {
		if !keep {
			unix.Close(fd)
		}
	}()
	// pid and its descriptor were read: it must still be the task that
	// made this call.
	if kseccomp.NotifIDValid(s.listener, n.ID) != nil {
		return unix.ESRCH, nil, nil
	}
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return unix.ENOTSOCK, nil, nil
	}
	if call == callListen {
		errno, denial := s.gateListen(pid, fd, domain, args[1])
		return errno, denial, nil
	}
	if domain != unix.AF_INET && domain != unix.AF_INET6 {
		// Landlock refuses a TCP connect even if the descriptor names
		// another socket by the time the call runs.
		return 0, nil, nil
	}
	var b [unix.SizeofSockaddrInet6]byte
	size := min(args[2], uint64(len(b)))
	got, err := s.mem.readAt(pid, args[1], b[:size])
	if err != nil || got < 4 {
		return unix.EFAULT, nil, nil
	}
	// The memory read was the caller's (its pid not reused since).
	if kseccomp.NotifIDValid(s.listener, n.ID) != nil {
		return unix.ESRCH, nil, nil
	}
	ap, sa, ok := loopbackAddr(domain, b[:got])
	typ, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	proto, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	if typ != unix.SOCK_STREAM || proto != unix.IPPROTO_TCP {
		return unix.EACCES, &ConnectDenial{Pid: pid, Addr: ap, Reason: "not a TCP socket"}, nil
	}
	if !ok || !slices.Contains(s.opts.ConnectPorts, ap.Port()) {
		reason := "only cordon's proxy on 127.0.0.1 is reachable"
		if len(s.opts.ConnectPorts) == 0 {
			reason = "--net none"
		}
		return unix.EACCES, &ConnectDenial{Pid: pid, Addr: ap, Reason: reason}, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return unix.EBADF, nil, nil
	}
	// Recorded before the connection exists: the proxy finds its owner
	// when it accepts.
	if s.opts.OnConnect != nil {
		s.opts.OnConnect(ConnectEvent{Pid: pid, Inode: st.Ino, Addr: ap})
	}
	keep = true
	return 0, nil, func() unix.Errno {
		defer unix.Close(fd)
		return errnoOf(unix.Connect(fd, sa))
	}
}

// errnoOf is err's errno for a seccomp answer: 0 for nil, EINVAL for an
// error that is not one.
func errnoOf(err error) unix.Errno {
	if err == nil {
		return 0
	}
	errno, ok := err.(unix.Errno)
	if !ok || errno == 0 {
		return unix.EINVAL
	}
	return errno
}

// gateListen decides listen(fd, backlog) on the socket the supervisor took
// (fd, of family domain). Landlock refuses binding a TCP port, but
// listen() on an unbound socket binds an ephemeral one without bind(2):
// a port on the host's network that anything may connect to. An AF_INET
// or AF_INET6 socket may not listen; any other is made to listen here, on
// the supervisor's descriptor of the socket that was checked (letting
// the call continue would listen on whatever the descriptor names by
// then).
func (s *Supervisor) gateListen(pid, fd, domain int, backlog uint64) (unix.Errno, *ConnectDenial) {
	if domain == unix.AF_INET || domain == unix.AF_INET6 {
		return unix.EACCES, &ConnectDenial{Pid: pid, Listen: true, Reason: "listening on a TCP port of the host's network"}
	}
	if errno := errnoOf(unix.Listen(fd, int(int32(backlog)))); errno != 0 {
		return errno, nil
	}
	return okConnected, nil
}

// loopbackAddr parses a connect address read from the caller (b, of a
// socket of family domain) into the address it names and, when that is
// 127.0.0.1 (as AF_INET, or IPv4-mapped on an AF_INET6 socket), the
// supervisor's own sockaddr for it. ok is false for anything else.
func loopbackAddr(domain int, b []byte) (netip.AddrPort, unix.Sockaddr, bool) {
	if len(b) < 4 {
		return netip.AddrPort{}, nil, false
	}
	family := binary.NativeEndian.Uint16(b[0:2])
	port := binary.BigEndian.Uint16(b[2:4])
	lo := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	switch {
	case family == unix.AF_INET && domain == unix.AF_INET && len(b) >= 8:
		ap := netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
		if ap.Addr() != lo {
			return ap, nil, false
		}
		return ap, &unix.SockaddrInet4{Port: int(port), Addr: lo.As4()}, true
	case family == unix.AF_INET6 && domain == unix.AF_INET6 && len(b) >= 24:
		a := netip.AddrFrom16([16]byte(b[8:24]))
		ap := netip.AddrPortFrom(a.Unmap(), port)
		if !a.Is4In6() || a.Unmap() != lo {
			return ap, nil, false
		}
		return ap, &unix.SockaddrInet6{Port: int(port), Addr: a.As16()}, true
	}
	return netip.AddrPort{}, nil, false
}
