package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/netproxy"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/runner"
	"github.com/cordon-sandbox/cordon/supervisor"
	"golang.org/x/sys/unix"
)

const (
	// closeBound bounds how long Close waits for the processes' own exit
	// reports before it kills the namespace.
	closeBound = 2 * time.Second
	// pendingMax and pendingAge bound the decisions kept for a process
	// whose start has not been reported yet.
	pendingMax = 256
	pendingAge = 10 * time.Second
)

// Session is one sandbox that lives until Close: bubblewrap, cordon's init,
// the exec supervisor and the policy. All its methods are safe for
// concurrent use.
type Session struct {
	m         *Manager
	id, name  string
	spec      SessionSpec
	createdAt time.Time
	log       *slog.Logger
	sb        *runner.Sandbox
	initPid   atomic.Int64 // the init's host pid, read by the supervisor's callbacks
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{} // closed when the session is over (closed or lost)
	execMu    sync.Mutex    // carry mode: one Exec at a time (TryLock)
	closeOnce sync.Once

	mu      sync.Mutex
	state   SessionState        // guarded by mu
	closing bool                // guarded by mu
	lostErr error               // guarded by mu
	procs   map[string]*Process // guarded by mu: Start's and Exec's, until forgotten
	byShim  map[int]*Process    // guarded by mu: by the shim's pid in the sandbox
	pending []pendingDecision   // guarded by mu
	// askChains keeps the ancestry read when an exec was asked about, for
	// its final decision; guarded by mu.
	askChains map[*supervisor.Verdict][]int
	carry     carryState // guarded by mu
	// busy counts the Execs and started processes under way; idle fires
	// after SessionSpec.IdleTimeout without any. Both guarded by mu.
	busy int
	idle *time.Timer
	// asks are the pending asks clients may answer (SessionSpec.AskTimeout),
	// by id; remembered holds answers given with Remember, by askKey.
	// Both guarded by mu.
	asks       map[string]chan AskAnswer
	remembered map[string]bool

	decisions *decisionLog // every exec decision of the session (Decisions)
}

type pendingDecision struct {
	chain []int
	d     ExecDecision
	at    time.Time
}

func newSession(startCtx context.Context, m *Manager, id string, spec SessionSpec) (*Session, error) {
	pol, err := compilePolicy(spec.Policy)
	if err != nil {
		return nil, err
	}
	net := bwrap.NetHost
	if spec.Net == "" {
		spec.Net = pol.Net() // the policy document's net, when it says
	}
	if spec.Net != "" {
		if net, err = bwrap.ParseNet(spec.Net); err != nil {
			return nil, invalid("%v", err)
		}
	}
	if spec.AskTimeout < 0 {
		return nil, invalid("ask timeout %v is negative", time.Duration(spec.AskTimeout))
	}
	if spec.IdleTimeout < 0 {
		return nil, invalid("idle timeout %v is negative", time.Duration(spec.IdleTimeout))
	}
	iso := runner.IsolationAuto
	if spec.Isolation != "" {
		if iso, err = runner.ParseIsolation(spec.Isolation); err != nil {
			return nil, invalid("%v", err)
		}
	}
	dir := spec.Dir
	if dir == "" {
		dir = m.opts.Dir
	}
	if !filepath.IsAbs(dir) {
		return nil, invalid("dir %q is not absolute", dir)
	}
	env := spec.Env
	if env == nil {
		env = m.opts.Env
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		m: m, id: id, name: spec.Name, spec: spec, createdAt: time.Now(),
		log:        m.opts.Logger.With("session", id),
		ctx:        ctx,
		cancel:     cancel,
		done:       make(chan struct{}),
		state:      SessionRunning,
		procs:      make(map[string]*Process),
		byShim:     make(map[int]*Process),
		askChains:  make(map[*supervisor.Verdict][]int),
		asks:       make(map[string]chan AskAnswer),
		remembered: make(map[string]bool),
		carry:      carryState{cwd: filepath.Clean(dir), env: slices.Clone(env)},
		decisions:  newDecisionLog(m.opts.EventBuffer),
	}
	path, _ := envValue(env, "PATH")
	sb, err := runner.StartSandbox(startCtx, runner.SandboxOptions{
		Dir: dir, RW: spec.RW, RO: spec.RO, Net: net, Isolation: iso,
		Hide: m.opts.Hide, HideFiles: m.opts.HideFiles,
		Policy:     pol,
		Ask:        s.ask,
		OnDecision: s.onDecision,
		OnNet:      s.onNet,
		AskNet:     s.askNet,
		SearchPath: path,
		Logger:     s.log,
		Exe:        m.opts.Exe,
		Home:       homeOf(env),
		// A refused creation is reported as a denied decision whose argv
		// says what was refused (create PATH), so that every client
		// prints its "cordon: denied:" line.
		OnCreateDenied: s.onCreateDenied,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	s.sb = sb
	s.initPid.Store(int64(sb.InitPid()))
	if d := time.Duration(spec.IdleTimeout); d > 0 {
		s.mu.Lock()
		s.idle = time.AfterFunc(d, s.idleClose)
		s.mu.Unlock()
	}
	go s.watch()
	return s, nil
}

// use marks the session busy until the returned function is called: an
// idle timeout never closes a session while a command runs in it.
func (s *Session) use() (done func()) {
	s.mu.Lock()
	s.busy++
	if s.idle != nil {
		s.idle.Stop()
	}
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.busy--
			if s.busy == 0 && s.idle != nil {
				s.idle.Reset(time.Duration(s.spec.IdleTimeout))
			}
			s.mu.Unlock()
		})
	}
}

// idleClose closes the session when its idle timeout fires with nothing
// running (a command that started as the timer fired keeps it open).
func (s *Session) idleClose() {
	s.mu.Lock()
	if s.busy > 0 {
		s.mu.Unlock()
		return
	}
	// Marked closing under the lock that use() takes: a command arriving
	// now gets ErrClosed instead of being killed by the close.
	s.closing = true
	s.mu.Unlock()
	s.log.Info("closing idle session", "idle_timeout", time.Duration(s.spec.IdleTimeout))
	_ = s.Close(context.Background())
}

func compilePolicy(doc string) (*policy.Policy, error) {
	cfg := policy.Config{Default: policy.Allow, Builtins: true}
	if doc != "" {
		f, err := policy.Parse("session policy", []byte(doc))
		if err != nil {
			return nil, invalid("policy: %v", err)
		}
		cfg = f.Config
	}
	pol, err := policy.Compile(cfg)
	if err != nil {
		return nil, invalid("policy: %v", err)
	}
	return pol, nil
}

// ID is the session's random id.
func (s *Session) ID() string { return s.id }

// Info describes the session.
func (s *Session) Info() SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	info := SessionInfo{ID: s.id, Name: s.name, State: s.state, CreatedAt: s.createdAt, Carry: s.spec.Carry}
	if s.spec.Carry {
		info.Cwd = s.carry.cwd
	}
	for _, p := range s.procs {
		if p.listed {
			info.Processes++
		}
	}
	if s.lostErr != nil {
		info.Error = s.lostErr.Error()
	}
	info.LastDecision = s.decisions.log.last()
	return info
}

// usableLocked returns why the session takes no new work, or nil.
//
// Preconditions: s.mu is held.
func (s *Session) usableLocked() error {
	switch {
	case s.state == SessionLost:
		return fmt.Errorf("%w: %v", ErrSessionLost, s.lostErr)
	case s.closing || s.state == SessionClosed:
		return ErrClosed
	}
	return nil
}

// Process returns a process by id; ErrNotFound once its record expired.
func (s *Session) Process(id string) (*Process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.procs[id]
	if p == nil || !p.listed {
		return nil, fmt.Errorf("process %s: %w", id, ErrNotFound)
	}
	return p, nil
}

// Processes lists the started processes still on record, oldest first.
func (s *Session) Processes() []*Process {
	s.mu.Lock()
	var out []*Process
	for _, p := range s.procs {
		if p.listed {
			out = append(out, p)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b *Process) int { return a.startedAt.Compare(b.startedAt) })
	return out
}

// procSpec is what spawn needs.
type procSpec struct {
	argv      []string // what runs
	shownArgv []string // what Info shows (the request's argv)
	script    string
	dir       string
	env       []string
	stdinMode StdinMode
	stdin     []byte // Exec's input
	listed    bool
	snapshot  bool
	maxOutput int
	output    *outputStream // Exec's streamed output, or nil
}

// spawn starts a process: the pipes are made here, on the host, and
// handed to the init; output never passes through the sandbox's plumbing.
func (s *Session) spawn(ps procSpec) (*Process, error) {
	p := &Process{
		id: newID("p-"), sess: s, listed: ps.listed,
		run: ps.argv, argv: ps.shownArgv, script: ps.script, dir: ps.dir, stdinMode: ps.stdinMode,
		startedAt: time.Now(),
		drained:   make(chan struct{}),
		startedCh: make(chan struct{}),
		exitedCh:  make(chan struct{}),
		goneCh:    make(chan struct{}),
		state:     ProcessStarting,
	}
	if ps.listed {
		p.log = newEventLog(s.m.opts.EventBuffer)
	} else {
		p.stdout = &outputBuffer{max: ps.maxOutput}
		p.stderr = &outputBuffer{max: ps.maxOutput}
		p.output = ps.output
	}
	// The child's ends go to the init and are closed here once sent; ours
	// are read (outputs) or written (stdin).
	var files, ours []*os.File
	fail := func(err error) (*Process, error) {
		for _, f := range append(files, ours...) {
			f.Close()
		}
		return nil, err
	}
	var stdinW *os.File // Exec's input, written below
	switch {
	case ps.stdinMode == StdinPipe || ps.stdin != nil:
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		files, ours = append(files, r), append(ours, w)
		if ps.stdinMode == StdinPipe {
			p.stdin = w
		} else {
			stdinW = w
		}
	default:
		devnull, err := os.Open(os.DevNull)
		if err != nil {
			return fail(err)
		}
		files = append(files, devnull)
	}
	targets := []int{0, 1, 2}
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		files, ours = append(files, w), append(ours, r)
		p.pipes = append(p.pipes, r)
	}
	if ps.snapshot {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		files, ours = append(files, w), append(ours, r)
		p.pipes = append(p.pipes, r)
		targets = append(targets, carryFD)
		p.snapshot = &outputBuffer{max: snapshotMax}
	}

	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return fail(err)
	}
	s.procs[p.id] = p
	s.mu.Unlock()

	err := s.sb.Spawn(runner.SpawnRequest{
		ID: p.id, Argv: ps.argv, Env: ps.env, Dir: ps.dir,
		Files: files, Targets: targets,
		Events: p.onChild,
	})
	for _, f := range files {
		f.Close()
	}
	files = nil
	if err != nil {
		s.mu.Lock()
		delete(s.procs, p.id)
		s.mu.Unlock()
		if errors.Is(err, runner.ErrSandboxGone) {
			err = s.endedErr()
		}
		return fail(err)
	}

	var pending sync.WaitGroup
	pending.Add(len(p.pipes))
	p.readers.Add(len(p.pipes))
	go p.readOutput(p.pipes[0], EventStdout, pending.Done)
	go p.readOutput(p.pipes[1], EventStderr, pending.Done)
	if ps.snapshot {
		go p.readSnapshot(p.pipes[2], pending.Done)
	}
	go func() {
		pending.Wait()
		close(p.drained)
	}()
	if stdinW != nil {
		w := stdinW
		go func() {
			// EPIPE when the command does not read it all: that is its
			// business.
			_, _ = w.Write(ps.stdin)
			w.Close()
		}()
	}
	return p, nil
}

func (s *Session) endedErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usableLocked(); err != nil {
		return err
	}
	return ErrClosed
}

// setTimeout arms the process's timeout.
func (p *Process) setTimeout(d, grace time.Duration) {
	if d <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer = time.AfterFunc(d, func() { p.requestKill(grace, byTimeout) })
}

// Start starts a process and returns as soon as it exists (its program
// may still be waiting for a policy decision); follow it with Events or
// Wait. In a carry-mode session it starts from the carried directory and
// environment and writes nothing back.
func (s *Session) Start(ctx context.Context, req StartRequest) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	argv, err := commandOf(req.Argv, req.Script)
	if err != nil {
		return nil, err
	}
	switch req.Stdin {
	case "", StdinNone, StdinPipe:
	default:
		return nil, invalid("stdin %q (want none or pipe)", req.Stdin)
	}
	mode := req.Stdin
	if mode == "" {
		mode = StdinNone
	}
	st := s.carried()
	grace := s.grace(req.KillGrace)
	done := s.use()
	p, err := s.spawn(procSpec{
		argv: argv, shownArgv: req.Argv, script: req.Script,
		dir: resolveDir(req.Dir, st.cwd), env: mergeEnv(st.env, req.Env),
		stdinMode: mode, listed: true,
	})
	if err != nil {
		done()
		return nil, err
	}
	// A started process keeps the session busy until its tree is gone.
	go func() {
		select {
		case <-p.goneCh:
		case <-s.done:
		}
		done()
	}()
	p.setTimeout(time.Duration(req.Timeout), grace)
	// Return once the process exists (or has failed to start), so its
	// state is never "starting" for a caller.
	select {
	case <-p.startedCh:
	case <-ctx.Done():
		p.requestKill(0, byUser)
		return nil, ctx.Err()
	}
	p.mu.Lock()
	never := p.leader == nil
	p.mu.Unlock()
	if never { // not found, or no process could be made: the exit follows at once
		<-p.exitedCh
	}
	return p, nil
}

// Exec runs a command to completion and returns its output and exit. When
// the leader has exited, output is read until every pipe is closed or
// Options.DrainTimeout passes; whatever the command left running is then
// counted (Orphans) and killed, so nothing of it outlives Exec. In carry
// mode a script's final directory and exported environment become the
// session's, and a second concurrent Exec gets ErrBusy. If ctx ends first,
// the tree is killed and the result so far is returned with ctx's error.
func (s *Session) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	defer s.use()()
	argv, err := commandOf(req.Argv, req.Script)
	if err != nil {
		return ExecResult{}, err
	}
	sh, err := scriptShell(req.Shell)
	if err != nil {
		return ExecResult{}, err
	}
	if req.Script != "" {
		argv[0] = sh
	}
	if s.spec.Carry {
		if !s.execMu.TryLock() {
			return ExecResult{}, ErrBusy
		}
		defer s.execMu.Unlock()
	}
	st := s.carried()
	dir := resolveDir(req.Dir, st.cwd)
	snapshot := s.spec.Carry && req.Script != ""
	if snapshot {
		argv = []string{sh, "-c", carryWrapper, filepath.Base(sh), req.Script}
	}
	max := req.MaxOutput
	if max <= 0 {
		max = s.m.opts.MaxOutput
	}
	grace := s.grace(req.KillGrace)
	var stream *outputStream
	if req.Output != nil || req.OnDecision != nil {
		stream = &outputStream{fn: req.Output, decision: req.OnDecision}
		defer stream.stop()
	}
	p, err := s.spawn(procSpec{
		argv: argv, shownArgv: req.Argv, script: req.Script,
		dir: dir, env: mergeEnv(st.env, req.Env), stdin: req.Stdin,
		stdinMode: StdinNone, snapshot: snapshot, maxOutput: max,
		output: stream,
	})
	if err != nil {
		return ExecResult{}, err
	}
	defer s.forget(p)
	p.setTimeout(time.Duration(req.Timeout), grace)
	var ctxErr error
	select {
	case <-p.exitedCh:
	case <-ctx.Done():
		ctxErr = ctx.Err()
		<-p.requestKill(grace, byUser).done
		<-p.exitedCh
	}
	// Nothing the command started outlives Exec.
	select {
	case <-p.goneCh:
	default:
		<-p.requestKill(0, byCleanup).done
	}
	res := ExecResult{}
	p.mu.Lock()
	res.ExitInfo = *p.exit
	res.Decisions = p.decisions
	p.mu.Unlock()
	res.Stdout, res.StdoutTruncated = p.stdout.result()
	res.Stderr, res.StderrTruncated = p.stderr.result()
	if s.spec.Carry {
		if snapshot && !res.Lost {
			s.applySnapshot(p, st, dir, req.Env)
		}
		res.Cwd = s.carried().cwd
	}
	if ctxErr == nil {
		s.mu.Lock()
		ctxErr = s.usableLocked()
		s.mu.Unlock()
		// The session was closed or lost under the command: say so,
		// with what was read until then.
	}
	return res, ctxErr
}

// applySnapshot makes what the script left behind the session's state. A
// directory that is not a directory in the sandbox's own view (removed,
// unreachable, relative) is not kept.
func (s *Session) applySnapshot(p *Process, prev carryState, startDir string, overrides []string) {
	b, _ := p.snapshot.result()
	snap, err := parseSnapshot(b)
	if err != nil {
		s.log.Debug("carry: no snapshot", "process", p.id, "err", err)
		return
	}
	next := carryAfter(prev, startDir, overrides, snap)
	if next.cwd != prev.cwd && !s.inView(next.cwd) {
		s.log.Debug("carry: directory not kept", "dir", next.cwd)
		next.cwd = prev.cwd
	}
	s.mu.Lock()
	s.carry = next
	s.mu.Unlock()
}

// inView reports whether dir is an absolute, clean path to a directory in
// the sandbox's own view: it is resolved under the init's root, never the
// host's, and magic links (/proc/PID/root, /proc/PID/cwd) are refused.
func (s *Session) inView(dir string) bool {
	if dir == "" || !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return false
	}
	root, err := unix.Open(fmt.Sprintf("/proc/%d/root", s.initPid.Load()), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(root)
	fd, err := proc.Openat2(root, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

func (s *Session) carried() carryState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return carryState{cwd: s.carry.cwd, env: slices.Clone(s.carry.env)}
}

func (s *Session) grace(d Duration) time.Duration {
	if d > 0 {
		return time.Duration(d)
	}
	return s.m.opts.KillGrace
}

func commandOf(argv []string, script string) ([]string, error) {
	switch {
	case len(argv) > 0 && script != "":
		return nil, invalid("both argv and script")
	case len(argv) > 0:
		return argv, nil
	case script != "":
		return []string{"/bin/sh", "-c", script}, nil
	}
	return nil, invalid("no command: set argv or script")
}

// scriptShell is the program that runs a script: /bin/sh, or bash
// (looked up on PATH in the sandbox) when asked for.
func scriptShell(name string) (string, error) {
	switch name {
	case "", "sh":
		return "/bin/sh", nil
	case "bash":
		return "bash", nil
	}
	return "", invalid("shell %q: want sh or bash", name)
}

func resolveDir(dir, cwd string) string {
	switch {
	case dir == "":
		return cwd
	case filepath.IsAbs(dir):
		return filepath.Clean(dir)
	}
	return filepath.Join(cwd, dir)
}

// KillAll kills every process's tree (see Process.Kill) and waits for all
// of them. Kills already under way are joined.
func (s *Session) KillAll(ctx context.Context, grace time.Duration) error {
	s.mu.Lock()
	procs := make([]*Process, 0, len(s.procs))
	for _, p := range s.procs {
		procs = append(procs, p)
	}
	s.mu.Unlock()
	for _, p := range procs {
		op := p.requestKill(grace, byUser)
		select {
		case <-op.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Close kills everything in the session and releases it. Processes' trees
// are killed first so their real exit statuses are recorded; then the
// whole pid namespace is killed, which also ends anything that escaped
// tracking. It is idempotent; the session is removed from its Manager.
func (s *Session) Close(ctx context.Context) error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		lost := s.state == SessionLost
		s.mu.Unlock()
		if !lost {
			kctx, cancel := context.WithTimeout(ctx, closeBound)
			_ = s.KillAll(kctx, 0)
			s.mu.Lock()
			procs := make([]*Process, 0, len(s.procs))
			for _, p := range s.procs {
				procs = append(procs, p)
			}
			s.mu.Unlock()
			for _, p := range procs {
				select {
				case <-p.exitedCh:
				case <-kctx.Done():
				}
			}
			cancel()
		}
		_ = s.sb.Close()
		s.end(nil)
		s.mu.Lock()
		procs := s.procs
		s.procs = make(map[string]*Process)
		s.byShim = make(map[int]*Process)
		s.mu.Unlock()
		for _, p := range procs {
			p.release()
		}
		s.m.remove(s)
	})
	return nil
}

// watch notices a sandbox that died under the session.
func (s *Session) watch() {
	<-s.sb.Done()
	if err := s.sb.Err(); err != nil {
		s.end(err)
	}
}

// end marks the session over: lost when cause is set, closed otherwise.
// Every process without an exit gets one that says so.
func (s *Session) end(cause error) {
	s.mu.Lock()
	if s.state != SessionRunning {
		s.mu.Unlock()
		return
	}
	why := "session closed before the process's exit was reported"
	if cause != nil {
		s.state, s.lostErr = SessionLost, cause
		why = "session lost: " + cause.Error()
	} else {
		s.state = SessionClosed
	}
	close(s.done)
	procs := make([]*Process, 0, len(s.procs))
	for _, p := range s.procs {
		procs = append(procs, p)
	}
	s.mu.Unlock()
	s.cancel()
	var wg sync.WaitGroup
	for _, p := range procs {
		p.startOnce.Do(func() { close(p.startedCh) })
		p.goneOnce.Do(func() { close(p.goneCh) })
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.finish(0, time.Now(), why)
		}()
	}
	wg.Wait()
}

// finished is called once a process's exit is recorded: a started process
// is kept for Options.ExitRetention and until its tree is gone.
func (s *Session) finished(p *Process) {
	if !p.listed {
		return
	}
	time.AfterFunc(s.m.opts.ExitRetention, func() {
		select {
		case <-p.goneCh:
		case <-s.done:
			return
		}
		s.forget(p)
	})
}

func (s *Session) forget(p *Process) {
	s.mu.Lock()
	if s.procs[p.id] == p {
		delete(s.procs, p.id)
	}
	s.mu.Unlock()
	s.unregisterShim(p)
	p.release()
}

// registerShim makes p the owner of decisions made under its shim, and
// hands it those that arrived before its start was reported.
func (s *Session) registerShim(p *Process, shimPid int) {
	var mine []ExecDecision
	s.mu.Lock()
	s.byShim[shimPid] = p
	keep := s.pending[:0]
	for _, pd := range s.pending {
		if slices.Contains(pd.chain, shimPid) {
			mine = append(mine, pd.d)
		} else {
			keep = append(keep, pd)
		}
	}
	s.pending = keep
	// Delivered before mu is released: a later decision of the same
	// process finds its owner only then (deliver), so it cannot overtake
	// these in the stream.
	for _, d := range mine {
		if p.listed {
			d.Process = p.id
		}
		s.decisions.add(d)
		p.addDecision(d)
	}
	s.mu.Unlock()
}

func (s *Session) unregisterShim(p *Process) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for pid, q := range s.byShim {
		if q == p {
			delete(s.byShim, pid)
		}
	}
}

// ownerLocked finds the process whose shim is the nearest registered ancestor in
// chain.
//
// Preconditions: s.mu is held.
func (s *Session) ownerLocked(chain []int) *Process {
	for _, pid := range chain {
		if p := s.byShim[pid]; p != nil {
			return p
		}
	}
	return nil
}

// onDecision attributes a decision to the process that made it: the
// caller's ancestry, read on the host from /proc and translated to the
// sandbox's pids (NSpid), leads to the shim of exactly one process. It runs
// on the supervisor's goroutine while the exec waits, so the caller is
// alive and its ancestry is intact.
func (s *Session) onDecision(d *supervisor.Verdict) {
	s.mu.Lock()
	chain, asked := s.askChains[d]
	delete(s.askChains, d)
	s.mu.Unlock()
	if d.Errno != 0 && !d.Refused() {
		return // refused before the policy was asked (ENOENT on a PATH search...)
	}
	if !d.Refused() && !asked && !s.spec.ReportAllowed {
		return
	}
	if !asked {
		chain = nsChain(d.Pid, int(s.initPid.Load()))
	}
	s.deliver(chain, toDecision(d, chain))
}

// deliver gives a decision to its process, or keeps it until that
// process's start is reported.
func (s *Session) deliver(chain []int, dec ExecDecision) *Process {
	now := time.Now()
	var expired []ExecDecision
	s.mu.Lock()
	p := s.ownerLocked(chain)
	if p == nil && len(chain) > 0 {
		// Its process may not be registered yet: keep it, and publish it
		// to the session's stream once the owner is known (registerShim),
		// or without one when it has waited too long.
		keep := s.pending[:0]
		for _, pd := range s.pending {
			if now.Sub(pd.at) < pendingAge {
				keep = append(keep, pd)
			} else {
				expired = append(expired, pd.d)
			}
		}
		s.pending = append(keep, pendingDecision{chain: chain, d: dec, at: now})
		if n := len(s.pending) - pendingMax; n > 0 {
			for _, pd := range s.pending[:n] {
				expired = append(expired, pd.d)
			}
			s.pending = s.pending[n:]
		}
	}
	s.mu.Unlock()
	for _, d := range expired {
		s.decisions.add(d)
	}
	if p == nil && len(chain) > 0 {
		return nil
	}
	if p != nil && p.listed {
		dec.Process = p.id
	}
	s.decisions.add(dec)
	if p != nil {
		p.addDecision(dec)
	}
	return p
}

func toDecision(d *supervisor.Verdict, chain []int) ExecDecision {
	dec := ExecDecision{
		Kind:     "exec",
		Time:     d.Time,
		Decision: "allow",
		Asked:    d.Result.Decision == policy.Ask,
		Rule:     d.Result.RuleText(),
		Argv:     d.Exec.Argv,
		Program:  d.Exec.Program(),
	}
	if d.Refused() {
		dec.Decision = "deny"
	}
	if len(chain) > 0 {
		dec.Pid = chain[0]
	}
	return dec
}

// ask runs SessionSpec.Ask with a context that ends when the asking
// process dies (a kill or timeout while the exec waits) or the session
// ends.
func (s *Session) ask(d *supervisor.Verdict) bool {
	if s.spec.Ask == nil && s.spec.AskTimeout <= 0 {
		return false
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	if fd, err := unix.PidfdOpen(d.Pid, unix.PIDFD_NONBLOCK); err == nil {
		go func() {
			if waitPidFD(ctx, fd) == nil {
				cancel()
			}
		}()
	}
	// Attribute now, while the caller is alive and its ancestry intact;
	// the final decision (onDecision, same *ExecDecision) reuses this chain even
	// if the caller has died meanwhile.
	chain := nsChain(d.Pid, int(s.initPid.Load()))
	q := toDecision(d, chain)
	q.Decision = "ask"
	s.mu.Lock()
	s.askChains[d] = chain
	s.mu.Unlock()
	// A process's first exec can be asked about before its start is
	// reported: give the report a moment, so Ask learns whose exec it is.
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
		s.mu.Lock()
		known := s.ownerLocked(chain) != nil
		s.mu.Unlock()
		if known || len(chain) == 0 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	return s.askOne(ctx, chain, q)
}

// askOne publishes the pending ask q and returns the answer: SessionSpec.Ask's,
// or a client's (AnswerAsk) within AskTimeout, or a remembered one. No
// answer, the asking process's death or the session's end deny.
func (s *Session) askOne(ctx context.Context, chain []int, q ExecDecision) bool {
	if s.spec.Ask != nil {
		id := ""
		if p := s.deliver(chain, q); p != nil {
			id = p.id
		}
		return s.spec.Ask(ctx, id, q)
	}
	key := askKey(q)
	ch := make(chan AskAnswer, 1)
	s.mu.Lock()
	if allow, ok := s.remembered[key]; ok {
		s.mu.Unlock()
		return allow
	}
	q.AskID = newID("a-")
	s.asks[q.AskID] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.asks, q.AskID)
		s.mu.Unlock()
	}()
	timeout := time.Duration(s.spec.AskTimeout)
	q.AskDeadline = time.Now().Add(timeout)
	s.deliver(chain, q)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a := <-ch:
		if a.Remember {
			s.mu.Lock()
			s.remembered[key] = a.Allow
			s.mu.Unlock()
		}
		return a.Allow
	case <-t.C:
		s.log.Info("ask not answered in time: denied", "ask", q.AskID, "argv", q.Argv, "host", q.Host)
		return false
	case <-ctx.Done():
		return false
	}
}

// askKey is what a remembered answer applies to: the same argv for an
// exec, the same host and port for a connection.
func askKey(q ExecDecision) string {
	if q.Kind == "net" {
		return fmt.Sprintf("net\x00%s\x00%d", q.Host, q.Port)
	}
	return "exec\x00" + strings.Join(q.Argv, "\x00")
}

// AnswerAsk answers the pending ask id. An ask already answered, denied
// by its timeout or never made is ErrNotFound.
func (s *Session) AnswerAsk(id string, a AskAnswer) error {
	s.mu.Lock()
	ch, ok := s.asks[id]
	delete(s.asks, id)
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("ask %q: %w (answered, timed out, or never made)", id, ErrNotFound)
	}
	ch <- a
	return nil
}

// netDecision is a network record as the session's decision stream
// carries it.
func netDecision(r *netproxy.Record, chain []int) ExecDecision {
	dec := ExecDecision{
		Kind:       "net",
		Time:       r.Time,
		Decision:   r.Decision.String(),
		Asked:      r.Result.Decision == policy.Ask,
		Rule:       r.RuleText(),
		Argv:       r.Owner.Argv,
		Host:       r.Host,
		Port:       int(r.Port),
		Addr:       r.Addr,
		BytesUp:    r.BytesUp,
		BytesDown:  r.BytesDown,
		DurationMs: r.Duration.Milliseconds(),
	}
	if len(chain) > 0 {
		dec.Pid = chain[0]
	}
	return dec
}

// onNet attributes a network record to the process whose tree opened the
// connection (as onDecision does for execs) and publishes it: every
// connection, allowed or not, is on the session's decision stream.
func (s *Session) onNet(r *netproxy.Record) {
	var chain []int
	if r.Owner.Pid > 0 {
		chain = nsChain(r.Owner.Pid, int(s.initPid.Load()))
	}
	s.deliver(chain, netDecision(r, chain))
}

// askNet asks SessionSpec.Ask about a connection an ask rule covers; no
// Ask, or no answer before the session ends, denies.
func (s *Session) askNet(r *netproxy.Record) bool {
	if s.spec.Ask == nil && s.spec.AskTimeout <= 0 {
		return false
	}
	var chain []int
	if r.Owner.Pid > 0 {
		chain = nsChain(r.Owner.Pid, int(s.initPid.Load()))
	}
	q := netDecision(r, chain)
	q.Decision = "ask"
	return s.askOne(s.ctx, chain, q)
}

// onCreateDenied reports a refused creation of a protected name as a
// denied decision of the process that tried it.
func (s *Session) onCreateDenied(v *supervisor.CreateVerdict) {
	chain := nsChain(v.Pid, int(s.initPid.Load()))
	dec := ExecDecision{Kind: "file", Time: v.Time, Decision: "deny", Rule: v.RuleText(), Argv: v.Words()}
	if len(chain) > 0 {
		dec.Pid = chain[0]
	}
	s.deliver(chain, dec)
}

// homeOf is the HOME of a session's environment: ~ in its policy's files
// part is the caller's home, not the daemon's.
func homeOf(env []string) string {
	h, _ := envValue(env, "HOME")
	return h
}
