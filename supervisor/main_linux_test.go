package supervisor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/cordon-sandbox/cordon/internal/testchild"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// childEnv selects what a re-exec'd test binary plays instead of running
// the tests: a process whose memory the reader inspects, or a process that
// loads the seccomp filter. Loading a filter is irreversible, so it never
// happens in the test process itself.
const childEnv = "CORDON_SUPERVISOR_TEST_CHILD"

// TestMain dispatches the re-exec'd child modes before the tests run.
func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(childEnv); ok {
		os.Unsetenv(childEnv)
		os.Exit(childMain(mode))
	}
	os.Exit(m.Run())
}

func childMain(mode string) int {
	switch mode {
	case "arena":
		return arenaChild()
	case "install-twice":
		return installTwiceChild()
	case "exec-client":
		return execClientChild()
	case "lazyfree":
		return lazyfreeChild()
	}
	fmt.Fprintf(os.Stderr, "unknown test child mode %q\n", mode)
	return 2
}

// requireSeccompNotify is testcap.RequireSeccompNotify: the kernel offers
// what InstallFilter uses.
func requireSeccompNotify(t *testing.T) { testcap.RequireSeccompNotify(t) }

// child is a re-exec'd test binary (internal/testchild).
type child = testchild.Child

// startChild re-execs the test binary in mode with extra environment and
// files (the first extra file is fd 3). Cleanup SIGKILLs its whole process
// group and reaps it.
func startChild(t *testing.T, mode string, args []string, env []string, extra ...*os.File) *child {
	t.Helper()
	return testchild.Start(t, childEnv, mode, args, env, extra...)
}

// fdLinks counts this process's descriptors whose /proc/self/fd link
// contains s (e.g. "seccomp notify").
func fdLinks(t *testing.T, s string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil && strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// --- child: arena -------------------------------------------------------

// arenaSpec is what an arena child maps: Pages pages of private anonymous
// memory, below 4 GiB when Low (for 4-byte pointers), with the pages listed
// in Holes made inaccessible (unmapped in a low arena, PROT_NONE otherwise).
// With SelfArgv, the child also writes its own argv there as a C-style
// NULL-terminated array of 8-byte pointers.
type arenaSpec struct {
	Pages    int   `json:"pages"`
	Holes    []int `json:"holes"`
	Low      bool  `json:"low"`
	SelfArgv bool  `json:"self_argv"`
}

const arenaEnv = "CORDON_SUPERVISOR_TEST_ARENA"

type arenaReport struct {
	Base  uint64 `json:"base"`
	Argv  uint64 `json:"argv"`
	Error string `json:"error,omitempty"`
}

func arenaChild() int {
	report := func(r arenaReport) {
		b, _ := json.Marshal(r)
		os.Stdout.Write(append(b, '\n'))
	}
	var spec arenaSpec
	if err := json.Unmarshal([]byte(os.Getenv(arenaEnv)), &spec); err != nil {
		report(arenaReport{Error: "bad spec: " + err.Error()})
		return 1
	}
	size := uintptr(spec.Pages * pageSize)
	const prot = unix.PROT_READ | unix.PROT_WRITE
	var base uintptr
	if spec.Low {
		// MAP_FIXED_NOREPLACE at addresses the kernel's top-down allocator
		// and the Go runtime do not use, so a hole punched below stays one.
		for hint := uintptr(0x10000000); hint < 0xf0000000; hint += 0x10000000 {
			r, _, e := unix.Syscall6(unix.SYS_MMAP, hint, size, prot,
				unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE, ^uintptr(0), 0)
			if e == 0 && r == hint {
				base = r
				break
			}
			if e == 0 {
				unix.Syscall(unix.SYS_MUNMAP, r, size, 0)
			}
		}
		if base == 0 {
			report(arenaReport{Error: "no free range below 4 GiB"})
			return 1
		}
	} else {
		r, _, e := unix.Syscall6(unix.SYS_MMAP, 0, size, prot, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
		if e != 0 {
			report(arenaReport{Error: "mmap: " + e.Error()})
			return 1
		}
		base = r
	}
	for _, h := range spec.Holes {
		at := base + uintptr(h*pageSize)
		var e syscall.Errno
		if spec.Low {
			_, _, e = unix.Syscall(unix.SYS_MUNMAP, at, pageSize, 0)
		} else {
			_, _, e = unix.Syscall(unix.SYS_MPROTECT, at, pageSize, unix.PROT_NONE)
		}
		if e != 0 {
			report(arenaReport{Error: "punching hole: " + e.Error()})
			return 1
		}
	}
	rep := arenaReport{Base: uint64(base)}
	if spec.SelfArgv {
		argv, err := writeOwnArgv(uint64(base), os.Args)
		if err != nil {
			report(arenaReport{Error: err.Error()})
			return 1
		}
		rep.Argv = argv
	}
	report(rep)
	// Stay alive, memory untouched, until the test closes stdin.
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// writeOwnArgv lays out argv at base the way the kernel does on a new
// stack: the strings, then a NULL-terminated array of pointers to them. It
// writes through /proc/self/mem, the only way to store into raw memory
// without unsafe.
func writeOwnArgv(base uint64, argv []string) (uint64, error) {
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return 0, err
	}
	defer mem.Close()
	var strs []byte
	var ptrs []byte
	strBase := base + pageSize
	for _, a := range argv {
		ptrs = appendPtr(ptrs, strBase+uint64(len(strs)), 8)
		strs = append(append(strs, a...), 0)
	}
	ptrs = appendPtr(ptrs, 0, 8)
	if len(ptrs) > pageSize {
		return 0, fmt.Errorf("argv of %d words does not fit a page of pointers", len(argv))
	}
	if _, err := mem.WriteAt(strs, int64(strBase)); err != nil {
		return 0, err
	}
	if _, err := mem.WriteAt(ptrs, int64(base)); err != nil {
		return 0, err
	}
	return base, nil
}

func appendPtr(b []byte, p uint64, size int) []byte {
	if size == 4 {
		return append(b, byte(p), byte(p>>8), byte(p>>16), byte(p>>24))
	}
	return append(b, byte(p), byte(p>>8), byte(p>>16), byte(p>>24), byte(p>>32), byte(p>>40), byte(p>>48), byte(p>>56))
}

// --- child: install-twice -----------------------------------------------

type installReport struct {
	Fd          int    `json:"fd"`
	FirstErr    string `json:"first_err"`
	SecondErr   string `json:"second_err"`
	SecondBusy  bool   `json:"second_busy"`
	CloseOnExec bool   `json:"cloexec"`
	Link        string `json:"link"`
	NoNewPrivs  bool   `json:"no_new_privs"`
	// ThreadModes maps every thread of the child to its Seccomp: mode.
	ThreadModes map[string]string `json:"thread_modes"`
}

func installTwiceChild() int {
	var r installReport
	defer func() {
		b, _ := json.Marshal(r)
		os.Stdout.Write(append(b, '\n'))
	}()
	raw, err := Filter()
	if err != nil {
		r.FirstErr = "Filter: " + err.Error()
		return 1
	}
	fd, err := InstallFilter(raw)
	r.Fd = fd
	if err != nil {
		r.FirstErr = err.Error()
		return 1
	}
	if flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err == nil {
		r.CloseOnExec = flags&unix.FD_CLOEXEC != 0
	}
	r.Link, _ = os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	r.NoNewPrivs = statusField("/proc/self/status", "NoNewPrivs") == "1"
	r.ThreadModes = map[string]string{}
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		r.ThreadModes[task.Name()] = statusField("/proc/self/task/"+task.Name()+"/status", "Seccomp")
	}
	_, err = InstallFilter(raw)
	if err != nil {
		r.SecondErr = err.Error()
		r.SecondBusy = errors.Is(err, ErrListenerBusy)
	}
	return 0
}

func statusField(path, key string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// --- child: exec-client -------------------------------------------------

// execRequest asks an exec-client child to run Argv and report how it went.
type execRequest struct {
	Argv []string `json:"argv"`
}

// execResult is an exec-client's answer: the exit code, or the errno of
// the failed exec.
type execResult struct {
	Ready bool   `json:"ready,omitempty"`
	Exit  *int   `json:"exit,omitempty"`
	Errno int    `json:"errno,omitempty"`
	Error string `json:"error,omitempty"`
}

// execClientChild loads the filter, sends the listener to the test over fd
// 3 (SCM_RIGHTS), then runs the commands it reads from stdin, one JSON
// request a line, until stdin closes.
func execClientChild() int {
	out := json.NewEncoder(os.Stdout)
	raw, err := Filter()
	if err != nil {
		_ = out.Encode(execResult{Error: "Filter: " + err.Error()})
		return 1
	}
	fd, err := InstallFilter(raw)
	if err != nil {
		_ = out.Encode(execResult{Error: "InstallFilter: " + err.Error()})
		return 1
	}
	if err := unix.Sendmsg(3, []byte{'L'}, unix.UnixRights(fd), nil, 0); err != nil {
		_ = out.Encode(execResult{Error: "sending listener: " + err.Error()})
		return 1
	}
	unix.Close(fd)
	unix.Close(3)
	_ = out.Encode(execResult{Ready: true})
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var req execRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			_ = out.Encode(execResult{Error: err.Error()})
			continue
		}
		cmd := &exec.Cmd{
			Path: req.Argv[0],
			Args: req.Argv,
			Env:  []string{"PATH=/usr/bin:/bin"},
			// A command wedged in exec dies with this child.
			SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
		}
		err := cmd.Run()
		var res execResult
		var errno syscall.Errno
		var exitErr *exec.ExitError
		switch {
		case err == nil:
			zero := 0
			res.Exit = &zero
		case errors.As(err, &exitErr):
			code := exitErr.ExitCode()
			res.Exit = &code
		case errors.As(err, &errno):
			res.Errno = int(errno)
		default:
			res.Error = err.Error()
		}
		_ = out.Encode(res)
	}
	return 0
}
