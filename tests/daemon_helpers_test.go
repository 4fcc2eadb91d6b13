package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	seccomp "github.com/seccomp/libseccomp-golang"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// seccompExecEnv makes the test binary install a seccomp filter and exec
// the rest of its arguments (see init): how a test runs cordon in an
// environment where kill(2) answers EPERM, flock(2) ENOLCK or
// socket(AF_UNIX) EPERM, as in some sandboxes. The filter is inherited by
// everything the command starts, the daemon included.
const seccompExecEnv = "CORDON_TEST_SECCOMP_EXEC"

// init runs before TestMain: a re-exec'd helper never reaches the tests.
func init() {
	rules, ok := os.LookupEnv(seccompExecEnv)
	if !ok {
		return
	}
	os.Unsetenv(seccompExecEnv)
	if err := seccompExec(rules, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "seccomp helper:", err)
		os.Exit(99)
	}
}

// seccompExec installs rules ("kill=EPERM,flock=ENOLCK,socket-unix=EPERM")
// and execs argv. The filter is loaded on all threads (TSYNC) from a locked
// thread, which then execs.
func seccompExec(rules string, argv []string) error {
	runtime.LockOSThread()
	f, err := seccomp.NewFilter(seccomp.ActAllow)
	if err != nil {
		return err
	}
	for _, r := range strings.Split(rules, ",") {
		name, errno, _ := strings.Cut(r, "=")
		var e syscall.Errno
		switch errno {
		case "EPERM":
			e = unix.EPERM
		case "ENOLCK":
			e = unix.ENOLCK
		default:
			return fmt.Errorf("unknown errno %q", errno)
		}
		act := seccomp.ActErrno.SetReturnCode(int16(e))
		var conds []seccomp.ScmpCondition
		if name == "socket-unix" {
			name = "socket"
			conds = []seccomp.ScmpCondition{{Argument: 0, Op: seccomp.CompareEqual, Operand1: unix.AF_UNIX}}
		}
		sc, err := seccomp.GetSyscallFromName(name)
		if err != nil {
			return err
		}
		if conds != nil {
			err = f.AddRuleConditional(sc, act, conds)
		} else {
			err = f.AddRule(sc, act)
		}
		if err != nil {
			return fmt.Errorf("rule %s: %w", r, err)
		}
	}
	if err := f.Load(); err != nil {
		return err
	}
	return syscall.Exec(argv[0], argv, os.Environ())
}

// daemonEnv is a private daemon location (XDG_RUNTIME_DIR) for one test,
// with the daemon stopped and checked for leftovers at the end.
type daemonEnv struct {
	t   *testing.T
	xdg string // XDG_RUNTIME_DIR
	dir string // the daemon's directory
	env []string
}

func newDaemonEnv(t *testing.T) *daemonEnv {
	t.Helper()
	requireSeccompNotify(t)
	// Not under /tmp, which every sandbox replaces with its own (the
	// daemon's directory would be out of sight for that reason alone), and
	// a short path: sun_path has 108 bytes.
	base := ""
	if fi, err := os.Stat("/var/tmp"); err == nil && fi.IsDir() {
		base = "/var/tmp"
	}
	xdg, err := os.MkdirTemp(base, "cdt")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(xdg, 0o700))
	d := &daemonEnv{t: t, xdg: xdg, dir: filepath.Join(xdg, "cordon")}
	d.env = []string{"XDG_RUNTIME_DIR=" + xdg, "CORDON_HOST=", "CORDON_TOKEN="}
	t.Cleanup(func() {
		d.stop()
		os.RemoveAll(xdg)
		requireNoLeftovers(t)
	})
	return d
}

// cordon runs the binary with this location.
func (d *daemonEnv) cordon(args ...string) result {
	d.t.Helper()
	return runCordon(d.t, runOpts{env: d.env, timeout: 60 * time.Second}, args...)
}

func (d *daemonEnv) cordonOpts(o runOpts, args ...string) result {
	d.t.Helper()
	o.env = append(append([]string{}, d.env...), o.env...)
	if o.timeout == 0 {
		o.timeout = 60 * time.Second
	}
	return runCordon(d.t, o, args...)
}

// underSeccomp runs cordon under a seccomp filter (see seccompExec).
func (d *daemonEnv) underSeccomp(rules string, args ...string) result {
	d.t.Helper()
	self, err := os.Executable()
	require.NoError(d.t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, append([]string{cordonBin}, args...)...)
	cmd.Env = append(append(os.Environ(), raceEnv, seccompExecEnv+"="+rules), d.env...)
	cmd.Dir = d.t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else {
		require.NoError(d.t, err)
	}
	require.NotEqual(d.t, 99, r.code, "the seccomp helper failed: %s", r.stderr)
	return r
}

// discovery is daemon.json as the tests read it.
type discovery struct {
	Pid        int    `json:"pid"`
	InstanceID string `json:"instance_id"`
	Socket     string `json:"socket"`
	Port       int    `json:"port"`
	Addr       string `json:"addr"`
	Token      string `json:"token"`
}

func (d *daemonEnv) discovery() discovery {
	d.t.Helper()
	b, err := os.ReadFile(filepath.Join(d.dir, "daemon.json"))
	require.NoError(d.t, err)
	var disc discovery
	require.NoError(d.t, json.Unmarshal(b, &disc))
	return disc
}

// start starts the daemon and returns its discovery.
func (d *daemonEnv) start(args ...string) discovery {
	d.t.Helper()
	r := d.cordon(append([]string{"daemon", "start"}, args...)...)
	require.Equal(d.t, 0, r.code, "daemon start: %s%s", r.stdout, r.stderr)
	return d.discovery()
}

// stop ends the daemon if one runs here: SIGTERM, then SIGKILL.
func (d *daemonEnv) stop() {
	for _, pid := range d.daemonPids() {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		if !waitGone(pid, 15*time.Second) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			waitGone(pid, 5*time.Second)
		}
	}
}

// daemonPids lists the "cordon serve" processes whose XDG_RUNTIME_DIR is
// this test's.
func (d *daemonEnv) daemonPids() []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if !bytes.HasPrefix(cmdline, []byte(cordonBin+"\x00serve")) {
			continue
		}
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if strings.Contains(string(stat), ") Z ") {
			continue
		}
		environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		for _, kv := range bytes.Split(environ, []byte{0}) {
			if string(kv) == "XDG_RUNTIME_DIR="+d.xdg {
				out = append(out, pid)
			}
		}
	}
	return out
}

// waitGone waits until pid is gone (or a zombie someone else must reap).
func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(stat), ") Z ") {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// curl runs curl against the daemon (Unix socket, or TCP with the given
// extra arguments) and returns the body and the status.
func (d *daemonEnv) curl(disc discovery, args ...string) (string, int) {
	d.t.Helper()
	base := []string{"-sS", "--max-time", "30", "-w", "\n%{http_code}"}
	url := "http://localhost"
	if disc.Socket != "" {
		base = append(base, "--unix-socket", disc.Socket)
	} else {
		url = "http://" + disc.Addr
	}
	// The last argument is the path.
	path := args[len(args)-1]
	all := append(append(base, args[:len(args)-1]...), url+path)
	out, err := exec.Command(requireTool(d.t, "curl"), all...).Output()
	require.NoError(d.t, err, "curl %q", all)
	s := strings.TrimRight(string(out), "\n")
	i := strings.LastIndexByte(s, '\n')
	code, err := strconv.Atoi(s[i+1:])
	require.NoError(d.t, err, "curl output %q", s)
	return s[:max(i, 0)], code
}

// jsonOf decodes a JSON body.
func jsonOf(t *testing.T, body string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &m), "body %q", body)
	return m
}

// sleeping lists live "sleep" processes whose command line contains
// marker (not the shells or clients that mention it).
func sleeping(marker string) []int {
	var out []int
	for _, pid := range processesWith(marker) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if bytes.HasPrefix(b, []byte("sleep\x00")) {
			out = append(out, pid)
		}
	}
	return out
}

// processesWith lists live processes whose command line contains s.
func processesWith(s string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if strings.Contains(string(stat), ") Z ") {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			out = append(out, pid)
		}
	}
	return out
}

// eventually fails unless cond holds within d.
func eventually(t *testing.T, d time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: "+format, append([]any{d}, args...)...)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
