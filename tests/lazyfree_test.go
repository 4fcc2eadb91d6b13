package tests

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lazyExec is a python3 program that lays out execve("/bin/echo",
// ["echo", "push"+"x"]) in two fresh pages, "x" and its NUL alone on the
// second, which it marks MADV_FREE (argv[1] "free") or maps with
// MAP_DROPPABLE ("droppable"), and execs it: memory the kernel may replace
// with zeros after strict mode's check.
const lazyExec = `
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.execve.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
mode, pg = sys.argv[1], 4096
flags = 0x20 | (0x08 if mode == "droppable" else 0x02)  # MAP_ANONYMOUS | MAP_DROPPABLE or MAP_PRIVATE
p = libc.mmap(None, 2 * pg, 3, flags, -1, 0)
if p is None or p == ctypes.c_void_p(-1).value:
    print("mmap failed: errno", ctypes.get_errno())
    sys.exit(3)
def put(off, b):
    ctypes.memmove(p + off, b, len(b))
put(128, b"/bin/echo\0"); put(256, b"echo\0"); put(pg - 4, b"push"); put(pg, b"x\0")
arr = (ctypes.c_void_p * 3).from_address(p)
arr[0], arr[1], arr[2] = p + 256, p + pg - 4, None
if mode == "free" and libc.madvise(p + pg, pg, 8) != 0:  # MADV_FREE
    print("madvise failed: errno", ctypes.get_errno())
    sys.exit(4)
libc.execve(p + 128, p, p + 64)  # p+64: an empty environment (zeros)
print("execve failed: errno", ctypes.get_errno())
sys.exit(1)
`

// TestStrictLazyfreeArgv runs an exec whose argv lies partly on memory the
// kernel may drop, through the real binary with --verify strict: on a
// MADV_FREE page it runs, with the argv that was checked (strict mode
// writes the checked bytes back); a MAP_DROPPABLE mapping cannot be made in
// the sandbox at all.
func TestStrictLazyfreeArgv(t *testing.T) {
	requireSeccompNotify(t)
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		python = requireTool(t, "python3")
	}
	t.Run("MADV_FREE", func(t *testing.T) {
		r := runCordon(t, runOpts{}, "--verify", "strict", "--deny", "echo push", "--", python, "-c", lazyExec, "free")
		require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, tail(r.stderr, 2000))
		assert.Equal(t, "pushx\n", r.stdout)
		assert.NotContains(t, r.stderr, "cordon: denied:")
	})
	t.Run("MAP_DROPPABLE", func(t *testing.T) {
		// On the host the kernel makes the mapping (the control);
		// in the sandbox the filter refuses it as a kernel without
		// it would (EINVAL), so no argument can lie there.
		host, err := exec.Command(python, "-c", lazyExec, "droppable").CombinedOutput()
		if strings.HasPrefix(string(host), "mmap failed") {
			testcap.SkipOrFail(t, "the kernel lacks MAP_DROPPABLE (Linux 6.11+): %s", host)
		}
		require.NoError(t, err, "%s", host)
		require.Equal(t, "pushx\n", string(host))
		r := runCordon(t, runOpts{}, "--verify", "strict", "--", python, "-c", lazyExec, "droppable")
		assert.Equal(t, "mmap failed: errno 22\n", r.stdout, "stderr: %s", r.stderr)
		assert.Equal(t, 3, r.code)
	})
}
