package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDenyWritableExec: with --deny-writable-exec (or deny_writable_exec in
// a policy file) a program the workload could have written — in the
// writable working directory, in /tmp, or in a memfd — does not run, while
// programs from the read-only root do.
func TestDenyWritableExec(t *testing.T) {
	requireSeccompNotify(t)
	gcc := requireTool(t, "gcc")
	dir := t.TempDir()
	writeScript(t, dir, "local-tool", `echo local-tool ran`)
	src := filepath.Join(dir, "memfd.c")
	require.NoError(t, os.WriteFile(src, []byte(`
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
int main(void) {
	int src = open("/bin/echo", O_RDONLY), m = memfd_create("x", MFD_ALLOW_SEALING);
	char buf[65536]; ssize_t n;
	while ((n = read(src, buf, sizeof buf)) > 0) write(m, buf, n);
	fcntl(m, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK);
	char *av[] = {"echo", "memfd-ran", 0}, *env[] = {0};
	fexecve(m, av, env);
	printf("fexecve: %s\n", strerror(errno));
	return 3;
}
`), 0o644))
	// Built outside the sandbox, then copied to a read-only place? No: the
	// loader itself must be runnable, so it lives in a --ro bind.
	bin := t.TempDir()
	out, err := exec.Command(gcc, "-o", filepath.Join(bin, "memfd"), src).CombinedOutput()
	require.NoError(t, err, "%s", out)

	script := `./local-tool; echo rc=$?; cp /bin/true /tmp/t && /tmp/t; echo tmp-rc=$?; ` +
		filepath.Join(bin, "memfd") + `; ls / >/dev/null && echo root-ok`
	r := runCordon(t, runOpts{dir: dir}, "--deny-writable-exec", "--ro", bin, "--", "sh", "-c", script)
	assert.Contains(t, r.stdout, "rc=126")
	assert.NotContains(t, r.stdout, "local-tool ran")
	assert.Contains(t, r.stdout, "tmp-rc=126")
	assert.Contains(t, r.stdout, "fexecve: Operation not permitted")
	assert.NotContains(t, r.stdout, "memfd-ran")
	assert.Contains(t, r.stdout, "root-ok")
	assert.Contains(t, r.stderr, `cordon: denied: ./local-tool (rule: deny "deny_writable_exec": the program is on a writable mount or in memory`)

	// The same from a policy file; without it the same programs run.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cordon.yaml"), []byte("version: 1\ndeny_writable_exec: true\n"), 0o644))
	r = runCordon(t, runOpts{dir: dir}, "policy", "trust")
	require.Equal(t, 0, r.code, r.stderr)
	r = runCordon(t, runOpts{dir: dir}, "--", "sh", "-c", "./local-tool; echo rc=$?")
	assert.Equal(t, "rc=126\n", r.stdout, r.stderr)
	require.NoError(t, os.Remove(filepath.Join(dir, "cordon.yaml")))
	r = runCordon(t, runOpts{dir: dir}, "--ro", bin, "--", "sh", "-c", "./local-tool; "+filepath.Join(bin, "memfd"))
	assert.Equal(t, "local-tool ran\nmemfd-ran\n", r.stdout, r.stderr)
}
