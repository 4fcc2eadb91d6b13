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

// i386's system call numbers of connect and socketcall.
const (
	i386Connect    = 362
	i386Socketcall = 102
)

// connectTable maps every architecture's number of connect, and i386's
// socketcall (which libseccomp notifies for a connect rule too), to
// whether the call is the direct connect.
func connectTable() (map[createKey]bool, error) {
	out := map[createKey]bool{}
	for _, a := range []struct {
		arch  seccomp.ScmpArch
		audit uint32
	}{
		{seccomp.ArchAMD64, unix.AUDIT_ARCH_X86_64},
		{seccomp.ArchX32, unix.AUDIT_ARCH_X86_64},
		{seccomp.ArchX86, unix.AUDIT_ARCH_I386},
	} {
		for _, name := range []string{"connect", "socketcall"} {
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
			out[createKey{a.audit, int32(sc)}] = name == "connect"
		}
	}
	// libseccomp resolves i386's connect to a pseudo number (it is
	// multiplexed through socketcall there) but its rule also notifies the
	// direct call the kernel has had since 4.3: both numbers, by hand.
	out[createKey{unix.AUDIT_ARCH_I386, i386Connect}] = true
	out[createKey{unix.AUDIT_ARCH_I386, i386Socketcall}] = false
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
func (s *Supervisor) handleConnect(n *kseccomp.Notif, direct bool) {
	if direct {
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
