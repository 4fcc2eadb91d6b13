package supervisor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestLastName(t *testing.T) {
	tests := []struct{ path, want string }{
		{"cordon.yaml", "cordon.yaml"},
		{"a/b/.claude/", ".claude"},
		{"/x/../.vscode//", ".vscode"},
		{"dir/.", "."},
		{"/", ""},
		{"", ""},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, lastName(tc.path), tc.path)
	}
}

// TestCreateTable: every creating call the filter notifies is known on the
// architectures that have it (x86-64 numbers, i386's, x32's with their bit),
// so no notified creation reaches the exec path.
func TestCreateTable(t *testing.T) {
	tab, err := createTable()
	require.NoError(t, err)
	for _, k := range []struct {
		arch uint32
		nr   int32
		name string
	}{
		{unix.AUDIT_ARCH_X86_64, 2, "open"},
		{unix.AUDIT_ARCH_X86_64, 257, "openat"},
		{unix.AUDIT_ARCH_X86_64, 437, "openat2"},
		{unix.AUDIT_ARCH_X86_64, 316, "renameat2"},
		{unix.AUDIT_ARCH_X86_64, x32Bit | 257, "openat"},
		{unix.AUDIT_ARCH_I386, 5, "open"},
		{unix.AUDIT_ARCH_I386, 83, "symlink"},
	} {
		c := tab[createKey{k.arch, k.nr}]
		if assert.NotNil(t, c, "%s %#x", k.name, k.nr) {
			assert.Equal(t, k.name, c.name)
		}
	}
	assert.Nil(t, tab[createKey{unix.AUDIT_ARCH_X86_64, nrExecveAMD64}], "execve is not a creating call")
}

func TestCreateDenialLine(t *testing.T) {
	v := CreateVerdict{Path: "sub/cordon.yaml", Name: "cordon.yaml"}
	assert.Equal(t, `cordon: denied: create sub/cordon.yaml (rule: deny_write "cordon.yaml": protected name)`, v.DenialLine())
	v = CreateVerdict{Path: "link", Target: "../.claude", Name: ".claude"}
	assert.Equal(t, `cordon: denied: symlink link -> ../.claude (rule: deny_write ".claude": protected name)`, v.DenialLine())
	v = CreateVerdict{Path: "evil\x1b[2J", Name: ".idea"}
	assert.NotContains(t, v.DenialLine(), "\x1b", "the path is the workload's to choose: quoted")
}
