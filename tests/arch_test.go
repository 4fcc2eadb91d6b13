package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// i386Exec is a static 32-bit program that calls execve("/bin/echo",
// ["/bin/echo", "from-i386"], []) through int 0x80 and, if that fails,
// exits with the errno.
const i386Exec = `
	.data
path:	.asciz "/bin/echo"
arg1:	.asciz "from-i386"
argv:	.long path, arg1, 0
envp:	.long 0
	.text
	.globl _start
_start:
	movl $11, %eax
	movl $path, %ebx
	movl $argv, %ecx
	movl $envp, %edx
	int $0x80
	movl %eax, %ebx
	negl %ebx
	movl $1, %eax
	int $0x80
`

// x32Exec calls execve through the x32 syscall table (nr | 0x40000000)
// with 32-bit pointers from a non-PIE 64-bit program. With the argument
// "high" the path and the argv array are on its stack, above 4 GiB: the
// kernel takes an x32 call's pointers as full 64-bit registers (argv's
// entries are 4 bytes), so the supervisor must read them there too, not at
// their low 32 bits.
const x32Exec = `
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static char path[] = "/bin/echo";
static char a1[] = "from-x32";
static unsigned int argv32[3];
static unsigned int envp32[1];
int main(int argc, char **argv) {
	char hpath[] = "/bin/echo";
	unsigned int hargv[3] = {0, 0, 0};
	argv32[0] = (unsigned int)(unsigned long)path;
	argv32[1] = (unsigned int)(unsigned long)a1;
	if (argc > 1 && strcmp(argv[1], "high") == 0) {
		if ((unsigned long)hpath <= 0xffffffffUL) {
			printf("x32-execve: stack below 4 GiB\n");
			return 4;
		}
		hargv[0] = argv32[0];
		hargv[1] = argv32[1];
		syscall(0x40000000L | 520, hpath, hargv, envp32);
	} else {
		syscall(0x40000000L | 520, path, argv32, envp32);
	}
	printf("x32-execve: %s\n", strerror(errno));
	return 3;
}
`

func buildI386(t *testing.T, dir string) string {
	t.Helper()
	as := requireTool(t, "as")
	ld := requireTool(t, "ld")
	src := filepath.Join(dir, "exec32.s")
	require.NoError(t, os.WriteFile(src, []byte(i386Exec), 0o644))
	out, err := exec.Command(as, "--32", "-o", filepath.Join(dir, "exec32.o"), src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	bin := filepath.Join(dir, "exec32")
	out, err = exec.Command(ld, "-m", "elf_i386", "-o", bin, filepath.Join(dir, "exec32.o")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	if out, err := exec.Command(bin).CombinedOutput(); err != nil || string(out) != "from-i386\n" {
		testcap.SkipOrFail(t, "this kernel cannot run i386 programs (IA32 emulation): %v %s", err, out)
	}
	return bin
}

func TestI386ExecIsDecided(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	buildI386(t, dir)

	r := runCordon(t, runOpts{dir: dir}, "--", "./exec32")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "from-i386\n", r.stdout, "an allowed 32-bit exec runs, its argv decoded with 4-byte pointers")

	r = runCordon(t, runOpts{dir: dir}, "--audit", "-", "--deny", "echo", "--", "./exec32")
	assert.Equal(t, 1, r.code, "int 0x80 execve returns -EPERM: %s", r.stderr)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, `cordon: denied: /bin/echo from-i386 (rule: deny "echo")`)
	assert.Contains(t, r.stderr, `"arch":"i386"`)
}

func TestX32ExecIsDecided(t *testing.T) {
	requireSeccompNotify(t)
	gcc := requireTool(t, "gcc")
	dir := t.TempDir()
	src := filepath.Join(dir, "x32.c")
	require.NoError(t, os.WriteFile(src, []byte(x32Exec), 0o644))
	out, err := exec.Command(gcc, "-no-pie", "-O0", "-o", filepath.Join(dir, "x32"), src).CombinedOutput()
	require.NoError(t, err, "%s", out)

	r := runCordon(t, runOpts{dir: dir}, "--audit", "-", "--deny", "echo", "--", "./x32")
	assert.NotContains(t, r.stdout, "from-x32")
	assert.Contains(t, r.stdout, "x32-execve: Operation not permitted", "the x32 call was notified and denied")
	assert.Contains(t, r.stderr, `cordon: denied: /bin/echo from-x32 (rule: deny "echo")`)
	assert.Contains(t, r.stderr, `"arch":"x32"`)

	// Allowed, it reaches the kernel: it runs where the x32 ABI is built in,
	// and fails with ENOSYS where it is not, never with EPERM.
	r = runCordon(t, runOpts{dir: dir}, "--", "./x32")
	assert.NotContains(t, r.stdout, "Operation not permitted")
	assert.Regexp(t, `^(from-x32|x32-execve: Function not implemented)\n$`, r.stdout)

	// Path and argv above 4 GiB: decided as the kernel would read them
	// (the path's low 32 bits name nothing mapped: read there, the call
	// would be answered EFAULT, with no rule asked).
	r = runCordon(t, runOpts{dir: dir}, "--audit", "-", "--deny", "echo", "--", "./x32", "high")
	assert.Contains(t, r.stdout, "x32-execve: Operation not permitted", "the x32 call read at its full pointers and denied")
	assert.Contains(t, r.stderr, `cordon: denied: /bin/echo from-x32 (rule: deny "echo")`)
}
