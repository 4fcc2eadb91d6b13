package runner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/internal/exitcode"
	"github.com/cordon-sandbox/cordon/internal/pathsearch"
	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/netproxy"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/supervisor"
	"golang.org/x/sys/unix"
)

// Isolation selects how the command is confined besides the exec policy.
type Isolation string

const (
	// IsolationBwrap runs the command in a bubblewrap sandbox.
	IsolationBwrap Isolation = "bwrap"
	// IsolationLandlock runs the init without bubblewrap, under a
	// Landlock ruleset it applies to itself: writes only where the bwrap
	// tier allows them (landlock_linux.go).
	IsolationLandlock Isolation = "landlock"
	// IsolationNone enforces the exec policy only: no namespaces, no
	// filesystem view. Reported loudly by the CLI.
	IsolationNone Isolation = "none"
	// IsolationAuto (the default; an empty startSpec.isolation too) picks bwrap when
	// bubblewrap works here, else landlock, else refuses; stepping down
	// is said once (isolation.Choice.Note).
	IsolationAuto Isolation = "auto"
)

// ParseIsolation parses the --isolation flag's value.
func ParseIsolation(s string) (Isolation, error) {
	switch Isolation(s) {
	case IsolationBwrap, IsolationLandlock, IsolationNone, IsolationAuto:
		return Isolation(s), nil
	}
	return "", fmt.Errorf("unknown isolation %q (want auto, bwrap, landlock or none)", s)
}

// teardownBound is the hard bound on cordon's exit after the command is done,
// even when the supervisor is wedged in the kernel.
const teardownBound = 2 * time.Second

// Options describes one run.
type Options struct {
	Argv []string
	// Env is the command's environment, less cordon's own variables
	// (WorkloadEnv) and what Policy's env scrub removes.
	Env []string
	Dir string

	Policy *policy.Policy
	// Ask answers decisions of kind ask (deny wins when it is nil). It is
	// called from the supervisor's goroutine while the exec waits; the
	// terminal, when cordon has one, is cordon's own to prompt on (see
	// AskTerminal).
	Ask func(*supervisor.Verdict) bool
	// AskNet answers network decisions of kind ask (nil: deny).
	AskNet    func(*netproxy.Record) bool
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
	// AdoptOrphans makes this process a child subreaper for the run in
	// the bare tiers, so that what the command detached outlives neither
	// a dead init nor the run (killAdopted). Process-wide: for cordon's
	// CLI, not for a library process that runs other children.
	AdoptOrphans bool

	// WedgeSupervisorAfter is passed to supervisor.Options.WedgeAfter
	// (tests of the teardown bound; hidden flag --debug-wedge-supervisor).
	WedgeSupervisorAfter int
	// DropSupervisorAfter is passed to supervisor.Options.DropAfter (tests
	// of fail-closed; hidden flag --debug-drop-supervisor).
	DropSupervisorAfter int
}

// Result is how the command ended.
type Result struct {
	// ExitCode follows the shell (exitcode.FromWaitStatus): the command's
	// own code, 128+N when it was killed by signal N, 124 when the timeout
	// fired.
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
	o    Options
	log  *slog.Logger
	sb   *Sandbox
	term *terminal

	// repeats keeps a shell's PATH search from printing one denial line
	// per PATH entry.
	repeats pathsearch.Repeats

	// auditMu keeps network records (from the proxy's goroutines) whole.
	auditMu sync.Mutex

	mu     sync.Mutex
	denied bool // guarded by mu: the policy refused an exec
}

// run starts the sandbox through the one start path (startSandbox), then
// does what only a one-shot run does: the terminal's foreground, "go" to
// the init, the signal ladder and the command's exit status.
func (l *launch) run(ctx context.Context) (Result, error) {
	// Subscribed before bubblewrap starts (startSpec.beforeStart): a
	// signal that arrives while the sandbox starts is kept and forwarded
	// once the command exists. The runtime's first signal.Notify costs
	// 0.3-0.5 ms of thread hand-offs, spent while the sandbox's layout is
	// worked out; a signal before that ends cordon before any process of
	// the sandbox exists.
	// The signals that end a run have a channel of their own: nothing
	// reads these until the sandbox has started, and signal.Notify drops
	// what a full channel cannot take, so a burst of others (a terminal
	// resized over and over) pushed a SIGTERM out (a red team's).
	ends := make(chan os.Signal, 4)
	sigs := make(chan os.Signal, 16)
	subscribed := make(chan struct{})
	go func() {
		signal.Notify(ends, endingSignals...)
		signal.Notify(sigs, otherForwardedSignals...)
		close(subscribed)
	}()
	defer func() {
		<-subscribed
		signal.Stop(ends)
		signal.Stop(sigs)
	}()
	l.term = newTerminal(l.o.Stdin)
	defer func() {
		if l.term != nil {
			l.term.takeBack()
		}
	}()
	sb, err := startSandbox(ctx, startSpec{
		isolation: l.o.Isolation,
		box: bwrap.Spec{Dir: l.o.Dir, RW: l.o.RW, RO: l.o.RO, Net: l.o.Net,
			Hide: l.o.Hide, HideFiles: l.o.HideFiles},
		config: configMsg{
			Argv: l.o.Argv,
			Env:  scrubEnv(l.o.Env, l.o.Policy, l.log),
			Dir:  l.o.Dir,
		},
		fallback: true,
		stdin:    l.o.Stdin, stdout: l.o.Stdout, stderr: l.o.Stderr,
		pgrp:   true,
		policy: l.o.Policy,
		sup: supervisor.Options{
			OnDecision:     l.onDecision,
			Ask:            l.o.Ask,
			Verify:         l.o.Verify,
			SearchPath:     envValue(l.o.Env, "PATH"),
			WedgeAfter:     l.o.WedgeSupervisorAfter,
			DropAfter:      l.o.DropSupervisorAfter,
			OnCreateDenied: l.onCreateDenied,
		},
		log:         l.log,
		beforeStart: func() { <-subscribed },
		onNet:       l.onNet,
		askNet:      l.o.AskNet,
		home:        envValue(l.o.Env, "HOME"),
		onFile:      l.onFile,
	})
	if err != nil {
		return Result{}, err
	}
	if sb.bare && l.o.AdoptOrphans {
		// Without a pid namespace, a process that leaves the init's tree
		// (the init died) would re-parent to the host's init and outlive
		// the run: cordon adopts such orphans and kills them at the end
		// (killAdopted). Set before "go": no command runs yet.
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			l.log.Debug("prctl(PR_SET_CHILD_SUBREAPER)", "err", err)
		} else {
			defer func() {
				killAdopted(sb.cmd.Process.Pid, l.log)
				_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
			}()
		}
	}
	l.sb = sb
	if l.term != nil {
		if err := l.term.giveTo(sb.initPid); err != nil {
			l.log.Debug("handing the terminal to the sandbox", "err", err)
		}
	}
	if err := sb.conn.send(initMsg{Kind: msgHostGo}); err != nil {
		return Result{}, sb.startFailed(ctx, fmt.Errorf("starting the command: %w", err))
	}
	sb.stderr.pass()
	msgs := make(chan initMsg, 4)
	sb.serve(func() {
		defer close(msgs)
		for {
			var m initMsg
			if _, err := sb.conn.recv(&m); err != nil {
				return
			}
			msgs <- m
		}
	})
	res, err := l.wait(ctx, msgs, ends, sigs)
	t0 := time.Now()
	_ = sb.Close()
	l.log.Debug("teardown", "took", time.Since(t0))
	return res, err
}

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

// endingSignals and otherForwardedSignals reach the command's process
// group. The ending ones escalate to SIGKILL of the whole sandbox the
// second time. SIGURG is never among them: the Go runtime uses it for
// preemption.
var (
	endingSignals         = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP}
	otherForwardedSignals = []os.Signal{unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH}
)

// wait runs until the command exits, relaying signals and job control.
func (l *launch) wait(ctx context.Context, msgs <-chan initMsg, ends, sigs <-chan os.Signal) (Result, error) {
	initPgrp := l.sb.initPid
	var timeout, grace <-chan time.Time
	if l.o.Timeout > 0 {
		t := time.NewTimer(l.o.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var res Result
	forwarded := false
	// Signals that arrive before the init says the command exists are
	// held: sent to the init's group then, they would reach the init
	// alone, which survives them, and the command would run on as if
	// nothing had been sent (a red team's: a SIGTERM in cordon's first
	// milliseconds was lost about half the time).
	started := false
	var held []syscall.Signal
	// forward sends s to the command's group, or holds it until the
	// command exists.
	forward := func(s syscall.Signal) {
		if !started {
			held = append(held, s)
			return
		}
		l.log.Debug("forwarding signal", "signal", s)
		_ = unix.Kill(-initPgrp, s)
	}
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				// The init is gone without reporting: the sandbox was
				// killed. bwrap's own status is all there is.
				<-l.sb.waited
				return l.resultFromBwrap(res), nil
			}
			switch m.Kind {
			case msgStarted:
				started = true
				for _, s := range held {
					forward(s)
				}
				held = nil
			case msgStopped:
				if l.term != nil {
					l.term.suspend(initPgrp)
				}
			case msgExecErr:
				l.mu.Lock()
				denied := l.denied && m.Errno == int(unix.EPERM)
				l.mu.Unlock()
				return res, &ExecError{Path: m.Path, Errno: syscall.Errno(m.Errno), Denied: denied}
			case msgExited:
				return res.ended(unix.WaitStatus(m.Status)), nil
			}
		case sig := <-ends:
			s := sig.(syscall.Signal)
			if forwarded {
				l.log.Debug("second signal: killing the sandbox", "signal", s)
				l.sb.kill()
				continue
			}
			forwarded = true
			forward(s)
		case sig := <-sigs:
			forward(sig.(syscall.Signal))
		case <-timeout:
			res.TimedOut = true
			l.log.Debug("timeout: sending SIGTERM", "after", l.o.Timeout)
			// Held, like any signal, when the command does not exist
			// yet (a timeout shorter than the start): the init alone
			// would get it (a red team's).
			forward(unix.SIGTERM)
			forward(unix.SIGCONT)
			g := time.NewTimer(l.o.KillGrace)
			defer g.Stop()
			grace = g.C
		case <-grace:
			l.log.Debug("grace expired: killing the sandbox")
			l.sb.kill()
		case <-ctx.Done():
			l.sb.kill()
		}
	}
}

// resultFromBwrap derives the result when the init could not report: the
// sandbox was killed as a whole.
func (l *launch) resultFromBwrap(res Result) Result {
	st, _ := l.sb.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return res.ended(unix.WaitStatus(st))
}

// ended completes res with how the command ended: its code and signal
// (exitcode.FromWaitStatus), or the timeout's code when the timeout fired.
func (res Result) ended(ws unix.WaitStatus) Result {
	res.ExitCode, res.Signal = exitcode.FromWaitStatus(ws)
	if res.TimedOut {
		res.ExitCode = exitcode.TimedOut
	}
	return res
}

// onCreateDenied reports a creation of a protected name the supervisor
// refused.
func (l *launch) onCreateDenied(v *supervisor.CreateVerdict) {
	fmt.Fprintln(l.o.Stderr, v.DenialLine())
	if l.o.Audit != nil {
		writeFileAudit(l.o.Audit, fileRecord{Time: v.Time, Action: "deny-create", Path: v.Path, Target: v.Target,
			Rule: "deny_write " + strconv.Quote(v.Name), RuleID: "deny_write", Pid: v.Pid, Syscall: v.Syscall, Errno: int(unix.EACCES)})
	}
	l.log.Debug("creation refused", "pid", v.Pid, "syscall", v.Syscall, "path", v.Path, "target", v.Target, "name", v.Name)
}

// onFile records what the files policy did at start in the audit log.
func (l *launch) onFile(ev FileEvent) {
	if l.o.Audit != nil {
		writeFileAudit(l.o.Audit, fileRecord{Time: time.Now(), Action: ev.Action, Path: ev.Path, Rule: ev.Rule, RuleID: ev.RuleID})
	}
}

func (l *launch) onDecision(d *supervisor.Verdict) {
	if d.Refused() {
		l.mu.Lock()
		l.denied = true
		l.mu.Unlock()
		if !l.repeats.Repeated(d.Pid, "deny", d.Exec.Argv) {
			fmt.Fprintln(l.o.Stderr, d.DenialLine())
		}
	}
	if l.o.Audit != nil {
		l.auditMu.Lock()
		writeAudit(l.o.Audit, d)
		l.auditMu.Unlock()
	}
	if !l.log.Enabled(context.Background(), slog.LevelDebug) {
		return // formatting argv costs more than the rest of this callback
	}
	l.log.Debug("exec", "pid", d.Pid, "argv", supervisor.FormatArgv(d.Exec.Argv),
		"path", d.Exec.Path, "resolved", d.Exec.Resolved, "decision", d.Result.Decision.String(),
		"rule", d.Result.RuleText(), "errno", d.Errno, "latency", d.Latency)
}

// onNet reports a network decision: a refused connection gets a denial
// line, every one an audit line.
func (l *launch) onNet(r *netproxy.Record) {
	if r.Refused() {
		fmt.Fprintln(l.o.Stderr, NetDenialLine(r))
	}
	if l.o.Audit != nil {
		l.auditMu.Lock()
		writeNetAudit(l.o.Audit, r)
		l.auditMu.Unlock()
	}
	l.log.Debug("net", "proto", r.Proto, "host", r.Host, "port", r.Port, "addr", r.Addr,
		"decision", r.Decision.String(), "rule", r.RuleText(), "pid", r.Owner.Pid,
		"up", r.BytesUp, "down", r.BytesDown, "duration", r.Duration)
}

// killAdopted kills and reaps the processes cordon adopted as a subreaper
// (bare tiers: the command's orphans whose init died), once the sandbox is
// closed: their whole trees (proc.KillDescendants). initPid, which cordon
// started and waited for, is not touched.
func killAdopted(initPid int, log *slog.Logger) {
	if err := proc.KillDescendants(func(pid int) bool { return pid == initPid }, teardownBound); err != nil {
		log.Error("ending the processes the sandbox left behind", "err", err)
	}
}
