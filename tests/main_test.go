package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/require"
)

// cordonBin is the binary under test, built once by TestMain.
var cordonBin string

// raceEnv configures the race detector built into cordonBin: no 1 s sleep at
// exit, and a detected race fails the run with exit code 66.
const raceEnv = "GORACE=atexit_sleep_ms=0 halt_on_error=1 exitcode=66"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cordon-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cordonBin = filepath.Join(dir, "cordon")
	// Every run's trust store is the tests' own, never the user's; tests
	// that trust policy files give themselves a private one.
	if err := os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	// The Makefile's tags (TAGS): a static binary, as bin/cordon is.
	build := exec.Command("go", "build", "-race", "-tags", "netgo,osusergo", "-o", cordonBin, "../cmd/cordon")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building cordon:", err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// requireSeccompNotify skips unless the host has both capabilities cordon
// needs (testcap's gates) and the binary under test runs a command.
func requireSeccompNotify(t *testing.T) {
	t.Helper()
	testcap.RequireSeccompNotify(t)
	testcap.RequireBwrap(t)
	probe := exec.Command(cordonBin, "--", "/bin/true")
	probe.Env = append(os.Environ(), raceEnv)
	out, err := probe.CombinedOutput()
	if err != nil {
		testcap.SkipOrFail(t, "cordon cannot run on this host (seccomp notify/user namespaces): %v: %s", err, out)
	}
}

func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		testcap.SkipOrFail(t, "%s not installed", name)
	}
	return p
}

// result is one finished cordon run.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// runOpts tunes runCordon.
type runOpts struct {
	dir     string
	stdin   string
	env     []string
	timeout time.Duration
}

// cordon runs the binary with args in a fresh temporary working directory.
func cordon(t *testing.T, args ...string) result {
	t.Helper()
	return runCordon(t, runOpts{}, args...)
}

func runCordon(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	return runCordonVia(t, o, append([]string{cordonBin}, args...)...)
}

// tierEnv names the isolation tier every run of the suite gets unless it
// names one itself: CORDON_IT_ISOLATION=landlock go test ./tests -run TestAdv
// runs the exec adversarial suite in the landlock tier (make
// test-landlock).
const tierEnv = "CORDON_IT_ISOLATION"

// withTier inserts --isolation $CORDON_IT_ISOLATION into a run of cordon
// (the root shorthand or "run") that does not choose a tier.
func withTier(argv []string) []string {
	tier := os.Getenv(tierEnv)
	if tier == "" || len(argv) < 2 || argv[0] != cordonBin {
		return argv
	}
	at := 1
	if argv[1] == "run" {
		at = 2
	} else if !strings.HasPrefix(argv[1], "-") || argv[1] == "--version" || argv[1] == "--help" {
		return argv
	}
	for _, a := range argv[1:] {
		if a == "--" {
			break
		}
		if a == "--isolation" || strings.HasPrefix(a, "--isolation=") {
			return argv
		}
	}
	out := append([]string{}, argv[:at]...)
	out = append(out, "--isolation", tier)
	return append(out, argv[at:]...)
}

// runCordonVia runs argv (a wrapper that runs cordon, or cordon itself) as
// runCordon runs cordon.
func runCordonVia(t *testing.T, o runOpts, argv ...string) result {
	t.Helper()
	r, report := runCordonRaw(t, o, argv...)
	if report != "" {
		t.Fatalf("%q did not finish within %v\nstdout: %s\nstderr: %s\nwhere its processes waited:\n%s",
			argv, o.timeout, r.stdout, r.stderr, report)
	}
	return r
}

// runCordonRaw is runCordonVia without the verdict on a timeout: report is
// empty when the run finished in time, and otherwise says where every
// process of the run's tree waited when the time ran out (timeoutReport).
// Such a run is then sent SIGABRT, on which the Go runtime prints every
// goroutine to its stderr (cordon forwards SIGQUIT to its command instead),
// and SIGKILL runWaitDelay later.
func runCordonRaw(t *testing.T, o runOpts, argv ...string) (r result, report string) {
	t.Helper()
	argv = withTier(argv)
	if o.timeout == 0 {
		o.timeout = 30 * time.Second
	}
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = o.dir
	cmd.Env = append(append(os.Environ(), raceEnv), o.env...)
	cmd.Stdin = strings.NewReader(o.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Cancel = func() error {
		// Read before the signal changes anything; Wait returns only
		// after Cancel did, so report is safe to read then.
		report = timeoutReport(cmd.Process.Pid)
		p := cmd.Process
		time.AfterFunc(runWaitDelay, func() { _ = p.Kill() })
		return p.Signal(syscall.SIGABRT)
	}
	// Bounds the wait for the output pipes after cordon exits (a process
	// left holding them), which was unbounded.
	cmd.WaitDelay = o.timeout
	start := time.Now()
	err := cmd.Run()
	r = result{stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(start)}
	if ctx.Err() != nil {
		if report == "" {
			report = "(the run ended as its time ran out: nothing to report)"
		}
		return r, report
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		require.NoError(t, err)
	}
	return r, ""
}

// runWaitDelay is how long a run that timed out has to print its goroutines
// and exit after SIGABRT before it is killed.
const runWaitDelay = 10 * time.Second

// writeScript writes an executable shell script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	return p
}

// sandboxLeftovers lists live processes started from the binary under test
// or bubblewrap processes whose parent is gone, i.e. anything a run leaked.
func sandboxLeftovers(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if strings.Contains(string(stat), ") Z ") {
			continue // a zombie of some other test harness; not ours to reap
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.ReplaceAll(string(cmdline), "\x00", " ")
		// bwrap counts only when it runs our binary's init: other
		// sandboxes on the host (other test binaries) are not ours.
		if exe == cordonBin || (strings.HasSuffix(exe, "/bwrap") && strings.Contains(args, cordonBin)) {
			out = append(out, fmt.Sprintf("%d %s", pid, args))
		}
	}
	return out
}

// requireNoLeftovers fails when a sandbox process outlived its run. Leftovers
// get a short moment to finish dying after SIGKILL.
func requireNoLeftovers(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		left := sandboxLeftovers(t)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox processes left behind:\n%s", strings.Join(left, "\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// assertNoProcess fails when a live process's command line contains cmd.
func assertNoProcess(t *testing.T, cmd string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		found := ""
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil {
				continue
			}
			if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), cmd) {
				found = e.Name()
			}
		}
		if found == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %q (pid %s) is still running", cmd, found)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
