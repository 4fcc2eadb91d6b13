package supervisor

//go:generate go test -run ^TestFilterTableCurrent$ . -args -update

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"

	kseccomp "github.com/cordon-sandbox/cordon/internal/seccomp"
)

// ErrListenerBusy is returned by InstallFilter when the calling task already
// runs under a seccomp filter with a notify listener (a nested cordon,
// another notify-based tool, or WSL2 mirrored networking): the kernel allows
// one listener per filter chain.
var ErrListenerBusy = errors.New("a seccomp notify listener already exists for this process (nested cordon or another notify-based tool)")

// Filter returns the sandbox's seccomp program as raw BPF (struct
// sock_filter array, native byte order). Every variant of the program is
// compiled with libseccomp at build time (go generate: filter_table_linux.go,
// see compileFilter) and embedded, so a run does not compile it again.
//
// The program, for x86-64, i386 and x32 callers alike:
//   - execve, execveat: SECCOMP_RET_USER_NOTIF (decided by the supervisor);
//   - ioctl TIOCSTI and TIOCLINUX (compared on the low 32 bits, which is all
//     the kernel reads of the command): EPERM, so a sandboxed program cannot
//     push keystrokes into the user's terminal;
//   - io_uring, userfaultfd, process_vm_writev, pidfd_getfd and ptrace:
//     refused (see below);
//   - prlimit64 on any process but the caller: EPERM;
//   - clone with CLONE_VM outside threads and plain vfork, with CLONE_FS or
//     CLONE_FILES outside threads, and clone3: refused;
//   - unshare and clone with a namespace flag, and setns: refused;
//   - any other architecture: the process is killed;
//   - everything else: allowed.
func Filter() ([]byte, error) { return program(optNotify) }

// CreateFilter is Filter plus notify rules for the calls that create a
// name in the file system (see createCalls), for a policy with protected
// names: open and openat with O_CREAT (the flags are in a register, so
// the filter tests them), creat, openat2 (its flags are in memory: every
// call is notified), mkdir(at), mknod(at), link(at), symlink(at),
// rename(at, at2). The supervisor refuses a creation of a protected name
// (decideCreate) and continues the rest.
func CreateFilter() ([]byte, error) { return program(optNotify | optCreates) }

// FilterWith is Filter plus, with creates, CreateFilter's rules and, with
// connects, a notify rule for connect (see ConnectPorts): the supervisor
// records which process connects a socket to the network proxy, then
// continues every connect.
func FilterWith(creates, connects bool) ([]byte, error) {
	opts := optNotify
	if creates {
		opts |= optCreates
	}
	if connects {
		opts |= optConnects
	}
	return program(opts)
}

// FallbackFilter is Filter without the notify rules, for ptrace-only
// supervision: where a notify listener already exists above the sandbox,
// execs are allowed by the filter and verified at PTRACE_EVENT_EXEC instead.
// Everything else (architectures, TIOCSTI, the refused calls) is the same.
func FallbackFilter() ([]byte, error) { return program(0) }

// filterOpt is a set of the program's options (filterOpts).
type filterOpt uint

const (
	optNotify   filterOpt = 1 << iota // execve, execveat notified; without it, the ptrace-only fallback
	optCreates                        // file creations notified (addCreateRules)
	optConnects                       // connect notified (the network proxy's attribution)
	optSockets                        // the landlock tier's socket rules (addSocketRules, GatedFilter)
)

// filterOpts lists every option of the program, in the order its rules are
// added, with the rules it adds. go generate compiles every combination of
// them for every architecture in filterArchs into filterTable; a new option
// is one more entry here (and one more bit above), then go generate.
var filterOpts = []struct {
	opt  filterOpt
	name string
	add  func(*seccomp.ScmpFilter) error
}{
	{optNotify, "notify", func(f *seccomp.ScmpFilter) error {
		return addNotify(f, "execve", "execveat")
	}},
	{optCreates, "creates", addCreateRules},
	{optConnects, "connects", func(f *seccomp.ScmpFilter) error {
		return addNotify(f, "connect")
	}},
	{optSockets, "sockets", addSocketRules},
}

// filterArchs maps each GOARCH cordon builds for to the architectures its
// program admits, the GOARCH's own first; any other is killed.
var filterArchs = map[string][]seccomp.ScmpArch{
	"amd64": {seccomp.ArchAMD64, seccomp.ArchX86, seccomp.ArchX32},
	"arm64": {seccomp.ArchARM64, seccomp.ArchAMD64, seccomp.ArchX86, seccomp.ArchX32},
}

// program returns the embedded program with opts for this architecture.
// One that is missing (a GOARCH or an option set go generate did not
// build) is an error: no sandbox starts without its filter.
func program(opts filterOpt) ([]byte, error) {
	raw, ok := filterTable[runtime.GOARCH][opts]
	if !ok || len(raw) == 0 {
		return nil, fmt.Errorf("no seccomp program is built into this cordon for %s with options %s (run go generate ./supervisor and rebuild)",
			runtime.GOARCH, opts)
	}
	return []byte(raw), nil
}

func (o filterOpt) String() string {
	var names []string
	for _, e := range filterOpts {
		if o&e.opt != 0 {
			names = append(names, e.name)
		}
	}
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, "+")
}

func addNotify(f *seccomp.ScmpFilter, names ...string) error {
	for _, name := range names {
		sc, err := seccomp.GetSyscallFromName(name)
		if err != nil {
			return fmt.Errorf("resolving %s: %w", name, err)
		}
		if err := f.AddRule(sc, seccomp.ActNotify); err != nil {
			return fmt.Errorf("adding notify rule for %s: %w", name, err)
		}
	}
	return nil
}

// compileFilter compiles the program with opts for goarch with libseccomp.
// Only go generate and the test that checks filterTable is current call it
// (see filter_table_linux_test.go). The result does not depend on the
// machine it runs on: the filter's architectures are set explicitly, the
// host's removed.
func compileFilter(opts filterOpt, goarch string) ([]byte, error) {
	archs, ok := filterArchs[goarch]
	if !ok {
		return nil, fmt.Errorf("no seccomp architectures for GOARCH %s", goarch)
	}
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return nil, fmt.Errorf("creating seccomp filter: %w", err)
	}
	defer f.Release()
	// The filter starts with the host's architecture: it is replaced by
	// goarch's own, then the others are added in filterArchs' order, so
	// the program is the same whichever machine compiles it.
	native, err := seccomp.GetNativeArch()
	if err != nil {
		return nil, fmt.Errorf("the host's seccomp arch: %w", err)
	}
	if native != archs[0] {
		if err := f.AddArch(archs[0]); err != nil {
			return nil, fmt.Errorf("adding arch %v: %w", archs[0], err)
		}
		if err := f.RemoveArch(native); err != nil {
			return nil, fmt.Errorf("removing the host's arch %v: %w", native, err)
		}
	}
	for _, a := range archs[1:] {
		if err := f.AddArch(a); err != nil {
			return nil, fmt.Errorf("adding arch %v: %w", a, err)
		}
	}
	if err := f.SetBadArchAction(seccomp.ActKillProcess); err != nil {
		return nil, fmt.Errorf("setting bad-arch action: %w", err)
	}
	for _, e := range filterOpts {
		if opts&e.opt == 0 {
			continue
		}
		if err := e.add(f); err != nil {
			return nil, err
		}
	}
	ioctlNr, err := seccomp.GetSyscallFromName("ioctl")
	if err != nil {
		return nil, fmt.Errorf("resolving ioctl: %w", err)
	}
	for _, cmd := range []uint64{unix.TIOCSTI, unix.TIOCLINUX} {
		cond, err := seccomp.MakeCondition(1, seccomp.CompareMaskedEqual, 0xffffffff, cmd)
		if err != nil {
			return nil, fmt.Errorf("building ioctl condition: %w", err)
		}
		if err := f.AddRuleConditional(ioctlNr, seccomp.ActErrno.SetReturnCode(int16(unix.EPERM)), []seccomp.ScmpCondition{cond}); err != nil {
			return nil, fmt.Errorf("adding ioctl rule: %w", err)
		}
	}
	// MAP_DROPPABLE mappings (Linux 6.11+: the map type 0x08 in mmap's
	// flags) refused with EINVAL, as a kernel without them answers: the
	// kernel may drop their pages, dirty or not, under memory pressure, so
	// an exec's arguments there could turn to zeros after strict mode
	// checked them (see settle). glibc's getrandom, their one user, falls
	// back to the system call.
	for _, name := range []string{"mmap", "mmap2"} {
		sc, err := seccomp.GetSyscallFromName(name)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", name, err)
		}
		cond, err := seccomp.MakeCondition(3, seccomp.CompareMaskedEqual, 0x0f, 0x08)
		if err != nil {
			return nil, fmt.Errorf("building %s condition: %w", name, err)
		}
		if err := f.AddRuleConditional(sc, seccomp.ActErrno.SetReturnCode(int16(unix.EINVAL)), []seccomp.ScmpCondition{cond}); err != nil {
			return nil, fmt.Errorf("adding %s rule: %w", name, err)
		}
	}
	// Calls that serve only to race or escape the exec check, with no use
	// an agent's workload needs (each is refused, not killed, so programs
	// that probe for them fall back):
	//   - io_uring_*: submits file operations no syscall filter sees;
	//     ENOSYS makes io_uring users fall back to plain syscalls;
	//   - Linux AIO (io_setup and the rest): a read queued just before
	//     execve completes in the kernel after the supervisor read the
	//     caller's path and argv and before the kernel reads them again,
	//     rewriting memory strict mode trusts as written only by the
	//     caller's one thread. ENOSYS: libaio users (databases) fall back
	//     or say so; glibc's POSIX AIO uses threads, not these calls;
	//   - userfaultfd: can stall the supervisor's read of a caller's
	//     argv on a page fault it controls;
	//   - process_vm_writev: rewrites another process's memory (its argv
	//     while it waits for a decision) without ptrace;
	//   - pidfd_getfd: copies another process's descriptor (a red team's:
	//     with --isolation none, the supervisor's notify listener from
	//     cordon itself, then every exec approved; in the bwrap tier, the
	//     eventfd of bubblewrap's pid 1, which ended the run with an exit
	//     code of the workload's choosing);
	//   - ptrace: see below.
	for _, rule := range []struct {
		name  string
		errno unix.Errno
	}{
		{"io_uring_setup", unix.ENOSYS},
		{"io_uring_enter", unix.ENOSYS},
		{"io_uring_register", unix.ENOSYS},
		{"io_setup", unix.ENOSYS},
		{"io_submit", unix.ENOSYS},
		{"io_getevents", unix.ENOSYS},
		{"io_pgetevents", unix.ENOSYS},
		{"io_cancel", unix.ENOSYS},
		{"io_destroy", unix.ENOSYS},
		{"userfaultfd", unix.EPERM},
		// ptrace: a tracer can rewrite a traced program's memory after
		// its exec was checked. Debuggers and strace do not work inside
		// the sandbox; run them outside.
		{"ptrace", unix.EPERM},
		{"process_vm_writev", unix.EPERM},
		{"pidfd_getfd", unix.EPERM},
	} {
		sc, err := seccomp.GetSyscallFromName(rule.name)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", rule.name, err)
		}
		if err := f.AddRule(sc, seccomp.ActErrno.SetReturnCode(int16(rule.errno))); err != nil {
			return nil, fmt.Errorf("adding rule for %s: %w", rule.name, err)
		}
	}
	// prlimit64 on another process: a process of the sandbox runs as the
	// user of cordon's init and, in the tiers without a pid namespace, of
	// cordon itself, and the kernel lets the same user set their limits
	// with no ptrace check (Landlock does not scope it): RLIMIT_NOFILE 0
	// left the init and cordon unable to read /proc to end the tree, and
	// RLIMIT_CPU kills them. EPERM for any pid but 0 (the caller itself:
	// glibc's setrlimit and prlimit without a pid use 0). The full 64 bits
	// are compared: a pid of 0 with high bits set is refused too.
	{
		sc, err := seccomp.GetSyscallFromName("prlimit64")
		if err != nil {
			return nil, fmt.Errorf("resolving prlimit64: %w", err)
		}
		cond, err := seccomp.MakeCondition(0, seccomp.CompareNotEqual, 0)
		if err != nil {
			return nil, fmt.Errorf("building prlimit64 condition: %w", err)
		}
		if err := f.AddRuleConditional(sc, seccomp.ActErrno.SetReturnCode(int16(unix.EPERM)), []seccomp.ScmpCondition{cond}); err != nil {
			return nil, fmt.Errorf("adding prlimit64 rule: %w", err)
		}
	}
	// Device nodes: a block or character device made in a writable
	// directory opens the disk or device behind it, below any file
	// permission or Landlock rule on the files it holds (debugfs -w on a
	// filesystem outside the writable set). Capabilities are dropped in
	// the bwrap and landlock tiers, so the kernel refuses it too; this
	// refuses it in every tier, whatever the sandbox's capabilities.
	// FIFOs, sockets and regular files stay allowed.
	for _, m := range []struct {
		name string
		arg  uint
	}{{"mknod", 1}, {"mknodat", 2}} {
		sc, err := seccomp.GetSyscallFromName(m.name)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", m.name, err)
		}
		for _, kind := range []uint64{unix.S_IFBLK, unix.S_IFCHR} {
			cond, err := seccomp.MakeCondition(m.arg, seccomp.CompareMaskedEqual, unix.S_IFMT, kind)
			if err != nil {
				return nil, fmt.Errorf("building %s condition: %w", m.name, err)
			}
			if err := f.AddRuleConditional(sc, seccomp.ActErrno.SetReturnCode(int16(unix.EPERM)), []seccomp.ScmpCondition{cond}); err != nil {
				return nil, fmt.Errorf("adding %s rule: %w", m.name, err)
			}
		}
	}
	// Memory peers: a process sharing the caller's memory without being
	// one of its threads could rewrite its exec arguments unseen. clone
	// with CLONE_VM but without CLONE_THREAD is allowed only as a plain
	// vfork (the parent is suspended until the child execs, and stays the
	// child's parent: no CLONE_PARENT). clone3 passes its flags in memory
	// the filter cannot read: ENOSYS, and glibc falls back to clone.
	// With this, the only tasks sharing an exec caller's memory are its
	// threads and processes made by vfork (see raceable: a vfork parent
	// runs again once its own child execs or dies, which need not be the
	// caller).
	cloneNr, err := seccomp.GetSyscallFromName("clone")
	if err != nil {
		return nil, fmt.Errorf("resolving clone: %w", err)
	}
	// A process sharing the caller's working directory (CLONE_FS) or its
	// descriptor table (CLONE_FILES) without being one of its threads
	// could change what a relative path or a descriptor names after the
	// check, and after the exec too (exec does not unshare the working
	// directory): a dynamic loader opens its program by name after the
	// exec event. Threads pass CLONE_THREAD; fork, vfork and posix_spawn
	// pass neither.
	for _, c := range []struct{ mask, want uint64 }{
		{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_VFORK, unix.CLONE_VM},
		{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_PARENT, unix.CLONE_VM | unix.CLONE_PARENT},
		{unix.CLONE_FS | unix.CLONE_THREAD, unix.CLONE_FS},
		{unix.CLONE_FILES | unix.CLONE_THREAD, unix.CLONE_FILES},
	} {
		cond, err := seccomp.MakeCondition(0, seccomp.CompareMaskedEqual, c.mask, c.want)
		if err != nil {
			return nil, fmt.Errorf("building clone condition: %w", err)
		}
		if err := f.AddRuleConditional(cloneNr, seccomp.ActErrno.SetReturnCode(int16(unix.EPERM)), []seccomp.ScmpCondition{cond}); err != nil {
			return nil, fmt.Errorf("adding clone rule: %w", err)
		}
	}
	// Namespaces: a process that makes its own user namespace can make
	// mount namespaces in it, chroot and mount, so its paths would no
	// longer mean what they mean in the sandbox (the supervisor refuses
	// such callers, but they need not exist at all). unshare and clone
	// with any namespace flag, and setns, are refused with EPERM; nested
	// sandboxes (bwrap, unshare, podman) do not run inside cordon.
	// CLONE_NEWTIME shares its bit with clone's exit signal, so it is
	// refused for unshare only (clone cannot ask for it).
	nsFlags := []uint64{unix.CLONE_NEWNS, unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
		unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWCGROUP}
	unshareNr, err := seccomp.GetSyscallFromName("unshare")
	if err != nil {
		return nil, fmt.Errorf("resolving unshare: %w", err)
	}
	for _, c := range []struct {
		nr    seccomp.ScmpSyscall
		flags []uint64
	}{
		{cloneNr, nsFlags},
		{unshareNr, append(nsFlags, unix.CLONE_NEWTIME)},
	} {
		for _, flag := range c.flags {
			cond, err := seccomp.MakeCondition(0, seccomp.CompareMaskedEqual, flag, flag)
			if err != nil {
				return nil, fmt.Errorf("building namespace condition: %w", err)
			}
			if err := f.AddRuleConditional(c.nr, seccomp.ActErrno.SetReturnCode(int16(unix.EPERM)), []seccomp.ScmpCondition{cond}); err != nil {
				return nil, fmt.Errorf("adding namespace rule: %w", err)
			}
		}
	}
	setnsNr, err := seccomp.GetSyscallFromName("setns")
	if err != nil {
		return nil, fmt.Errorf("resolving setns: %w", err)
	}
	if err := f.AddRule(setnsNr, seccomp.ActErrno.SetReturnCode(int16(unix.EPERM))); err != nil {
		return nil, fmt.Errorf("adding setns rule: %w", err)
	}
	clone3Nr, err := seccomp.GetSyscallFromName("clone3")
	if err != nil {
		return nil, fmt.Errorf("resolving clone3: %w", err)
	}
	if err := f.AddRule(clone3Nr, seccomp.ActErrno.SetReturnCode(int16(unix.ENOSYS))); err != nil {
		return nil, fmt.Errorf("adding clone3 rule: %w", err)
	}
	return exportBPF(f)
}

func exportBPF(f *seccomp.ScmpFilter) ([]byte, error) {
	fd, err := unix.MemfdCreate("cordon-filter", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	mf := os.NewFile(uintptr(fd), "cordon-filter")
	defer mf.Close()
	if err := f.ExportBPF(mf); err != nil {
		return nil, fmt.Errorf("exporting BPF: %w", err)
	}
	if _, err := mf.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("rewinding BPF: %w", err)
	}
	raw, err := io.ReadAll(mf)
	if err != nil {
		return nil, fmt.Errorf("reading BPF: %w", err)
	}
	if len(raw) == 0 || len(raw)%8 != 0 {
		return nil, fmt.Errorf("libseccomp exported %d bytes of BPF, not a whole program", len(raw))
	}
	return raw, nil
}

// decodeFilter turns raw BPF bytes into instructions.
func decodeFilter(raw []byte) ([]unix.SockFilter, error) {
	if len(raw) == 0 || len(raw)%8 != 0 || len(raw)/8 > 4096 {
		return nil, fmt.Errorf("invalid BPF program of %d bytes", len(raw))
	}
	out := make([]unix.SockFilter, len(raw)/8)
	for i := range out {
		b := raw[i*8:]
		out[i] = unix.SockFilter{
			Code: binary.NativeEndian.Uint16(b[0:]),
			Jt:   b[2],
			Jf:   b[3],
			K:    binary.NativeEndian.Uint32(b[4:]),
		}
	}
	return out, nil
}

// InstallFilter loads raw (from Filter) on every thread of the calling
// process and returns the notify listener fd (close-on-exec).
//
// PR_SET_NO_NEW_PRIVS is per thread: the caller's OS thread is locked until
// seccomp() returns, and SECCOMP_FILTER_FLAG_TSYNC then propagates both the
// filter and no_new_privs to the other threads. TSYNC_ESRCH makes a sync
// failure an error instead of a thread id, which the kernel requires when
// TSYNC is combined with NEW_LISTENER (Linux 5.7+).
func InstallFilter(raw []byte) (int, error) {
	prog, err := decodeFilter(raw)
	if err != nil {
		return -1, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err)
	}
	fd, err := kseccomp.SetFilter(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER|unix.SECCOMP_FILTER_FLAG_TSYNC|unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH, prog)
	if errors.Is(err, unix.EBUSY) {
		return -1, ErrListenerBusy
	}
	if err != nil {
		return -1, err
	}
	return fd, nil
}

// InstallFallbackFilter loads raw (from FallbackFilter) on every thread of
// the calling process, without a listener.
func InstallFallbackFilter(raw []byte) error {
	prog, err := decodeFilter(raw)
	if err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return os.NewSyscallError("prctl(PR_SET_NO_NEW_PRIVS)", err)
	}
	_, err = kseccomp.SetFilter(unix.SECCOMP_FILTER_FLAG_TSYNC, prog)
	return err
}
