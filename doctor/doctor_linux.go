package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/internal/isolation"
	"github.com/cordon-sandbox/cordon/internal/seccomp"
)

// Run checks this host and returns the report. It never fails as a whole:
// what could not be checked is a row that says why. The probes run
// concurrently, each bounded by opts.Timeout, so Run returns within about
// one timeout even on a host where every probe hangs.
func Run(ctx context.Context, opts Options) Report {
	timeout := opts.timeout()
	root := os.Geteuid() == 0

	var (
		wg        sync.WaitGroup
		sf        SeccompFeatures
		usernsErr error
		ptraceErr error
		bw        bwrapFacts
	)
	wg.Add(4)
	go func() {
		defer wg.Done()
		// Per-feature failures are in sf; the joined error adds nothing.
		sf, _ = probeSeccomp(ctx, timeout)
	}()
	go func() {
		defer wg.Done()
		usernsErr = probeUserNS(ctx, timeout)
	}()
	go func() {
		defer wg.Done()
		ptraceErr = probePtrace(ctx, timeout)
	}()
	go func() {
		defer wg.Done()
		bw = probeBwrap(ctx, opts.Bwrap, timeout)
	}()

	osrelease := readTrimmed("/proc/sys/kernel/osrelease")
	release := osrelease
	var uts unix.Utsname
	if err := unix.Uname(&uts); err == nil {
		release = unix.ByteSliceToString(uts.Release[:])
	}
	wsl := detectWSL(release, readTrimmed("/proc/version"))
	sysctls := usernsSysctls{
		UnprivilegedClone: readTrimmed("/proc/sys/kernel/unprivileged_userns_clone"),
		MaxUserNamespaces: readTrimmed("/proc/sys/user/max_user_namespaces"),
		AppArmorRestrict:  readTrimmed("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"),
	}
	filters := ""
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		filters, _ = statusField(string(status), "Seccomp_filters")
	}
	yama := readTrimmed("/proc/sys/kernel/yama/ptrace_scope")
	cg := probeCgroup()
	gf := probeGit(ctx, timeout, os.Environ())
	wg.Wait()

	checks := []Check{wslCheck(wsl, release), kernelCheck(release)}
	checks = append(checks, seccompChecks(sf, NotifSizes(seccomp.CompiledLayout().Sizes), filters)...)
	checks = append(checks,
		usernsCheck(usernsFacts{Root: root, ProbeErr: usernsErr, Sysctls: sysctls, BwrapPath: bw.Path, BwrapSetuid: bw.Setuid}),
		bwrapCheck(bw),
		ptraceCheck(ptraceFacts{Root: root, YamaScope: yama, SeizeErr: ptraceErr}),
		cgroupCheck(cg),
	)
	checks = verificationChecks(checks, sf)
	checks = isolationChecks(checks, isolation.Choose(ctx))
	checks = append(checks, gitBareReposCheck(gf))
	return newReport(checks, sf)
}

// gitConfigEnv are the variables that decide which configuration git reads
// (the files, and settings given in the environment), passed to probeGit's
// git as the user's git gets them; nothing else of the environment is.
func gitConfigEnv(kv string) bool {
	k, _, _ := strings.Cut(kv, "=")
	switch k {
	case "HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM",
		"GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT":
		return true
	}
	return strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_")
}

// probeGit reads safe.bareRepository as the user's git does: git itself
// reads every configuration it would (system, XDG and ~/.gitconfig in its
// order, includes, GIT_CONFIG_NOSYSTEM), and only the scopes git honours
// for this setting count (system, global, command: a repository's own
// config cannot set it), the last one read winning. It also reads git's
// version: git before 2.38 has no such setting.
func probeGit(ctx context.Context, timeout time.Duration, env []string) gitFacts {
	git, err := exec.LookPath("git")
	if err != nil {
		return gitFacts{Missing: true}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var genv []string
	for _, kv := range env {
		if gitConfigEnv(kv) {
			genv = append(genv, kv)
		}
	}
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, git, args...)
		cmd.Dir, cmd.Env = "/", genv
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.WaitDelay = 100 * time.Millisecond
		out, err := cmd.Output()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "", fmt.Errorf("git %s: %w after %v", args[0], errProbeTimeout, timeout)
		}
		if msg := strings.TrimSpace(stderr.String()); err != nil && msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return string(out), err
	}
	out, err := run("version")
	if err != nil {
		return gitFacts{Err: fmt.Errorf("git version: %w", err)}
	}
	f := gitFacts{Version: strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "git version"))}
	out, err = run("config", "--includes", "--show-scope", "--get-all", "safe.bareRepository")
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return f // set nowhere
	case err != nil:
		f.Err = fmt.Errorf("git config: %w", err)
		return f
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		scope, value, _ := strings.Cut(line, "\t")
		switch scope {
		case "system", "global", "command":
			f.Value = value
		}
	}
	return f
}

// readTrimmed returns a /proc or /sys file's content, or "" if it is absent.
func readTrimmed(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// probeBwrap finds bubblewrap, asks its version and runs the smallest
// sandbox with the options cordon's launcher relies on.
func probeBwrap(ctx context.Context, named string, timeout time.Duration) bwrapFacts {
	var f bwrapFacts
	var path string
	var err error
	if named == "" {
		// The one cordon would run (a trusted one).
		path, err = bwrap.Find()
	} else {
		path, err = exec.LookPath(named)
	}
	if err != nil {
		f.LookErr = err
		return f
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	f.Path = path
	if st, err := os.Stat(path); err == nil {
		f.Setuid = st.Mode()&os.ModeSetuid != 0 && ownerIsRoot(st)
	}

	if out, err := runBounded(ctx, timeout, path, "--version"); err == nil {
		f.Version = parseBwrapVersion(out)
	}

	// The system's true, never one found on PATH: a PATH directory a
	// sandbox could write (a virtualenv's bin) would make the smoke run
	// run the workload's program, in a sandbox that hides nothing.
	truePath := "/usr/bin/true"
	if _, err := os.Stat(truePath); err != nil {
		truePath = "/bin/true"
	}
	_, f.SmokeErr = runBounded(ctx, timeout, path,
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
		"--unshare-pid", "--die-with-parent", truePath)
	return f
}

func ownerIsRoot(st os.FileInfo) bool {
	sys, ok := st.Sys().(*unix.Stat_t)
	if !ok {
		return false
	}
	return sys.Uid == 0
}

// runBounded runs a command with a timeout and returns its standard output;
// a failure carries the command's standard error.
func runBounded(ctx context.Context, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	// bubblewrap runs on the host: nothing of the user's environment (an
	// empty LD_LIBRARY_PATH entry is the working directory, where a
	// workload could have left a library it loads), from /.
	cmd.Env, cmd.Dir = []string{}, "/"
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 100 * time.Millisecond
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "", fmt.Errorf("%s: %w after %v", filepath.Base(name), errProbeTimeout, timeout)
	}
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", fmt.Errorf("%w: %s", err, msg)
		}
		return "", err
	}
	return stdout.String(), nil
}

// probeCgroup looks at the cgroup2 mount and whether our cgroup is ours to
// manage (cordon can create child cgroups and move processes into them).
func probeCgroup() cgroupFacts {
	const mount = "/sys/fs/cgroup"
	var st unix.Statfs_t
	if err := unix.Statfs(mount, &st); err != nil {
		return cgroupFacts{Err: os.NewSyscallError("statfs("+mount+")", err)}
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		var u unix.Statfs_t
		hybrid := unix.Statfs(filepath.Join(mount, "unified"), &u) == nil && u.Type == unix.CGROUP2_SUPER_MAGIC
		return cgroupFacts{Hybrid: hybrid}
	}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return cgroupFacts{V2: true, Err: fmt.Errorf("reading our cgroup: %w", err)}
	}
	p, ok := cgroupV2Path(string(data))
	if !ok {
		return cgroupFacts{V2: true, Err: errors.New("no cgroup v2 entry in /proc/self/cgroup")}
	}
	dir := filepath.Join(mount, p)
	// access(2) also answers EROFS for a read-only mount, as containers have.
	writable := unix.Access(dir, unix.W_OK) == nil &&
		unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK) == nil
	return cgroupFacts{V2: true, Path: p, Writable: writable}
}
