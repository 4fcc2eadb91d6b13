package proc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestMountsAndStack: mountinfo lines by id, their mount points unescaped,
// and the stack at a point counted down the parents while they are at it.
func TestMountsAndStack(t *testing.T) {
	f := filepath.Join(t.TempDir(), "mountinfo")
	require.NoError(t, os.WriteFile(f, []byte(`20 1 8:1 / / ro - ext4 /dev/sda1 rw
30 20 8:1 /w /w rw - ext4 /dev/sda1 rw
31 30 0:40 / /w/a\040b rw shared:3 - tmpfs tmpfs rw
40 31 0:40 / /w/a\040b rw - tmpfs tmpfs rw
41 40 8:1 /x /w/a\040b rw - ext4 /dev/sda1 rw
50 30 8:1 /w/c /w/c rw - ext4 /dev/sda1 rw
`), 0o644))
	m, err := Mounts(f)
	require.NoError(t, err)
	assert.Equal(t, Mount{Parent: 30, Point: "/w/a b", Dev: unix.Mkdev(0, 40), Writable: true}, m[31])
	assert.False(t, m[20].Writable)
	assert.Equal(t, 3, StackAt(m, 41, "/w/a b"))
	assert.Equal(t, 1, StackAt(m, 31, "/w/a b"))
	assert.Equal(t, 1, StackAt(m, 50, "/w/c"))
	assert.Equal(t, 0, StackAt(m, 50, "/w/a b"))
	assert.Equal(t, 0, StackAt(m, 99, "/w/c"))
	assert.Equal(t, `a\b c\0`, unescapeMountField(`a\134b\040c\0`))

	require.NoError(t, os.WriteFile(f, []byte("x y\n"), 0o644))
	_, err = Mounts(f)
	assert.Error(t, err)
	_, err = Mounts(filepath.Join(t.TempDir(), "none"))
	assert.Error(t, err)
	self, err := Mounts("/proc/self/mountinfo")
	require.NoError(t, err)
	assert.NotEmpty(t, self)
}
