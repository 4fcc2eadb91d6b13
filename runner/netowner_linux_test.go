package runner

import (
	"net"
	"net/netip"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/cordon-sandbox/cordon/netproxy"
)

// tcpFrom connects a socket bound to 127.0.0.1:port (0: any) to dst, with
// SO_REUSEADDR so that two of them may share a local port, as the kernel's
// ephemeral port choice lets them when their destinations differ.
func tcpFrom(t *testing.T, port uint16, dst netip.AddrPort) (fd int, local netip.AddrPort, inode uint64) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	require.NoError(t, unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1))
	require.NoError(t, unix.Bind(fd, &unix.SockaddrInet4{Port: int(port), Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, unix.Connect(fd, &unix.SockaddrInet4{Port: int(dst.Port()), Addr: dst.Addr().As4()}))
	sa, err := unix.Getsockname(fd)
	require.NoError(t, err)
	local = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(sa.(*unix.SockaddrInet4).Port))
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &st))
	return fd, local, st.Ino
}

// TestNetOwnerSharedLocalPort: git's socket to the HTTP listener and the
// workload's socket to the SOCKS listener share one local port (the red
// team's collision, reached there by walking the ephemeral ports). The
// workload's connection must not be taken for git's: the owner is looked
// up by both ends, and a record of a connect to another port is not used.
func TestNetOwnerSharedLocalPort(t *testing.T) {
	listen := func() netip.AddrPort {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		return l.Addr().(*net.TCPAddr).AddrPort()
	}
	httpL, socksL := listen(), listen()
	_, gitEnd, gitInode := tcpFrom(t, 0, httpL)
	_, spoofEnd, spoofInode := tcpFrom(t, gitEnd.Port(), socksL)
	require.Equal(t, gitEnd, spoofEnd, "the two sockets share one local address")

	conns := newConnTable(nil)
	conns.m[gitInode] = connRecord{owner: netproxy.Owner{Pid: 4242, Programs: []string{"git"}}, port: httpL.Port()}

	diagFD, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	require.NoError(t, err)
	diag := &sockDiag{fd: diagFD}
	t.Cleanup(diag.close)

	for name, d := range map[string]*sockDiag{"sock_diag": diag, "/proc/net/tcp": nil} {
		git := netOwner(os.Getpid(), d, conns, netproxy.Endpoints{Peer: gitEnd, Local: httpL})
		assert.Equal(t, 4242, git.Pid, "%s: git's own connection keeps its owner", name)
		spoof := netOwner(os.Getpid(), d, conns, netproxy.Endpoints{Peer: spoofEnd, Local: socksL})
		assert.Zero(t, spoof.Pid, "%s: the workload's connection is not git's", name)
		assert.Empty(t, spoof.Programs, name)
	}

	// A record of the workload's socket connecting to the HTTP port (what
	// the supervisor read) does not name its connection to the SOCKS one.
	conns.m[spoofInode] = connRecord{owner: netproxy.Owner{Pid: 4243, Programs: []string{"git"}}, port: httpL.Port()}
	assert.Zero(t, netOwner(os.Getpid(), diag, conns, netproxy.Endpoints{Peer: spoofEnd, Local: socksL}).Pid)
}
