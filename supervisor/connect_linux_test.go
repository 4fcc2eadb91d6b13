package supervisor

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestConnectTable: every connect the filter notifies (x86-64, x32, i386's
// direct call and its socketcall), and every listen GatedFilter does,
// reaches handleConnect, never the exec path (which would refuse it as an
// unexpected notification).
func TestConnectTable(t *testing.T) {
	tab, err := connectTable()
	require.NoError(t, err)
	for _, k := range []struct {
		arch uint32
		nr   int32
		call netCall
	}{
		{unix.AUDIT_ARCH_X86_64, 42, callConnect},
		{unix.AUDIT_ARCH_X86_64, x32Bit | 42, callConnect},
		{unix.AUDIT_ARCH_I386, 362, callConnect},
		{unix.AUDIT_ARCH_I386, 102, callSocketcall},
		{unix.AUDIT_ARCH_X86_64, 50, callListen},
		{unix.AUDIT_ARCH_X86_64, x32Bit | 50, callListen},
		{unix.AUDIT_ARCH_I386, 363, callListen},
	} {
		call, ok := tab[createKey{k.arch, k.nr}]
		assert.True(t, ok, "%#x %d", k.arch, k.nr)
		assert.Equal(t, k.call, call, "%#x %d", k.arch, k.nr)
	}
	_, ok := tab[createKey{unix.AUDIT_ARCH_X86_64, nrExecveAMD64}]
	assert.False(t, ok, "execve is not a connect")
}

// TestLoopbackAddr: the gate connects only its own copy of 127.0.0.1 (or
// its IPv4-mapped form on an AF_INET6 socket); every other address, and
// a family that is not the socket's, is refused.
func TestLoopbackAddr(t *testing.T) {
	in4 := func(a [4]byte, port uint16) []byte {
		b := make([]byte, 16)
		binary.NativeEndian.PutUint16(b, unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], port)
		copy(b[4:], a[:])
		return b
	}
	in6 := func(a netip.Addr, port uint16) []byte {
		b := make([]byte, 28)
		binary.NativeEndian.PutUint16(b, unix.AF_INET6)
		binary.BigEndian.PutUint16(b[2:], port)
		a16 := a.As16()
		copy(b[8:], a16[:])
		return b
	}
	ap, sa, ok := loopbackAddr(unix.AF_INET, in4([4]byte{127, 0, 0, 1}, 3128))
	require.True(t, ok)
	assert.Equal(t, netip.MustParseAddrPort("127.0.0.1:3128"), ap)
	assert.Equal(t, &unix.SockaddrInet4{Port: 3128, Addr: [4]byte{127, 0, 0, 1}}, sa)
	_, sa, ok = loopbackAddr(unix.AF_INET6, in6(netip.MustParseAddr("::ffff:127.0.0.1"), 80))
	require.True(t, ok)
	assert.Equal(t, &unix.SockaddrInet6{Port: 80, Addr: netip.MustParseAddr("::ffff:127.0.0.1").As16()}, sa)
	for _, c := range []struct {
		domain int
		b      []byte
	}{
		{unix.AF_INET, in4([4]byte{127, 0, 0, 2}, 3128)},
		{unix.AF_INET, in4([4]byte{192, 0, 2, 1}, 3128)},
		{unix.AF_INET6, in6(netip.IPv6Loopback(), 3128)},
		{unix.AF_INET6, in6(netip.MustParseAddr("::ffff:127.0.0.2"), 3128)},
		{unix.AF_INET6, in4([4]byte{127, 0, 0, 1}, 3128)}, // family is not the socket's
		{unix.AF_INET, in6(netip.MustParseAddr("::ffff:127.0.0.1"), 3128)},
		{unix.AF_INET, in4([4]byte{127, 0, 0, 1}, 3128)[:6]}, // short
		{unix.AF_INET, []byte{0, 0, 0, 0}},                   // AF_UNSPEC
	} {
		_, _, ok := loopbackAddr(c.domain, c.b)
		assert.False(t, ok, "%d %x", c.domain, c.b)
	}
}
