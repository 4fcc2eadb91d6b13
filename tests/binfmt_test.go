package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestStrictRefusesBinfmtMisc: a binfmt_misc handler registered on the
// host makes the kernel run its interpreter for a matching file, which
// strict mode (no exec event) used to let run as the file checked: the red
// team ran python3 under --deny python3 and under --default deny so. Now a
// strict exec the kernel would hand to a handler is refused, naming it;
// with ptrace the exec event kills it as before.
func TestStrictRefusesBinfmtMisc(t *testing.T) {
	requireSeccompNotify(t)
	const dir = "/proc/sys/fs/binfmt_misc"
	var sfs unix.Statfs_t
	if unix.Statfs(dir, &sfs) != nil || sfs.Type != unix.BINFMTFS_MAGIC {
		if err := unix.Mount("binfmt_misc", dir, "binfmt_misc", 0, ""); err != nil {
			testcap.SkipOrFail(t, "cannot mount binfmt_misc at %s to register a handler: %v", dir, err)
		}
		t.Cleanup(func() { _ = unix.Unmount(dir, 0) })
	}
	name := fmt.Sprintf("cordontest%d", os.Getpid())
	ext := name + "x"
	if err := os.WriteFile(dir+"/register", []byte(":"+name+":E::"+ext+"::/usr/bin/python3:"), 0); err != nil {
		testcap.SkipOrFail(t, "cannot register a binfmt_misc handler: %v", err)
	}
	t.Cleanup(func() { _ = os.WriteFile(dir+"/"+name, []byte("-1"), 0) })

	// On a read-only mount in the sandbox (/var/tmp is not bound), as
	// strict mode requires of a program.
	ro, err := os.MkdirTemp("/var/tmp", "cordon-binfmt-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(ro) })
	prog := filepath.Join(ro, "tool."+ext)
	require.NoError(t, os.WriteFile(prog, []byte("print('PYTHON RAN')\n"), 0o755))
	out, err := exec.Command(prog).CombinedOutput()
	require.NoError(t, err, "the handler runs python3 on the host: %s", out)
	require.Equal(t, "PYTHON RAN\n", string(out))

	r := cordon(t, "--verify", "strict", "--deny", "python3", "--", "bash", "-c", prog)
	assert.NotContains(t, r.stdout, "PYTHON RAN", r.stderr)
	assert.Contains(t, r.stderr, "cordon: denied: "+prog)
	assert.Contains(t, r.stderr, "binfmt_misc handler "+name+" (/usr/bin/python3)")

	r = cordon(t, "--deny", "python3", "--", "bash", "-c", prog)
	assert.NotContains(t, r.stdout, "PYTHON RAN", "with ptrace: %s", r.stderr)

	// A handler by magic that ends in zeros takes a file shorter than the
	// magic: the kernel matches its zero-filled head buffer (red team 3:
	// a 3-byte file ran the handler's interpreter in strict mode).
	zero := name + "z"
	if err := os.WriteFile(dir+"/register", []byte(":"+zero+":M::CZT\\x00\\x00::/usr/bin/python3:"), 0); err != nil {
		testcap.SkipOrFail(t, "cannot register a binfmt_misc handler by magic: %v", err)
	}
	t.Cleanup(func() { _ = os.WriteFile(dir+"/"+zero, []byte("-1"), 0) })
	short := filepath.Join(ro, "short")
	require.NoError(t, os.WriteFile(short, []byte("CZT"), 0o755))
	r = cordon(t, "--verify", "strict", "--deny", "python3", "--", "bash", "-c", short)
	assert.Contains(t, r.stderr, "binfmt_misc handler "+zero+" (/usr/bin/python3)", "stdout: %s", r.stdout)
}
