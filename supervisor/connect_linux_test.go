package supervisor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestConnectTable: every connect the filter notifies (x86-64, x32, i386's
// direct call and its socketcall) reaches handleConnect, never the exec
// path (which would refuse it as an unexpected notification).
func TestConnectTable(t *testing.T) {
	tab, err := connectTable()
	require.NoError(t, err)
	for _, k := range []struct {
		arch   uint32
		nr     int32
		direct bool
	}{
		{unix.AUDIT_ARCH_X86_64, 42, true},
		{unix.AUDIT_ARCH_X86_64, x32Bit | 42, true},
		{unix.AUDIT_ARCH_I386, 362, true},
		{unix.AUDIT_ARCH_I386, 102, false},
	} {
		direct, ok := tab[createKey{k.arch, k.nr}]
		assert.True(t, ok, "%#x %d", k.arch, k.nr)
		assert.Equal(t, k.direct, direct, "%#x %d", k.arch, k.nr)
	}
	_, ok := tab[createKey{unix.AUDIT_ARCH_X86_64, nrExecveAMD64}]
	assert.False(t, ok, "execve is not a connect")
}
