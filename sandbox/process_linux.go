package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/internal/exitcode"
	"github.com/cordon-sandbox/cordon/internal/pathsearch"
	"github.com/cordon-sandbox/cordon/runner"
	"golang.org/x/sys/unix"
)

const (
	// killBound bounds the SIGKILL phase of a tree kill: walks repeat until
	// the tree is empty or this much time has passed.
	killBound = 5 * time.Second
	// killPoll is the pause between two SIGKILL walks.
	killPoll = 10 * time.Millisecond
	// snapshotMax bounds a carry snapshot.
	snapshotMax = 4 << 20
)

// Process is a process started in a session (Start), or the command of an
// Exec. Its id is random. All its methods are safe for concurrent use.
type Process struct {
	id        string
	sess      *Session
	listed    bool     // started with Start: listed, has events, retained after exit
	run       []string // the argv that runs (sh -c ... for a script)
	argv      []string // the request's argv (Info)
	script    string
	dir       string
	stdinMode StdinMode
	startedAt time.Time

	log       *eventLog     // Start's events; nil for Exec's
	output    *outputStream // Exec's streamed output (ExecRequest.Output), or nil
	stdout    *outputBuffer // Exec's output; nil for Start's
	stderr    *outputBuffer
	snapshot  *outputBuffer // carry snapshot, when asked for
	pipes     []*os.File    // read ends of the output pipes
	readers   sync.WaitGroup
	drained   chan struct{} // closed when every output pipe hit EOF (or the snapshot its end)
	startedCh chan struct{} // closed when the leader exists, or never will
	exitedCh  chan struct{} // closed once Exit is recorded
	goneCh    chan struct{} // closed when the tree is empty

	startOnce, finishOnce, goneOnce, pipesOnce sync.Once
	// repeats keeps a shell's PATH search to one decision per run.
	repeats pathsearch.Repeats

	mu            sync.Mutex
	state         ProcessState   // guarded by mu
	leader, shim  *pidFD         // guarded by mu: set when the leader exists
	shimHost      int            // guarded by mu: the shim's pid on the host
	leaderHost    int            // guarded by mu
	leaderDone    bool           // guarded by mu: the leader's exit was reported
	execErr       *execFailure   // guarded by mu
	exit          *ExitInfo      // guarded by mu
	timedOut      bool           // guarded by mu
	killRequested bool           // guarded by mu
	kill          *killOp        // guarded by mu: the one escalation, shared by every caller
	stdin         *os.File       // guarded by mu: the write end of a stdin pipe
	decisions     []ExecDecision // guarded by mu: Exec's
	untracked     bool           // guarded by mu: the shim was killed before the leader exited
	timer         *time.Timer    // guarded by mu
}

type execFailure struct {
	op    string
	errno syscall.Errno
}

type killOp struct{ done chan struct{} }

// killReason says who asked for a tree kill, for ExitInfo.
type killReason int

const (
	byUser    killReason = iota // Kill, Close: kill_requested
	byTimeout                   // timed_out
	byCleanup                   // Exec removing what its command left behind
)

// ID is the process's random id.
func (p *Process) ID() string { return p.id }

// Info describes the process.
func (p *Process) Info() ProcessInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	info := ProcessInfo{
		ID: p.id, Session: p.sess.id, Argv: p.argv, Script: p.script, Dir: p.dir,
		State: p.state, StartedAt: p.startedAt, Stdin: p.stdinMode,
	}
	if p.exit != nil {
		e := *p.exit
		info.Exit = &e
	}
	if p.log != nil {
		info.LastEvent = p.log.last()
	}
	return info
}

// Events yields the process's events after the cursor, as they come, and
// ends after the exit event (or with ctx's error). Events dropped from the
// retention buffer before they were read show up as one EventTruncated.
func (p *Process) Events(ctx context.Context, after uint64) iter.Seq2[Event, error] {
	if p.log == nil {
		return func(yield func(Event, error) bool) {
			yield(Event{}, invalid("process %s has no events", p.id))
		}
	}
	return p.log.iterate(ctx, after)
}

// Wait returns the exit once the leader has exited and its output is
// drained.
func (p *Process) Wait(ctx context.Context) (ExitInfo, error) {
	select {
	case <-p.exitedCh:
	case <-ctx.Done():
		return ExitInfo{}, ctx.Err()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return *p.exit, nil
}

// Signal sends sig to the leader (ScopeProcess) or to every live process
// of the tree (ScopeTree, the default). An invalid signal is refused
// before anything is sent; ErrExited says there was nobody to signal.
func (p *Process) Signal(ctx context.Context, sig syscall.Signal, scope Scope) error {
	if err := checkSignal(sig); err != nil {
		return err
	}
	if scope != "" && scope != ScopeTree && scope != ScopeProcess {
		return invalid("scope %q (want tree or process)", scope)
	}
	select {
	case <-p.startedCh:
	case <-ctx.Done():
		return ctx.Err()
	}
	if scope == ScopeProcess {
		p.mu.Lock()
		leader, done := p.leader, p.leaderDone
		p.mu.Unlock()
		if leader == nil || done {
			return ErrExited
		}
		if err := leader.signal(sig); err != nil {
			if errors.Is(err, unix.ESRCH) {
				return ErrExited
			}
			return os.NewSyscallError("pidfd_send_signal", err)
		}
		return nil
	}
	if signalMembers(p.members(), sig) == 0 {
		return ErrExited
	}
	return nil
}

// Kill ends the process's whole tree: SIGTERM and SIGCONT to every member,
// up to grace for the tree to be gone, then SIGKILL, walking the tree again
// until it is empty. Concurrent calls share one escalation (the first
// caller's grace) and all return the same exit. Killing a process whose
// leader has exited ends what it left behind and keeps the real exit.
func (p *Process) Kill(ctx context.Context, grace time.Duration) (ExitInfo, error) {
	op := p.requestKill(grace, byUser)
	select {
	case <-op.done:
	case <-ctx.Done():
		return ExitInfo{}, ctx.Err()
	}
	return p.Wait(ctx)
}

// Stdin returns the write end of the process's stdin pipe (StdinPipe);
// closing it gives the process EOF.
func (p *Process) Stdin() (io.WriteCloser, error) {
	if p.stdinMode != StdinPipe {
		return nil, ErrNoStdin
	}
	return stdinWriter{p}, nil
}

type stdinWriter struct{ p *Process }

func (w stdinWriter) Write(b []byte) (int, error) { return w.p.writeStdin(context.Background(), b) }
func (w stdinWriter) Close() error                { return w.p.closeStdin() }

func (p *Process) writeStdin(ctx context.Context, b []byte) (int, error) {
	if p.stdinMode != StdinPipe {
		return 0, ErrNoStdin
	}
	p.mu.Lock()
	f := p.stdin
	p.mu.Unlock()
	if f == nil {
		return 0, fmt.Errorf("stdin of %s: %w", p.id, os.ErrClosed)
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetWriteDeadline(time.Now()) })
	defer stop()
	n, err := f.Write(b)
	if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
		err = ctx.Err()
	}
	return n, err
}

func (p *Process) closeStdin() error {
	if p.stdinMode != StdinPipe {
		return ErrNoStdin
	}
	p.mu.Lock()
	f := p.stdin
	p.stdin = nil
	p.mu.Unlock()
	if f == nil {
		return nil
	}
	return f.Close()
}

// requestKill starts the tree kill, or joins the one under way.
func (p *Process) requestKill(grace time.Duration, why killReason) *killOp {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.leaderDone {
		switch why {
		case byUser:
			p.killRequested = true
		case byTimeout:
			p.timedOut = true
		}
	}
	if p.kill == nil {
		p.kill = &killOp{done: make(chan struct{})}
		go p.runKill(p.kill, grace)
	}
	return p.kill
}

func (p *Process) runKill(op *killOp, grace time.Duration) {
	defer close(op.done)
	<-p.startedCh
	select {
	case <-p.goneCh:
		return
	default:
	}
	if grace > 0 {
		signalMembers(p.members(), unix.SIGTERM, unix.SIGCONT)
		t := time.NewTimer(grace)
		select {
		case <-p.goneCh:
			t.Stop()
			return
		case <-t.C:
		}
	}
	deadline := time.Now().Add(killBound)
	for {
		signalMembers(p.members(), unix.SIGKILL)
		select {
		case <-p.goneCh:
			return
		case <-time.After(killPoll):
		}
		if time.Now().After(deadline) {
			p.sess.log.Error("process tree still alive after SIGKILL", "process", p.id, "bound", killBound)
			return
		}
	}
}

// members walks the tree from the shim; if the shim was killed (its tree
// went to the init), from the leader, as far as it still reaches.
func (p *Process) members() []member {
	p.mu.Lock()
	shim, shimHost, leader, leaderHost := p.shim, p.shimHost, p.leader, p.leaderHost
	p.mu.Unlock()
	if shim != nil && shim.alive() {
		return walkTree(shimHost, shim)
	}
	if leader == nil || !leader.alive() {
		return nil
	}
	fd, err := unix.PidfdOpen(leaderHost, 0)
	if err != nil {
		return nil
	}
	if !leader.alive() { // leaderHost may have been reused in between
		unix.Close(fd)
		return nil
	}
	return append([]member{{Pid: leaderHost, FD: fd}}, walkTree(leaderHost, leader)...)
}

// onChild handles the init's reports. It runs on the sandbox's reader
// goroutine and must not block.
func (p *Process) onChild(ev runner.ChildEvent) {
	switch ev.Kind {
	case runner.ChildStarted:
		leader, shim := newPidFD(ev.PidFD), newPidFD(ev.ShimPidFD)
		p.mu.Lock()
		p.leader, p.shim = leader, shim
		p.leaderHost, p.shimHost = leader.hostPid(), shim.hostPid()
		if p.state == ProcessStarting {
			p.state = ProcessRunning
		}
		p.mu.Unlock()
		p.sess.registerShim(p, ev.ShimPid)
		p.startOnce.Do(func() { close(p.startedCh) })
	case runner.ChildExecFailed:
		p.mu.Lock()
		p.execErr = &execFailure{op: ev.Op, errno: ev.Errno}
		p.mu.Unlock()
	case runner.ChildExited:
		at := time.Now()
		p.mu.Lock()
		p.leaderDone = true
		p.mu.Unlock()
		go p.finish(ev.Status, at, "")
	case runner.ChildGone:
		p.startOnce.Do(func() { close(p.startedCh) })
		p.sess.unregisterShim(p)
		p.mu.Lock()
		leaderDone, started, leader := p.leaderDone, p.leader != nil, p.leader
		untracked := started && !leaderDone && ev.Status.Signaled()
		p.untracked = untracked
		p.mu.Unlock()
		if !untracked {
			p.goneOnce.Do(func() { close(p.goneCh) })
		}
		switch {
		case leaderDone:
		case !started:
			// Never started (lookup or spawn failure): this is the end.
			p.mu.Lock()
			p.leaderDone = true
			p.mu.Unlock()
			go p.finish(0, time.Now(), "")
		case untracked:
			// The shim was killed (by the workload: same uid) before the
			// leader exited. Its tree now belongs to the init; the leader
			// and its own descendants stay reachable through the leader's
			// pidfd. The init reports the leader's exit when it reaps it;
			// the tree counts as gone once that exit is recorded.
			go p.awaitOrphanedLeader(leader)
		}
	}
}

func (p *Process) awaitOrphanedLeader(leader *pidFD) {
	for leader.alive() {
		select {
		case <-p.exitedCh:
			return
		case <-p.sess.done:
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	select {
	case <-p.exitedCh:
	case <-time.After(500 * time.Millisecond):
		p.finish(0, time.Now(), "exit status lost: the process's monitor was killed")
	}
}

// finish records the exit, once: it waits for the output to drain (EOF on
// every pipe, or the drain bound), stops reading, counts what the leader
// left behind and appends the exit event. lost, when set, says why the
// status is not the kernel's.
func (p *Process) finish(ws unix.WaitStatus, at time.Time, lost string) {
	p.finishOnce.Do(func() {
		t := time.NewTimer(p.sess.m.opts.DrainTimeout)
		select {
		case <-p.drained:
		case <-t.C:
		}
		t.Stop()
		p.closePipes()
		p.readers.Wait()
		orphans := signalMembers(p.members()) // no signal: counts them and closes their pidfds

		p.mu.Lock()
		info := ExitInfo{
			StartedAt:     p.startedAt,
			ExitedAt:      at,
			Duration:      Duration(at.Sub(p.startedAt)),
			TimedOut:      p.timedOut,
			KillRequested: p.killRequested,
			Orphans:       orphans,
		}
		if lost != "" {
			// The kernel's status is lost: SIGKILL is what the namespace's
			// end delivers.
			ws = unix.WaitStatus(unix.SIGKILL)
			info.Lost, info.Error = true, lost
		}
		if p.execErr != nil && lost == "" {
			info.ExitCode, info.Error, info.Denied = startFailure(p.execErr, p.dir, p.run)
		} else {
			code, sig := exitcode.FromWaitStatus(ws)
			info.ExitCode, info.Signal = code, int(sig)
		}
		p.exit = &info
		p.state = ProcessExited
		p.leaderDone = true
		stdin := p.stdin
		p.stdin = nil
		// The timer stays armed: a timeout also ends what the leader left
		// running.
		p.mu.Unlock()
		if stdin != nil {
			stdin.Close()
		}
		if p.log != nil {
			e := info
			p.log.append(Event{Kind: EventExit, Exit: &e, Time: at})
		}
		close(p.exitedCh)
		p.mu.Lock()
		untracked := p.untracked
		p.mu.Unlock()
		if untracked {
			p.goneOnce.Do(func() { close(p.goneCh) })
		}
		p.sess.finished(p)
	})
}

// startFailure describes a program that could not be started the way a
// shell does: 127 when it does not exist, 126 otherwise.
func startFailure(f *execFailure, dir string, argv []string) (code int, msg string, denied bool) {
	name := ""
	if len(argv) > 0 {
		name = argv[0]
	}
	switch {
	case f.op == "chdir":
		return 126, fmt.Sprintf("chdir %s: %v", dir, f.errno), false
	case f.op == "exec" && f.errno == unix.EPERM:
		return 126, name + ": denied by policy", true
	case f.errno == unix.ENOENT && f.op == "lookup":
		return 127, name + ": command not found", false
	case f.errno == unix.ENOENT:
		return 127, name + ": no such file or directory", false
	case f.op == "spawn":
		return 126, fmt.Sprintf("starting %s: %v", name, f.errno), false
	}
	return 126, fmt.Sprintf("%s: %v", name, f.errno), false
}

// closePipes stops reading output: a process the leader left behind that
// still holds the pipes gets EPIPE from then on.
func (p *Process) closePipes() {
	p.pipesOnce.Do(func() {
		for _, f := range p.pipes {
			f.Close()
		}
	})
}

// release drops what the record holds once it is forgotten.
func (p *Process) release() {
	p.mu.Lock()
	leader, shim, stdin := p.leader, p.shim, p.stdin
	p.stdin = nil
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
	if leader != nil {
		leader.close()
	}
	if shim != nil {
		shim.close()
	}
	if stdin != nil {
		stdin.Close()
	}
	p.closePipes()
}

// addDecision records d as the process's, once per run of a shell's PATH
// search.
func (p *Process) addDecision(d ExecDecision) {
	if p.repeats.Repeated(d.Pid, d.Decision, d.Argv) {
		return
	}
	if p.log != nil {
		dd := d
		p.log.append(Event{Kind: EventDecision, Decision: &dd, Time: d.Time})
	}
	if !p.listed {
		p.mu.Lock()
		p.decisions = append(p.decisions, d)
		p.mu.Unlock()
		p.output.decide(d)
	}
}

// readOutput copies one pipe to the process's events or buffers.
func (p *Process) readOutput(f *os.File, kind EventKind, done func()) {
	defer p.readers.Done()
	defer done()
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			switch {
			case p.log != nil:
				p.log.append(Event{Kind: kind, Data: bytes.Clone(buf[:n])})
			case kind == EventStdout:
				p.stdout.write(buf[:n])
				p.output.write(kind, buf[:n])
			default:
				p.stderr.write(buf[:n])
				p.output.write(kind, buf[:n])
			}
		}
		if err != nil {
			return
		}
	}
}

// readSnapshot reads the carry snapshot up to its end marker: the pipe may
// stay open in what the script left running.
func (p *Process) readSnapshot(f *os.File, done func()) {
	defer p.readers.Done()
	signalled := false
	defer func() {
		if !signalled {
			done()
		}
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			p.snapshot.write(buf[:n])
			if !signalled && p.snapshot.contains([]byte(carryEnd)) {
				signalled = true
				done()
			}
		}
		if err != nil {
			return
		}
	}
}

// outputStream passes Exec's output to ExecRequest.Output as it is read:
// one call at a time (stdout and stderr have a reader each), and none after
// Exec has returned (a reader may outlive it when what the command left
// running holds a pipe open past the drain bound).
type outputStream struct {
	mu       sync.Mutex
	fn       func(EventKind, []byte) // guarded by mu; may be nil
	decision func(ExecDecision)      // guarded by mu; may be nil
	stopped  bool                    // guarded by mu
}

// write passes b on; a nil stream does nothing.
func (o *outputStream) write(kind EventKind, b []byte) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.stopped && o.fn != nil {
		o.fn(kind, b)
	}
}

// decide passes d on; a nil stream does nothing.
func (o *outputStream) decide(d ExecDecision) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.stopped && o.decision != nil {
		o.decision(d)
	}
}

func (o *outputStream) stop() {
	o.mu.Lock()
	o.stopped = true
	o.mu.Unlock()
}

// outputBuffer keeps up to max bytes and counts the rest as truncated.
type outputBuffer struct {
	max int

	mu        sync.Mutex
	buf       bytes.Buffer // guarded by mu
	truncated bool         // guarded by mu
}

func (o *outputBuffer) write(b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if room := o.max - o.buf.Len(); room < len(b) {
		o.truncated = true
		if room > 0 {
			o.buf.Write(b[:room])
		}
		return
	}
	o.buf.Write(b)
}

func (o *outputBuffer) contains(b []byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return bytes.Contains(o.buf.Bytes(), b)
}

func (o *outputBuffer) result() ([]byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return bytes.Clone(o.buf.Bytes()), o.truncated
}
