package supervisor

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/cordon-sandbox/cordon/policy"
	"golang.org/x/sys/unix"
)

// Benchmarks of the supervisor's per-exec work, one piece at a time, on this
// process or a sleeping child standing in for the sandboxed caller. make
// bench runs them (go test -bench); make test does not. Sub-benchmarks named
// "proposal" measure a cheaper way of doing the same work, to size a change
// before it is made.

// benchArgv lays argv out in a fresh private mapping of this process, as
// the kernel lays it out on a new stack, and returns the addresses of the
// first string (used as the exec's path) and of the pointer array.
func benchArgv(b *testing.B, argv []string) (path, arr uint64) {
	b.Helper()
	size := 0
	for _, a := range argv {
		size += len(a) + 1
	}
	pages := 2 + size/pageSize + 1
	base, _, e := unix.Syscall6(unix.SYS_MMAP, 0, uintptr(pages*pageSize), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
	if e != 0 {
		b.Fatalf("mmap: %v", e)
	}
	b.Cleanup(func() { unix.Syscall(unix.SYS_MUNMAP, base, uintptr(pages*pageSize), 0) })
	arr, err := writeOwnArgv(uint64(base), argv)
	if err != nil {
		b.Fatal(err)
	}
	return uint64(base) + pageSize, arr
}

func benchWords(n int) []string {
	argv := []string{"/usr/bin/true"}
	for i := 1; i < n; i++ {
		argv = append(argv, fmt.Sprintf("--argument-%d=value", i))
	}
	return argv
}

// BenchmarkReadArgv reads an exec's path and argv as decide does
// (readExec: two process_vm_readv calls whatever the number of words), and
// as it did before ("apart": the path in a call of its own).
func BenchmarkReadArgv(b *testing.B) {
	pid := os.Getpid()
	for _, n := range []int{3, 16, 128} {
		b.Run(fmt.Sprintf("words=%d", n), func(b *testing.B) {
			path, arr := benchArgv(b, benchWords(n))
			var m memReader
			b.ReportAllocs()
			for b.Loop() {
				_, argv, err := m.readExec(pid, path, arr, 8)
				if err != nil || len(argv) != n {
					b.Fatalf("readExec: %d words, %v", len(argv), err)
				}
			}
		})
		b.Run(fmt.Sprintf("words=%d,apart", n), func(b *testing.B) {
			path, arr := benchArgv(b, benchWords(n))
			var m memReader
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.readString(pid, path, pathMax, errNameLen); err != nil {
					b.Fatal(err)
				}
				argv, err := m.readArgv(pid, arr, 8)
				if err != nil || len(argv) != n {
					b.Fatalf("readArgv: %d words, %v", len(argv), err)
				}
			}
		})
	}
}

// BenchmarkOpenTarget opens and identifies the exec's file in the caller's
// root. "per-exec" is what decide does today (open /proc/PID/root, openat2,
// fstat, readlink of the new fd); the proposals keep the root open and skip
// the readlink when the path is already canonical.
func BenchmarkOpenTarget(b *testing.B) {
	pid := os.Getpid()
	const path = "/usr/bin/true"
	sv := newSandboxView(0)
	b.Run("per-exec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			root, err := sv.openRoot(pid)
			if err != nil {
				b.Fatal(err)
			}
			t, errno := openTarget(pid, root, path, nil)
			sv.release(root)
			if errno != 0 || t.fd < 0 {
				b.Fatalf("openTarget: %v", errno)
			}
			unix.Close(t.fd)
		}
	})
	root, err := unix.Open(fmt.Sprintf("/proc/%d/root", pid), unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(root)
	b.Run("proposal=cached-root", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			how := inRoot
			fd, err := unix.Openat2(root, path, &how)
			if err != nil {
				b.Fatal(err)
			}
			t, errno := statTarget(pid, fd)
			if errno != 0 {
				b.Fatal(errno)
			}
			unix.Close(t.fd)
		}
	})
	b.Run("proposal=cached-root,no-readlink", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			how := inRoot
			fd, err := unix.Openat2(root, path, &how)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := fstatID(fd); err != nil {
				b.Fatal(err)
			}
			unix.Close(fd)
		}
	})
}

// BenchmarkReadHead reads the first bytes of the exec's file to look for #!:
// today through a re-open of the O_PATH descriptor via /proc/self/fd; the
// proposal opens the target readable once and preads.
func BenchmarkReadHead(b *testing.B) {
	t, errno := openTarget(os.Getpid(), rootOf(b), "/usr/bin/true", nil)
	if errno != 0 || t.fd < 0 {
		b.Fatalf("openTarget: %v", errno)
	}
	defer unix.Close(t.fd)
	b.Run("reopen", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if h, err := readHead(t.fd); err != nil || len(h) == 0 {
				b.Fatal("empty head")
			}
		}
	})
	fd, err := unix.Open("/usr/bin/true", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(fd)
	b.Run("proposal=pread", func(b *testing.B) {
		buf := make([]byte, binprmBufSize)
		b.ReportAllocs()
		for b.Loop() {
			if n, err := unix.Pread(fd, buf, 0); err != nil || n == 0 {
				b.Fatal(err)
			}
		}
	})
}

func benchPolicy(b *testing.B) (*policy.Policy, *files) {
	b.Helper()
	p, err := policy.Compile(policy.Config{Default: policy.Allow, Builtins: true})
	if err != nil {
		b.Fatal(err)
	}
	fs := newFiles(newSandboxView(0), os.Getenv("PATH"))
	return p.WithFiles(fs), fs
}

// BenchmarkPolicyWithFiles decides /usr/bin/true against the default policy
// (built-in deny list) with real file identity, as the supervisor does:
// every deny program's files are looked up (cached for lookupTTL) and
// compared with the exec's. "warm" is the steady state; "cold" is what the
// first exec of a sandbox pays, and every exec after a lookupTTL expiry.
func BenchmarkPolicyWithFiles(b *testing.B) {
	pid := os.Getpid()
	tgt, errno := openTarget(pid, rootOf(b), "/usr/bin/true", nil)
	if errno != 0 || tgt.fd < 0 {
		b.Fatalf("openTarget: %v", errno)
	}
	defer unix.Close(tgt.fd)
	e := policy.Exec{Argv: []string{"true"}, Path: "/usr/bin/true", Resolved: tgt.path, File: tgt.id, Known: true}
	b.Run("warm", func(b *testing.B) {
		pol, fs := benchPolicy(b)
		fs.setCurrent(&tgt)
		pol.Decide(&e)
		b.ReportAllocs()
		for b.Loop() {
			fs.setCurrent(&tgt)
			if r := pol.Decide(&e); r.Decision != policy.Allow {
				b.Fatalf("decision %v", r.Decision)
			}
			fs.setCurrent(nil)
		}
	})
	b.Run("cold", func(b *testing.B) {
		p, err := policy.Compile(policy.Config{Default: policy.Allow, Builtins: true})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			fs := newFiles(newSandboxView(0), os.Getenv("PATH"))
			pol := p.WithFiles(fs)
			fs.setCurrent(&tgt)
			pol.Decide(&e)
		}
	})
}

// sleeper starts a single-threaded child that stands in for a caller.
func sleeper(b *testing.B) int {
	b.Helper()
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		b.Skipf("starting sleep: %v", err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

// execStopped starts sleep traced (PTRACE_TRACEME) and returns it stopped
// right after its exec, where an exec event stops a tracee: nothing of the
// image run, its stack at argc. The calling goroutine stays locked to its
// thread, the tracer's (ptrace requests come from the thread that
// attached).
func execStopped(b *testing.B) int {
	b.Helper()
	runtime.LockOSThread()
	b.Cleanup(runtime.UnlockOSThread)
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		b.Skipf("starting sleep: %v", err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var ws unix.WaitStatus
	if _, err := unix.Wait4(cmd.Process.Pid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() {
		b.Fatalf("sleep did not stop after its exec: %v %v", err, ws)
	}
	return cmd.Process.Pid
}

// BenchmarkVerifyImage is the tracer's second decision at PTRACE_EVENT_EXEC:
// read the image's argv from its stack and /proc/PID/exe, identify, decide
// again.
func BenchmarkVerifyImage(b *testing.B) {
	pid := execStopped(b)
	pol, fs := benchPolicy(b)
	t := &tracer{judge: newJudge(pol, fs), log: slog.New(slog.DiscardHandler)}
	checked := &Verdict{Exec: policy.Exec{Argv: []string{"sleep", "1000"}}, Result: policy.Result{Decision: policy.Allow}}
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := t.decideImage(pid, checked, -1); !ok {
			b.Fatal("verification refused an unchanged exec")
		}
	}
}

// BenchmarkTracerAttach is the supervisor's round trip to the tracer thread
// for one allowed exec. The caller is already attached after the first
// iteration (the tracer then only updates its table), so this is the cost of
// handing a request to a locked OS thread and getting the answer back; the
// PTRACE_SEIZE itself is a few microseconds more.
func BenchmarkTracerAttach(b *testing.B) {
	pid := sleeper(b)
	pol, fs := benchPolicy(b)
	t := newTracer(newJudge(pol, fs), slog.New(slog.DiscardHandler), nil)
	defer t.close()
	d := &Verdict{Arch: "x86_64"}
	if err := t.attach(pid, d); err != nil {
		b.Skipf("ptrace not available: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := t.attach(pid, d); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStrictCheck is --verify strict's test that a caller cannot change
// its argv after the check: /proc/PID/status twice, a scan of every process
// in /proc for a memory peer (kcmp), and /proc/PID/maps.
func BenchmarkStrictCheck(b *testing.B) {
	pid := sleeper(b)
	procs, _ := os.ReadDir("/proc")
	n := 0
	for _, p := range procs {
		if strings.Trim(p.Name(), "0123456789") == "" {
			n++
		}
	}
	b.Run(fmt.Sprintf("host-processes=%d", n), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if why := raceable(pid, 0, nil, newSandboxView(0), false); why != "" {
				b.Fatalf("sleep is raceable: %s", why)
			}
		}
	})
}

// rootOf returns this process's root directory (O_PATH), closed with b.
func rootOf(b *testing.B) int {
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unix.Close(root) })
	return root
}

// BenchmarkPrelist is what the host reads while bubblewrap builds the
// sandbox: the listings of the PATH's and the dynamic loader's directories
// that the built-in rules' programs are looked up in.
func BenchmarkPrelist(b *testing.B) {
	p, err := policy.Compile(policy.Config{Default: policy.Allow, Builtins: true})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		pre := Prelist(p, os.Getenv("PATH"))
		<-pre.done
		if len(pre.lists) == 0 {
			b.Fatal("nothing listed")
		}
	}
}

// BenchmarkStrictSettle is strict mode's memory check on a real exec's
// worth of arguments (sleep's own argv strings, on its stack): locating
// them with PROCMAP_QUERY alone (what it cost before the write-back), and
// with settle's smaps scan for MAP_DROPPABLE and write-back.
func BenchmarkStrictSettle(b *testing.B) {
	pid := sleeper(b)
	st, err := proc.ReadStat(pid)
	if err != nil {
		b.Fatal(err)
	}
	lo, hi := st.Layout[6], st.Layout[7] // arg_start, arg_end
	data := make([]byte, hi-lo)
	var m memReader
	if n, err := m.readAt(pid, lo, data); err != nil || n != len(data) {
		b.Fatalf("reading sleep's arguments: %d of %d bytes, %v", n, len(data), err)
	}
	ranges := []span{{lo, hi, data}}
	sv := newSandboxView(0)
	b.Run("locate", func(b *testing.B) {
		for b.Loop() {
			if _, why, _, ok := unsafeRangeQuery(pid, ranges, sv); !ok || why != "" {
				b.Fatalf("locating: %v %s", ok, why)
			}
		}
	})
	b.Run("locate+settle", func(b *testing.B) {
		for b.Loop() {
			_, why, pieces, ok := unsafeRangeQuery(pid, ranges, sv)
			if !ok || why != "" || len(pieces) == 0 {
				b.Fatalf("locating: %v %s %d", ok, why, len(pieces))
			}
			if _, why := settle(pid, pieces, true); why != "" {
				b.Fatal(why)
			}
		}
	})
}

// BenchmarkExecEvent is the tracer's work at PTRACE_EVENT_EXEC on a fresh
// process, as in a shell loop: every iteration starts /usr/bin/true under
// PTRACE_TRACEME, stopped after its exec (no instruction run; a pid whose
// /proc entries do not exist yet), and times only the event's work.
// "argv cmdline" and "argv stack" read the kernel's argv (with the image's
// open, which builds the pid's /proc entries either way); "decide full" is
// the second judge, "decide fast" the check's decision kept
// (tracer.unchanged); "root proof" the statx of /proc/PID/root, as the
// notification made it, and as the event makes it, after its own reads.
//
// Every iteration starts a process outside the timer, so a time-based
// -benchtime would run it for many minutes (make bench's 500ms × 5 did):
// it runs only with a count, e.g. go test -run '^$' -bench ExecEvent
// -benchtime 2000x ./supervisor.
func BenchmarkExecEvent(b *testing.B) {
	if bt := flag.Lookup("test.benchtime"); bt == nil || !strings.HasSuffix(bt.Value.String(), "x") {
		b.Skip("run with -benchtime Nx (see the comment)")
	}
	testcap.RequirePtrace(b)
	pol, fs := benchPolicy(b)
	tr := &tracer{judge: newJudge(pol, fs)}
	argv := []string{"/usr/bin/true", "x"}
	self := os.Getpid()
	tgt, errno := openTarget(self, rootOf(b), "/usr/bin/true", nil)
	if errno != 0 || tgt.fd < 0 {
		b.Fatalf("openTarget: %v", errno)
	}
	checked := Verdict{Exec: policy.Exec{Argv: argv, Path: "/usr/bin/true"}, root: -1}
	if errno := tr.judge.decide(self, rootOf(b), &tgt, "/usr/bin/true", &checked); errno != 0 || checked.Result.Decision != policy.Allow {
		b.Fatalf("the check: %v %v", errno, checked.Result.Decision)
	}
	unix.Close(tgt.fd)
	full := checked
	full.Exec.Writable = !full.Exec.Writable // not unchanged: decided again in full

	stopped := func(b *testing.B) *exec.Cmd {
		cmd := &exec.Cmd{Path: "/usr/bin/true", Args: argv, Env: []string{"A=1"},
			SysProcAttr: &syscall.SysProcAttr{Ptrace: true, Pdeathsig: syscall.SIGKILL}}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		var ws unix.WaitStatus
		if _, err := unix.Wait4(cmd.Process.Pid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() {
			b.Fatalf("wait for the exec stop: %v %v", err, ws)
		}
		return cmd
	}
	each := func(name string, work func(b *testing.B, pid int)) {
		b.Run(name, func(b *testing.B) {
			runtime.LockOSThread() // the child's tracer is the thread that started it
			defer runtime.UnlockOSThread()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				cmd := stopped(b)
				b.StartTimer()
				work(b, cmd.Process.Pid)
				b.StopTimer()
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				b.StartTimer()
			}
		})
	}
	openExe := func(b *testing.B, pid int) {
		fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/exe", unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			b.Fatal(err)
		}
		unix.Close(fd)
	}
	each("argv cmdline", func(b *testing.B, pid int) {
		if _, err := proc.ReadFile("/proc/"+strconv.Itoa(pid)+"/cmdline", nil); err != nil {
			b.Fatal(err)
		}
		openExe(b, pid)
	})
	each("decide full", func(b *testing.B, pid int) {
		if ok, _ := tr.decideImage(pid, &full, -1); !ok {
			b.Fatal("refused")
		}
	})
	each("decide fast", func(b *testing.B, pid int) {
		if ok, _ := tr.decideImage(pid, &checked, -1); !ok {
			b.Fatal("refused")
		}
	})
	proof := func(b *testing.B, pid int) {
		fd, err := fs.sandbox.openRoot(pid)
		if err != nil {
			b.Fatal(err)
		}
		fs.sandbox.release(fd)
	}
	each("root proof", proof) // at the notification: the pid's /proc entries are built here
	each("root proof after the event's reads", func(b *testing.B, pid int) {
		b.StopTimer()
		openExe(b, pid)
		b.StartTimer()
		proof(b, pid)
	})
}
