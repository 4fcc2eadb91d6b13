package supervisor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBinfmtMatchesAsTheKernel: handlers by extension (after the last '.'
// of the whole path, as fs/binfmt_misc.c takes it) and by magic at an
// offset under a mask; disabled handlers, or all of them disabled, match
// nothing.
func TestBinfmtMatchesAsTheKernel(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	write("status", "enabled\n")
	write("register", "")
	write("py", "enabled\ninterpreter /usr/bin/python3\nflags: \nextension .pyx\n")
	write("arm", "enabled\ninterpreter /usr/bin/qemu-aarch64\nflags: F\noffset 2\nmagic 41420043\nmask ffff00ff\n")
	write("off", "disabled\ninterpreter /usr/bin/true\nflags: \nextension .off\n")
	entries, err := readBinfmt(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "the disabled handler is left out")
	match := func(name string, head []byte) string {
		for _, e := range entries {
			if e.matches(name, head) {
				return e.name
			}
		}
		return ""
	}
	assert.Equal(t, "py", match("/opt/x/tool.pyx", nil))
	assert.Equal(t, "", match("/opt/a.pyx/tool", []byte("\x7fELF")), "the whole path's last dot: pyx/tool")
	assert.Equal(t, "", match("/opt/x/tool.off", nil))
	assert.Equal(t, "arm", match("/opt/x/bin", []byte("..AB\x99C")), "masked byte ignored")
	assert.Equal(t, "", match("/opt/x/bin", []byte("..AC\x99C")))
	assert.Equal(t, "", match("/opt/x/bin", []byte("..AB")), "too short a head: C is not a zero")
	write("zero", "enabled\ninterpreter /usr/bin/true\nflags: \noffset 0\nmagic 52545a0000\n")
	entries, err = readBinfmt(dir)
	require.NoError(t, err)
	assert.Equal(t, "zero", match("/opt/x/short", []byte("RTZ")), "the kernel's head is zero-filled past a short file's end")

	write("status", "disabled\n")
	entries, err = readBinfmt(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)

	write("status", "enabled\n")
	write("bad", "enabled\ninterpreter /x\nmagic zz\n")
	_, err = readBinfmt(dir)
	assert.Error(t, err, "a handler cordon cannot read refuses (fail closed)")
}
