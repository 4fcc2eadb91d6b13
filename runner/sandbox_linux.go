package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/netproxy"
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
	Ask        func(*supervisor.Verdict) bool
	OnDecision func(*supervisor.Verdict)
	// OnNet and AskNet receive the network records and answer the network
	// ask decisions of a filtered sandbox (a policy with a network
	// section, or Net filter); they run on the proxy's goroutines.
	OnNet  func(*netproxy.Record)
	AskNet func(*netproxy.Record) bool
	// OnCreateDenied is told of every creation of a protected name the
	// supervisor refused (supervisor.Options.OnCreateDenied).
	OnCreateDenied func(*supervisor.CreateVerdict)
	// SearchPath is the processes' PATH (supervisor.Options.SearchPath).
	SearchPath string
	// Verify selects race-free verification (supervisor.Options.Verify).
	Verify supervisor.Verify
	Logger *slog.Logger
	// Exe is the binary that plays the init; empty means this executable.
	Exe string
	// Isolation is the tier (IsolationAuto when empty).
	Isolation Isolation
	// Home is the caller's home directory, for ~ in the policy's files
	// part; empty means cordon's own.
	Home string
}

// Sandbox is a bubblewrap sandbox whose init spawns processes on request
// (session mode). Every process is started under a shim that is a child
// subreaper, so the process's tree is the shim's descendants however they
// detach; see spawn_unsafe.go.
type Sandbox struct {
	log     *slog.Logger
	warn    func(string) // a degraded mode, said to the user or logged
	queue   *gitQueue    // git's queued commands at start: warned about at the end
	cmd     *exec.Cmd
	bare    bool          // no bubblewrap: cmd is the init itself
	tier    Isolation     // the tier it runs in (auto resolved)
	session bool          // the init spawns on request (StartSandbox)
	tmpdir  string        // landlock tier: the private TMPDIR, removed at teardown
	binds   []string      // the paths bound into it (RW, RO)
	waited  chan struct{} // closed when cmd.Wait returned
	waitErr error         // cmd.Wait's result, once waited is closed
	conn    *frameConn
	sup     *supervisor.Supervisor
	pol     *policy.Policy // its env scrub applies to every spawn
	initPid int
	// nsInit is a pidfd for bubblewrap's pid 1 in the namespace (or -1).
	// It becomes readable only once every task of the namespace is gone:
	// the kernel empties a pid namespace before its init finishes exiting.
	nsInit int
	stderr *setupOutput
	// filtered: --net filter; proxy serves its listeners and execs
	// records what each process was exec'd as.
	filtered bool
	proxy    *netproxy.Proxy
	execs    *execTable
	conns    *connTable // who connected each socket to the proxy
	exe      string     // cordon's binary, as the sandbox sees it
	diag     *sockDiag
	// ports are the proxy's: fixed on the sandbox's own loopback
	// (bwrap), ephemeral on the host's (landlock).
	ports ProxyPorts
	// gated: the landlock tier's --net filter or none, where the
	// supervisor makes (or refuses) every TCP connect (ConnectGate);
	// hostNet are the proxy's descriptors cordon made on the host for
	// it (listeners and sock_diag), handed to startProxy at the
	// handshake.
	gated   bool
	hostNet []int
	// lastPid asks the init for its pid namespace's counter (bubblewrap's
	// tier; nil in the others, which share the host's): see
	// lastpid_linux.go.
	lastPid *lastPidClient

	sendMu sync.Mutex // one frame at a time on conn

	done     chan struct{} // closed when the sandbox has ended (closed or lost)
	readDone chan struct{} // closed when the reader has stopped (nil: none started)
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
	// (WorkloadEnv) and what the sandbox policy's env scrub removes.
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
// supervisor on its listener. Cancelling ctx while it starts ends it.
func StartSandbox(ctx context.Context, o SandboxOptions) (*Sandbox, error) {
	s, err := startSandbox(ctx, startSpec{
		isolation: o.Isolation,
		box: bwrap.Spec{Dir: o.Dir, RW: o.RW, RO: o.RO, Net: o.Net,
			Hide: o.Hide, HideFiles: o.HideFiles},
		exe:    o.Exe,
		config: configMsg{Session: true, Dir: o.Dir},
		policy: o.Policy,
		sup: supervisor.Options{OnDecision: o.OnDecision, Ask: o.Ask, SearchPath: o.SearchPath, Verify: o.Verify,
			OnCreateDenied: o.OnCreateDenied},
		log:    o.Logger,
		onNet:  o.OnNet,
		askNet: o.AskNet,
		home:   o.Home,
	})
	if err != nil {
		return nil, err
	}
	s.children = make(map[string]*childEntry)
	s.stderr.pass()
	s.serve(s.read)
	go func() {
		<-s.waited
		s.end(fmt.Errorf("%w: %s exited (%v)", ErrSandboxLost, s.startedWhat(), s.cmd.ProcessState))
	}()
	return s, nil
}

// startedWhat names what cordon started: bubblewrap, or the init itself.
func (s *Sandbox) startedWhat() string {
	if s.bare {
		return "the sandbox's init"
	}
	return "bubblewrap"
}

// Isolation is the tier the sandbox runs in.
func (s *Sandbox) Isolation() Isolation { return s.tier }

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
		Argv: toBytes(req.Argv), Env: toBytes(s.workloadEnv(req.Env)), Dir: []byte(req.Dir),
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

// initWatchEvery is how often keepInitRunning looks at the init.
const initWatchEvery = 250 * time.Millisecond

// keepInitRunning continues the init whenever it is found stopped, until the
// sandbox ends; it owns fd, a pidfd of the init. The init handles every
// job-control signal (surviveSignals), so only SIGSTOP stops it, and only
// a process of the sandbox sends that (the command runs as the init's user;
// from Landlock ABI 6 its scope layer refuses it, except with --isolation
// none): a stopped init reports nothing, and the run would wait for the
// command's exit forever.
func (s *Sandbox) keepInitRunning(fd int) {
	defer unix.Close(fd)
	t := time.NewTicker(initWatchEvery)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		st, err := proc.ReadStat(s.initPid)
		if err != nil || !proc.PidfdAlive(fd) {
			return
		}
		if st.State != 'T' {
			continue
		}
		if unix.PidfdSendSignal(fd, unix.SIGCONT, nil, 0) == nil && !warned {
			warned = true
			s.warn("cordon's init was stopped (SIGSTOP): continued, since a stopped init cannot report the command's exit")
		}
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

// nsInitPidfd opens a pidfd for the parent of the init, bubblewrap's pid 1
// in the namespace, and checks afterwards that it still is the init's
// parent (so the pidfd is not for a process that reused the pid). -1 when
// that cannot be established.
func nsInitPidfd(initPid int) int {
	ppid := func() int {
		st, err := proc.ReadStat(initPid)
		if err != nil {
			return 0
		}
		return st.PPid
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

// workloadEnv is a spawned process's environment: scrubEnv's (cordon's own
// variables and the policy's env scrub), and the proxy's variables in a
// filtered sandbox, and the landlock tier's private TMPDIR. A one-shot
// run's goes the same way: scrubEnv in the
// launcher, ProxyEnv in startSandbox.
func (s *Sandbox) workloadEnv(env []string) []string {
	env = scrubEnv(env, s.pol, s.log)
	if s.filtered {
		env = ProxyEnv(env, s.exe, s.ports)
	}
	if s.tmpdir != "" {
		env = withTMPDIR(env, s.tmpdir)
	}
	return env
}
