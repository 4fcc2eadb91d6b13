package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/supervisor"
	"golang.org/x/sys/unix"
)

// Isolation selects how the command is confined besides the exec policy.
type Isolation string

const (
	// IsolationBwrap runs the command in a bubblewrap sandbox.
	IsolationBwrap Isolation = "bwrap"
	// IsolationNone enforces the exec policy only: no namespaces, no
	// filesystem view. Reported loudly by the CLI.
	IsolationNone Isolation = "none"
)

// ParseIsolation parses the --isolation flag's value.
func ParseIsolation(s string) (Isolation, error) {
	switch Isolation(s) {
	case IsolationBwrap, IsolationNone:
		return Isolation(s), nil
	}
	return "", fmt.Errorf("unknown isolation %q (want bwrap or none)", s)
}

// teardownBound is the hard bound on cordon's exit after the command is done,
// even when the supervisor is wedged in the kernel.
const teardownBound = 2 * time.Second

// Options describes one run.
type Options struct {
	Argv []string
	// Env is the command's environment, less cordon's own variables
	// (WorkloadEnv).
	Env []string
	Dir string

	Policy *policy.Policy
	// Ask answers decisions of kind ask (deny wins when it is nil). It is
	// called from the supervisor's goroutine while the exec waits; the
	// terminal, when cordon has one, is cordon's own to prompt on (see
	// AskTerminal).
	Ask       func(*supervisor.Decision) bool
	Isolation Isolation
	// Verify selects race-free verification (supervisor.VerifyAuto when
	// empty).
	Verify supervisor.Verify
	RW, RO []string
	Net    bwrap.Net
	// Hide and HideFiles are hidden from the sandbox (bwrap.Spec).
	Hide, HideFiles []string

	Stdin, Stdout, Stderr *os.File
	// Audit, when set, receives one JSON line per exec decision.
	Audit io.Writer
	// Timeout ends the command with SIGTERM, then SIGKILL after KillGrace.
	Timeout, KillGrace time.Duration
	Logger             *slog.Logger

	// WedgeSupervisorAfter is passed to supervisor.Options.WedgeAfter
	// (tests of the teardown bound; hidden flag --debug-wedge-supervisor).
	WedgeSupervisorAfter int
	// DropSupervisorAfter is passed to supervisor.Options.DropAfter (tests
	// of fail-closed; hidden flag --debug-drop-supervisor).
	DropSupervisorAfter int
}

// Result is how the command ended.
type Result struct {
	// ExitCode follows the shell: the command's own code, or 128+N when it
	// was killed by signal N.
	ExitCode int
	// Signal is the signal that killed the command, or 0.
	Signal   syscall.Signal
	TimedOut bool
}

// Run runs o.Argv in a sandbox and waits for it.
func Run(ctx context.Context, o Options) (Result, error) {
	l := &launch{o: o, log: o.Logger}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	return l.run(ctx)
}

type launch struct {
	o   Options
	log *slog.Logger

	cmd      *exec.Cmd
	waited   chan struct{} // closed when cmd.Wait returned
	waitErr  error
	stderr   *relay
	sup      *supervisor.Supervisor
	initPgrp int
	term     *terminal

	mu         sync.Mutex
	denied     bool   // guarded by mu: the policy refused an exec
	lastDenial string // guarded by mu: pid and line of the last denial printed
}

func (l *launch) run(ctx context.Context) (Result, error) {
	start := time.Now()
	filter, err := supervisor.Filter()
	if err != nil {
		return Result{}, &SetupError{Err: err}
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return Result{}, &SetupError{Err: fmt.Errorf("finding cordon's own binary: %w", err)}
	}
	// Subscribe before anything starts: a signal that arrives while the
	// sandbox starts is kept and forwarded once the command exists.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwardedSignals...)
	defer signal.Stop(sigs)
	conn, err := l.start(exe)
	if err != nil {
		return Result{}, err
	}
	defer conn.close()
	fallback, err := supervisor.FallbackFilter()
	if err != nil {
		return Result{}, &SetupError{Err: err}
	}
	if err := conn.send(configMsg{
		Argv:     l.o.Argv,
		Env:      WorkloadEnv(l.o.Env),
		Dir:      l.o.Dir,
		Filter:   filter,
		Fallback: fallback,
		Reap:     l.o.Isolation == IsolationNone,
	}); err != nil {
		return Result{}, l.setupFailed(fmt.Errorf("sending configuration to the sandbox: %w", err))
	}
	var m initMsg
	fds, err := conn.recv(&m)
	if err != nil {
		return Result{}, l.setupFailed(errors.New("the sandbox exited before it was ready"))
	}
	switch m.Kind {
	case msgListener:
	case msgExecErr:
		l.teardown()
		return Result{}, &ExecError{Path: m.Path, Errno: syscall.Errno(m.Errno)}
	case msgSetupErr:
		closeAll(fds)
		return Result{}, l.setupFailed(errors.New(m.Message))
	default:
		closeAll(fds)
		return Result{}, l.setupFailed(fmt.Errorf("unexpected message %q from the sandbox", m.Kind))
	}
	wantFDs := 1
	if m.PtraceOnly {
		wantFDs = 0
	}
	if len(fds) != wantFDs || conn.pid <= 0 {
		closeAll(fds)
		return Result{}, l.setupFailed(fmt.Errorf("sandbox sent %d descriptors and pid %d, want %d and its pid", len(fds), conn.pid, wantFDs))
	}
	l.initPgrp = int(conn.pid)
	verify := l.o.Verify
	if l.o.Isolation == IsolationNone && (verify == "" || verify == supervisor.VerifyAuto) {
		// Without bubblewrap the command shares the host's mount namespace
		// and /proc, and keeps its capabilities: strict mode's proof
		// (read-only mounts nobody can change, no memory writers) does not
		// hold, so an exec that ptrace cannot verify is refused.
		verify = supervisor.VerifyPtrace
	}
	supOpts := supervisor.Options{
		OnDecision: l.onDecision,
		Ask:        l.o.Ask,
		Logger:     l.log,
		RootPid:    l.initPgrp,
		Verify:     verify,
		SearchPath: envValue(l.o.Env, "PATH"),
		WedgeAfter: l.o.WedgeSupervisorAfter,
		DropAfter:  l.o.DropSupervisorAfter,
	}
	if m.PtraceOnly {
		fmt.Fprintln(l.o.Stderr, "cordon: warning: a seccomp notify listener already exists above this sandbox "+
			"(nested cordon, another notify-based tool, or WSL2 mirrored networking): supervising with ptrace only; "+
			"a denied program is killed when it starts instead of failing with \"Operation not permitted\"")
		l.sup, err = supervisor.NewPtraceOnly(l.initPgrp, l.o.Policy, supOpts)
	} else {
		l.sup, err = supervisor.New(fds[0], l.o.Policy, supOpts)
	}
	if err != nil {
		closeAll(fds)
		return Result{}, l.setupFailed(fmt.Errorf("starting the supervisor: %w", err))
	}
	go func() {
		if err := l.sup.Run(); err != nil {
			l.log.Error("supervisor stopped", "err", err)
		}
	}()
	if l.term != nil {
		if err := l.term.giveTo(l.initPgrp); err != nil {
			l.log.Debug("handing the terminal to the sandbox", "err", err)
		}
	}
	if err := conn.send(initMsg{Kind: msgHostGo}); err != nil {
		return Result{}, l.setupFailed(fmt.Errorf("starting the command: %w", err))
	}
	l.stderr.passThrough()
	l.log.Debug("sandbox ready", "startup", time.Since(start), "init_pid", l.initPgrp, "verification", l.sup.VerifyMode())
	res, err := l.wait(ctx, conn, sigs)
	t0 := time.Now()
	l.teardown()
	l.log.Debug("teardown", "took", time.Since(t0))
	return res, err
}

// start launches bwrap (or the bare init) with the control socket as fd 3
// and the user's stderr as fd 4.
func (l *launch) start(exe string) (*frameConn, error) {
	var argv []string
	switch l.o.Isolation {
	case IsolationNone:
		argv = []string{exe, InitArg}
	default:
		var err error
		argv, err = sandboxArgv(exe, bwrap.Spec{Dir: l.o.Dir, RW: l.o.RW, RO: l.o.RO, Net: l.o.Net,
			Hide: l.o.Hide, HideFiles: l.o.HideFiles})
		if err != nil {
			return nil, err
		}
	}
	l.log.Debug("starting sandbox", "argv", bwrap.Describe(argv))
	conn, childEnd, err := newControlPair()
	if err != nil {
		return nil, err
	}
	defer childEnd.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		conn.close()
		return nil, &SetupError{Err: err}
	}
	l.stderr = newRelay(errR, l.o.Stderr)
	l.term = newTerminal(l.o.Stdin)

	l.cmd = &exec.Cmd{
		Path:       argv[0],
		Args:       argv,
		Env:        []string{}, // the command's environment travels over the control socket
		Dir:        l.o.Dir,
		Stdin:      l.o.Stdin,
		Stdout:     l.o.Stdout,
		Stderr:     errW,
		ExtraFiles: []*os.File{childEnd, l.o.Stderr},
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: unix.SIGKILL,
		},
	}
	l.waited = make(chan struct{})
	err = startLocked(l.cmd, func(err error) {
		l.waitErr = err
		close(l.waited)
	})
	errW.Close()
	if err != nil {
		conn.close()
		errR.Close()
		return nil, &SetupError{Err: fmt.Errorf("starting %s: %w", argv[0], err)}
	}
	return conn, nil
}

// setupFailed collects why the sandbox died before the handshake: it waits
// (briefly) for bwrap to exit and returns its stderr as the error's detail.
func (l *launch) setupFailed(cause error) error {
	select {
	case <-l.waited:
	case <-time.After(time.Second):
		l.killSandbox()
		<-l.waited
	}
	detail := l.stderr.captured()
	l.teardown()
	if l.waitErr != nil && detail != "" {
		return &SetupError{Err: fmt.Errorf("%w (%v)", cause, l.waitErr), Detail: detail}
	}
	return &SetupError{Err: cause, Detail: detail}
}

// wait runs until the command exits, relaying signals and job control.
// envValue returns the value of key in env, or "".
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if val, ok := strings.CutPrefix(kv, key+"="); ok {
			v = val
		}
	}
	return v
}

// forwardedSignals reach the command's process group. SIGINT, SIGTERM and
// SIGHUP escalate to SIGKILL of the whole sandbox the second time. SIGURG is
// never among them: the Go runtime uses it for preemption.
var forwardedSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT,
	unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH}

func (l *launch) wait(ctx context.Context, conn *frameConn, sigs <-chan os.Signal) (Result, error) {
	msgs := make(chan initMsg, 4)
	go func() {
		defer close(msgs)
		for {
			var m initMsg
			if _, err := conn.recv(&m); err != nil {
				return
			}
			msgs <- m
		}
	}()
	var timeout, grace <-chan time.Time
	if l.o.Timeout > 0 {
		t := time.NewTimer(l.o.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var res Result
	forwarded := false
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				// The init is gone without reporting: the sandbox was
				// killed. bwrap's own status is all there is.
				<-l.waited
				return l.resultFromBwrap(res), nil
			}
			switch m.Kind {
			case msgStarted:
			case msgStopped:
				if l.term != nil {
					l.term.suspend(l.initPgrp)
				}
			case msgExecErr:
				l.mu.Lock()
				denied := l.denied && m.Errno == int(unix.EPERM)
				l.mu.Unlock()
				return res, &ExecError{Path: m.Path, Errno: syscall.Errno(m.Errno), Denied: denied}
			case msgExited:
				ws := unix.WaitStatus(m.Status)
				if ws.Signaled() {
					res.Signal = ws.Signal()
					res.ExitCode = 128 + int(ws.Signal())
				} else {
					res.ExitCode = ws.ExitStatus()
				}
				if res.TimedOut {
					res.ExitCode = 124
				}
				return res, nil
			}
		case sig := <-sigs:
			s := sig.(syscall.Signal)
			switch s {
			case unix.SIGINT, unix.SIGTERM, unix.SIGHUP:
				if forwarded {
					l.log.Debug("second signal: killing the sandbox", "signal", s)
					l.killSandbox()
					continue
				}
				forwarded = true
			}
			l.log.Debug("forwarding signal", "signal", s)
			_ = unix.Kill(-l.initPgrp, s)
		case <-timeout:
			res.TimedOut = true
			l.log.Debug("timeout: sending SIGTERM", "after", l.o.Timeout)
			_ = unix.Kill(-l.initPgrp, unix.SIGTERM)
			_ = unix.Kill(-l.initPgrp, unix.SIGCONT)
			g := time.NewTimer(l.o.KillGrace)
			defer g.Stop()
			grace = g.C
		case <-grace:
			l.log.Debug("grace expired: killing the sandbox")
			l.killSandbox()
		case <-ctx.Done():
			l.killSandbox()
		}
	}
}

// resultFromBwrap derives the result when the init could not report: the
// sandbox was killed as a whole.
func (l *launch) resultFromBwrap(res Result) Result {
	if st, ok := l.cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		switch {
		case st.Signaled():
			res.Signal = st.Signal()
			res.ExitCode = 128 + int(st.Signal())
		default:
			res.ExitCode = st.ExitStatus()
		}
	}
	if res.TimedOut {
		res.ExitCode = 124
	}
	return res
}

// killSandbox ends everything in the sandbox at once. With bubblewrap,
// SIGKILL to its process group kills the pid namespace's init, and the
// kernel kills every task in the namespace. Without it, the command's group
// is all that can be named.
func (l *launch) killSandbox() {
	if l.cmd != nil && l.cmd.Process != nil {
		_ = unix.Kill(-l.cmd.Process.Pid, unix.SIGKILL)
	}
	if l.initPgrp > 0 {
		_ = unix.Kill(-l.initPgrp, unix.SIGKILL)
	}
}

// teardown ends the sandbox and the supervisor within teardownBound, then
// gives the terminal back. It is safe to call more than once.
func (l *launch) teardown() {
	deadline := time.NewTimer(teardownBound)
	defer deadline.Stop()
	if l.o.Isolation == IsolationNone {
		// The init kills and reaps the command's leftovers itself; killing
		// it first would orphan them.
		select {
		case <-l.waited:
		case <-time.After(teardownBound / 2):
		}
	}
	l.killSandbox()
	select {
	case <-l.waited:
	case <-deadline.C:
		l.log.Error("sandbox did not exit in time", "bound", teardownBound)
	}
	if l.sup != nil {
		l.sup.Shutdown()
		select {
		case <-l.sup.Done():
			_ = l.sup.Close()
		case <-deadline.C:
			l.log.Error("supervisor did not stop in time; leaving it", "bound", teardownBound)
		}
	}
	if l.term != nil {
		l.term.takeBack()
		l.term = nil
	}
	l.stderr.wait(100 * time.Millisecond)
}

func (l *launch) onDecision(d *supervisor.Decision) {
	if d.Denied() {
		line := d.DenialLine()
		key := fmt.Sprint(d.Pid, " ", line)
		l.mu.Lock()
		l.denied = true
		// Shells such as dash retry every PATH entry after EPERM; the same
		// process asking for the same argv again says nothing new.
		dup := key == l.lastDenial
		l.lastDenial = key
		l.mu.Unlock()
		if !dup {
			fmt.Fprintln(l.o.Stderr, line)
		}
	}
	if l.o.Audit != nil {
		writeAudit(l.o.Audit, d)
	}
	if !l.log.Enabled(context.Background(), slog.LevelDebug) {
		return // formatting argv costs more than the rest of this callback
	}
	l.log.Debug("exec", "pid", d.Pid, "argv", supervisor.FormatArgv(d.Exec.Argv),
		"path", d.Exec.Path, "resolved", d.Exec.Resolved, "decision", d.Result.Decision.String(),
		"rule", d.Result.RuleText(), "errno", d.Errno, "latency", d.Latency)
}

// relay copies bwrap's own stderr to the user. Until the sandbox is ready it
// keeps what bwrap says, so a setup failure can be reported in one message.
type relay struct {
	r    *os.File
	to   *os.File
	done chan struct{}

	mu      sync.Mutex
	buf     bytes.Buffer // guarded by mu
	through bool         // guarded by mu
}

func newRelay(r, to *os.File) *relay {
	rl := &relay{r: r, to: to, done: make(chan struct{})}
	go func() {
		defer close(rl.done)
		defer r.Close()
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			if n > 0 {
				rl.mu.Lock()
				if rl.through {
					_, _ = rl.to.Write(b[:n])
				} else if rl.buf.Len() < 64<<10 {
					rl.buf.Write(b[:n])
				}
				rl.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	return rl
}

// captured returns what was kept, after the writer side closed (bounded).
func (rl *relay) captured() string {
	rl.wait(500 * time.Millisecond)
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.buf.String()
}

func (rl *relay) passThrough() {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.through = true
	if rl.buf.Len() > 0 {
		_, _ = rl.to.Write(rl.buf.Bytes())
		rl.buf.Reset()
	}
}

func (rl *relay) wait(d time.Duration) {
	if rl == nil {
		return
	}
	select {
	case <-rl.done:
	case <-time.After(d):
	}
}
