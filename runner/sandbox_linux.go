package runner

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/supervisor"
	"golang.org/x/sys/unix"
)

// ErrSandboxGone is returned by Spawn once the sandbox has been closed or
// has died.
var ErrSandboxGone = errors.New("sandbox is gone")

// ErrSandboxLost is the cause reported by Sandbox.Err when the sandbox died
// without being closed (bwrap or the init was killed).
var ErrSandboxLost = errors.New("sandbox exited unexpectedly")

// SandboxOptions configures a sandbox that lives across processes (the
// base of a session).
type SandboxOptions struct {
	// Dir is the working directory, bound writable; RW and RO are extra
	// binds; Net is the network mode. See bwrap.Spec.
	Dir    string
	RW, RO []string
	Net    bwrap.Net
	// Hide and HideFiles are hidden from the sandbox (bwrap.Spec).
	Hide, HideFiles []string

	Policy *policy.Policy
	// Ask and OnDecision are passed to the supervisor (see
	// supervisor.Options); both run on the supervisor's goroutine.
	Ask        func(*supervisor.Decision) bool
	OnDecision func(*supervisor.Decision)
	// SearchPath is the processes' PATH (supervisor.Options.SearchPath).
	SearchPath string
	// Verify selects race-free verification (supervisor.Options.Verify).
	Verify supervisor.Verify
	Logger *slog.Logger
	// Exe is the binary that plays the init; empty means this executable.
	Exe string
}

// Sandbox is a bubblewrap sandbox whose init spawns processes on request
// (session mode). Every process is started under a shim that is a child
// subreaper, so the process's tree is the shim's descendants however they
// detach; see spawn_unsafe.go.
type Sandbox struct {
	log     *slog.Logger
	cmd     *exec.Cmd
	waited  chan struct{} // closed when cmd.Wait returned
	conn    *frameConn
	sup     *supervisor.Supervisor
	initPid int
	// nsInit is a pidfd for bubblewrap's pid 1 in the namespace (or -1).
	// It becomes readable only once every task of the namespace is gone:
	// the kernel empties a pid namespace before its init finishes exiting.
	nsInit int
	stderr *stderrLog

	sendMu sync.Mutex // one frame at a time on conn

	done     chan struct{} // closed when the sandbox has ended (closed or lost)
	readDone chan struct{} // closed when the reader has stopped
	teardown sync.Once

	mu       sync.Mutex
	children map[string]*childEntry // guarded by mu
	closing  bool                   // guarded by mu
	ended    bool                   // guarded by mu
	err      error                  // guarded by mu: why it ended, when it was not closed
}

type childEntry struct {
	events                func(ChildEvent)
	started, exited, gone bool
	shimKilled            bool
}

// ChildEventKind says what happened to a spawned process.
type ChildEventKind int

const (
	// ChildStarted: the leader exists. Pid, ShimPid, PidFD and ShimPidFD
	// are set; the receiver owns the two pidfds.
	ChildStarted ChildEventKind = iota + 1
	// ChildExecFailed: the program could not be run. Op is lookup, chdir,
	// exec or spawn; Errno is why. When Op is lookup or spawn no leader was
	// created and no ChildStarted precedes it.
	ChildExecFailed
	// ChildExited: the leader's wait status (Status).
	ChildExited
	// ChildGone: the shim exited, so no process of the tree is left
	// (Status is the shim's own status; a signal means it was killed and
	// its tree went to the init instead).
	ChildGone
)

// ChildEvent is one report about a spawned process.
type ChildEvent struct {
	Kind ChildEventKind
	// Pid and ShimPid are the leader's and the shim's pids in the
	// sandbox's pid namespace.
	Pid, ShimPid int
	// PidFD and ShimPidFD refer to the leader and the shim (close-on-exec).
	// They name those exact processes, so signals sent through them never
	// reach a reused pid.
	PidFD, ShimPidFD int
	Op               string
	Errno            syscall.Errno
	Status           unix.WaitStatus
}

// SpawnRequest describes one process to start in a Sandbox.
type SpawnRequest struct {
	// ID names the process in events; it must be unique in the sandbox.
	ID   string
	Argv []string
	// Env is the process's environment, less cordon's own variables
	// (WorkloadEnv).
	Env []string
	Dir string
	// Files[i] becomes descriptor Targets[i] in the process. Spawn sends
	// them to the init; the caller may close its copies when Spawn returns.
	Files   []*os.File
	Targets []int
	// Events receives the process's events in order, on the sandbox's
	// reader goroutine. It must not block. It is registered before the
	// request is sent, so no event is missed.
	Events func(ChildEvent)
}

// StartSandbox starts bubblewrap with the init in session mode and the
// supervisor on its listener.
func StartSandbox(o SandboxOptions) (*Sandbox, error) {
	start := time.Now()
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	filter, err := supervisor.Filter()
	if err != nil {
		return nil, &SetupError{Err: err}
	}
	fallback, err := supervisor.FallbackFilter()
	if err != nil {
		return nil, &SetupError{Err: err}
	}
	exe := o.Exe
	if exe == "" {
		if exe, err = os.Executable(); err == nil {
			exe, err = filepath.EvalSymlinks(exe)
		}
		if err != nil {
			return nil, &SetupError{Err: fmt.Errorf("finding cordon's own binary: %w", err)}
		}
	}
	argv, err := sandboxArgv(exe, bwrap.Spec{Dir: o.Dir, RW: o.RW, RO: o.RO, Net: o.Net,
		Hide: o.Hide, HideFiles: o.HideFiles})
	if err != nil {
		return nil, err
	}
	conn, childEnd, err := newControlPair()
	if err != nil {
		return nil, err
	}
	defer childEnd.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		conn.close()
		return nil, &SetupError{Err: err}
	}
	defer devnull.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		conn.close()
		return nil, &SetupError{Err: err}
	}
	s := &Sandbox{
		log:      log,
		conn:     conn,
		waited:   make(chan struct{}),
		done:     make(chan struct{}),
		readDone: make(chan struct{}),
		children: make(map[string]*childEntry),
		stderr:   newStderrLog(errR, log),
		nsInit:   -1,
	}
	s.cmd = &exec.Cmd{
		Path:       argv[0],
		Args:       argv,
		Env:        []string{},
		Dir:        o.Dir,
		Stdin:      devnull,
		Stdout:     devnull,
		Stderr:     errW,
		ExtraFiles: []*os.File{childEnd, errW},
		SysProcAttr: &syscall.SysProcAttr{
			// A session of its own: no controlling terminal, so nothing in
			// the sandbox can open /dev/tty and read or write the user's
			// terminal, and terminal signals do not reach it.
			Setsid:    true,
			Pdeathsig: unix.SIGKILL,
		},
	}
	log.Debug("starting sandbox", "argv", bwrap.Describe(argv))
	err = startLocked(s.cmd, func(error) { close(s.waited) })
	errW.Close()
	if err != nil {
		conn.close()
		errR.Close()
		return nil, &SetupError{Err: fmt.Errorf("starting %s: %w", argv[0], err)}
	}
	fail := func(cause error) (*Sandbox, error) {
		s.kill()
		select {
		case <-s.waited:
		case <-time.After(teardownBound):
		}
		conn.close()
		return nil, &SetupError{Err: cause, Detail: s.stderr.captured(500 * time.Millisecond)}
	}
	if err := conn.send(configMsg{Session: true, Filter: filter, Fallback: fallback, Dir: o.Dir}); err != nil {
		return fail(fmt.Errorf("sending configuration to the sandbox: %w", err))
	}
	var m initMsg
	fds, err := conn.recv(&m)
	if err != nil {
		return fail(errors.New("the sandbox exited before it was ready"))
	}
	switch {
	case m.Kind == msgSetupErr:
		closeAll(fds)
		return fail(errors.New(m.Message))
	case m.Kind != msgListener:
		closeAll(fds)
		return fail(fmt.Errorf("unexpected message %q from the sandbox", m.Kind))
	case m.PtraceOnly && (len(fds) != 0 || conn.pid <= 0), !m.PtraceOnly && (len(fds) != 1 || conn.pid <= 0):
		closeAll(fds)
		return fail(fmt.Errorf("sandbox sent %d descriptors and pid %d, want a listener and its pid", len(fds), conn.pid))
	}
	s.initPid = int(conn.pid)
	s.nsInit = nsInitPidfd(s.initPid)
	supOpts := supervisor.Options{
		OnDecision: o.OnDecision,
		Ask:        o.Ask,
		Logger:     log,
		RootPid:    s.initPid,
		SearchPath: o.SearchPath,
		Verify:     o.Verify,
	}
	if m.PtraceOnly {
		log.Warn("a seccomp notify listener already exists above this sandbox: supervising with ptrace only")
		s.sup, err = supervisor.NewPtraceOnly(s.initPid, o.Policy, supOpts)
	} else {
		s.sup, err = supervisor.New(fds[0], o.Policy, supOpts)
	}
	if err != nil {
		closeAll(fds)
		return fail(fmt.Errorf("starting the supervisor: %w", err))
	}
	go func() {
		if err := s.sup.Run(); err != nil {
			log.Error("supervisor stopped", "err", err)
		}
	}()
	s.stderr.ready()
	go s.read()
	go func() {
		<-s.waited
		s.end(fmt.Errorf("%w: bubblewrap exited (%v)", ErrSandboxLost, s.cmd.ProcessState))
	}()
	log.Debug("sandbox ready", "startup", time.Since(start), "init_pid", s.initPid)
	return s, nil
}

// InitPid is the init's pid in the host's pid namespace.
func (s *Sandbox) InitPid() int { return s.initPid }

// BwrapPid is the pid of the bubblewrap process cordon started.
func (s *Sandbox) BwrapPid() int { return s.cmd.Process.Pid }

// Done is closed when the sandbox has ended: closed, or lost.
func (s *Sandbox) Done() <-chan struct{} { return s.done }

// Err reports why the sandbox ended without being closed (wrapping
// ErrSandboxLost), or nil.
func (s *Sandbox) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Spawn asks the init to start a process. Its events arrive on
// req.Events; Spawn returns once the request is sent.
func (s *Sandbox) Spawn(req SpawnRequest) error {
	if len(req.Files) != len(req.Targets) {
		return fmt.Errorf("spawn %s: %d files for %d targets", req.ID, len(req.Files), len(req.Targets))
	}
	s.mu.Lock()
	if s.closing || s.ended {
		s.mu.Unlock()
		return ErrSandboxGone
	}
	if _, dup := s.children[req.ID]; dup {
		s.mu.Unlock()
		return fmt.Errorf("spawn %s: id in use", req.ID)
	}
	s.children[req.ID] = &childEntry{events: req.Events}
	s.mu.Unlock()
	fds := make([]int, len(req.Files))
	for i, f := range req.Files {
		fds[i] = int(f.Fd())
	}
	s.sendMu.Lock()
	err := s.conn.send(sessMsg{
		Kind: msgSpawn, ID: req.ID,
		Argv: toBytes(req.Argv), Env: toBytes(WorkloadEnv(req.Env)), Dir: []byte(req.Dir),
		Targets: req.Targets, NFDs: len(fds),
	}, fds...)
	s.sendMu.Unlock()
	runtime.KeepAlive(req.Files)
	if err != nil {
		s.mu.Lock()
		delete(s.children, req.ID)
		s.mu.Unlock()
		return fmt.Errorf("spawn %s: %w", req.ID, err)
	}
	return nil
}

// read dispatches the init's reports to the processes' handlers.
func (s *Sandbox) read() {
	defer close(s.readDone)
	for {
		var m sessMsg
		if err := s.conn.recvQueued(&m); err != nil {
			s.end(fmt.Errorf("%w: control channel: %v", ErrSandboxLost, err))
			return
		}
		fds, err := s.conn.takeFDs(m.NFDs)
		if err != nil {
			s.log.Error("session protocol", "err", err)
			s.kill()
			s.end(fmt.Errorf("%w: %v", ErrSandboxLost, err))
			return
		}
		ev := ChildEvent{PidFD: -1, ShimPidFD: -1}
		switch m.Kind {
		case msgSpawned:
			if len(fds) != 2 {
				closeAll(fds)
				continue
			}
			ev.Kind, ev.Pid, ev.ShimPid, ev.PidFD, ev.ShimPidFD = ChildStarted, m.Pid, m.Shim, fds[0], fds[1]
		case msgExecFailed:
			ev.Kind, ev.Op, ev.Errno = ChildExecFailed, m.Op, syscall.Errno(m.Errno)
		case msgChildExit:
			ev.Kind, ev.Status = ChildExited, unix.WaitStatus(m.Status)
		case msgGone:
			ev.Kind, ev.Status = ChildGone, unix.WaitStatus(m.Status)
		default:
			closeAll(fds)
			continue
		}
		s.mu.Lock()
		ce := s.children[m.ID]
		if ce != nil {
			switch ev.Kind {
			case ChildStarted:
				ce.started = true
			case ChildExited:
				ce.exited = true
			case ChildGone:
				ce.gone, ce.shimKilled = true, ev.Status.Signaled()
			}
			// A leader whose shim was killed is reported when the init
			// reaps it, possibly after gone: keep listening until then.
			if ce.gone && (ce.exited || !ce.started || !ce.shimKilled) {
				delete(s.children, m.ID)
			}
		}
		s.mu.Unlock()
		if ce == nil {
			closeAll(fds)
			continue
		}
		ce.events(ev)
	}
}

// end records that the sandbox is over. The first cause wins; a sandbox
// being closed is not lost.
func (s *Sandbox) end(cause error) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	if !s.closing {
		s.err = cause
		s.log.Warn("sandbox lost", "err", cause)
	}
	s.mu.Unlock()
	go s.stop()
	close(s.done)
}

// kill ends everything in the sandbox at once: SIGKILL to bwrap's process
// group reaches bwrap and the namespace's pid 1, and when pid 1 dies the
// kernel kills every task in the namespace.
func (s *Sandbox) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = unix.Kill(-s.cmd.Process.Pid, unix.SIGKILL)
	}
}

// Close kills everything in the sandbox and stops the supervisor, within
// the teardown bound. It is idempotent.
func (s *Sandbox) Close() error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.stop()
	return nil
}

func (s *Sandbox) stop() {
	s.teardown.Do(func() {
		// One bound for the whole teardown, even if the supervisor is
		// wedged in the kernel.
		end := time.Now().Add(teardownBound)
		wait := func(ch <-chan struct{}, what string) bool {
			select {
			case <-ch:
				return true
			case <-time.After(time.Until(end)):
				s.log.Error(what+" did not finish in time", "bound", teardownBound)
				return false
			}
		}
		s.kill()
		wait(s.waited, "bubblewrap's exit")
		// bwrap's own exit does not wait for the namespace to empty: wait
		// for its pid 1, so that nothing of the sandbox runs once Close
		// returns.
		if s.nsInit >= 0 {
			for pidfdAlive(s.nsInit) && time.Now().Before(end) {
				time.Sleep(time.Millisecond)
			}
			unix.Close(s.nsInit)
			s.nsInit = -1
		}
		s.conn.close()
		wait(s.readDone, "the control reader")
		s.sup.Shutdown()
		if wait(s.sup.Done(), "the supervisor") {
			_ = s.sup.Close()
		}
		s.stderr.wait(100 * time.Millisecond)
		s.end(nil)
	})
}

// stderrLog keeps what bwrap and the init say on stderr until the sandbox
// is ready (a start-up failure becomes one error), and logs it afterwards.
type stderrLog struct {
	log  *slog.Logger
	done chan struct{}

	mu      sync.Mutex
	buf     bytes.Buffer // guarded by mu
	started bool         // guarded by mu
}

func newStderrLog(r *os.File, log *slog.Logger) *stderrLog {
	l := &stderrLog{log: log, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		defer r.Close()
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			if n > 0 {
				l.mu.Lock()
				if l.started {
					l.log.Warn("sandbox stderr", "text", strings.TrimSpace(string(b[:n])))
				} else if l.buf.Len() < 64<<10 {
					l.buf.Write(b[:n])
				}
				l.mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	return l
}

func (l *stderrLog) ready() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.started = true
	if l.buf.Len() > 0 {
		l.log.Warn("sandbox stderr", "text", strings.TrimSpace(l.buf.String()))
		l.buf.Reset()
	}
}

func (l *stderrLog) captured(d time.Duration) string {
	l.wait(d)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *stderrLog) wait(d time.Duration) {
	select {
	case <-l.done:
	case <-time.After(d):
	}
}

// nsInitPidfd opens a pidfd for the parent of the init, bubblewrap's pid 1
// in the namespace, and checks afterwards that it still is the init's
// parent (so the pidfd is not for a process that reused the pid). -1 when
// that cannot be established.
func nsInitPidfd(initPid int) int {
	ppid := func() int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", initPid))
		if err != nil {
			return 0
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			return 0
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			return 0
		}
		n, _ := strconv.Atoi(f[1])
		return n
	}
	p1 := ppid()
	if p1 <= 1 {
		return -1
	}
	fd, err := unix.PidfdOpen(p1, 0)
	if err != nil {
		return -1
	}
	if ppid() != p1 {
		unix.Close(fd)
		return -1
	}
	return fd
}

// pidfdAlive reports whether the process behind a pidfd has not exited.
func pidfdAlive(fd int) bool {
	for {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 0
	}
}
