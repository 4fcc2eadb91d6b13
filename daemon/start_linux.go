package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/client"
)

// Errors of Connect and Start.
var (
	// ErrNotRunning: no daemon runs and none was to be started.
	ErrNotRunning = errors.New("no cordon daemon is running")
	// ErrUnresponsive: a daemon is alive but does not answer.
	ErrUnresponsive = errors.New("a cordon daemon is alive but does not answer")
	// ErrRefused: a daemon answered and refused this client (token, uid).
	ErrRefused = errors.New("the cordon daemon refused this client")
)

// StartError is a daemon that failed to start, with what it said.
type StartError struct {
	// Message is the daemon's own start-up error (the readiness line), or
	// why none came.
	Message string
	// Log is where its output went.
	Log string
}

func (e *StartError) Error() string {
	return fmt.Sprintf("the cordon daemon did not start: %s (log: %s)", e.Message, e.Log)
}

// StartOptions configures starting a daemon.
type StartOptions struct {
	// Exe is the absolute path of the cordon binary to run (the CLI
	// passes its own). Required: cordon is never looked up on PATH, whose
	// directories (a virtualenv's bin, node_modules/.bin) a sandboxed
	// workload may have written, and the daemon runs on the host.
	Exe string
	// Args are extra flags for "cordon serve" (--listen, --socket...).
	Args []string
	// Env is the daemon's environment (default: os.Environ()). It becomes
	// the default environment of its sandboxes; no workload sees CORDON_*
	// (runner.WorkloadEnv).
	Env []string
	// Timeout bounds the wait for readiness (default 20s).
	Timeout time.Duration
}

// Start makes sure a daemon runs: it returns at once when one answers;
// otherwise, holding start.lock (so N simultaneous starters start one
// daemon), it looks again and starts "cordon serve" in a session of its
// own, then waits for its readiness line: "ready", or its exact start-up
// error.
func Start(ctx context.Context, p Paths, o StartOptions) (Status, error) {
	if !filepath.IsAbs(o.Exe) {
		// Checked whether or not a daemon runs: the same call fails the
		// same way every time.
		return Status{}, fmt.Errorf("starting the daemon: StartOptions.Exe must be the absolute path of the cordon binary, got %q (cordon is not looked up on PATH, which a sandboxed workload may have written)", o.Exe)
	}
	st, err := Probe(ctx, p)
	if err != nil || st.State == Running {
		return st, err
	}
	if o.Timeout <= 0 {
		o.Timeout = 20 * time.Second
	}
	if st.Refused != nil {
		return st, fmt.Errorf("%w: %v", ErrRefused, st.Refused)
	}
	if st.State == Unresponsive {
		// Alive: never start a second one, whatever its files say.
		return waitRunning(ctx, p, o.Timeout, st)
	}
	lctx, cancel := context.WithTimeout(ctx, o.Timeout+5*time.Second)
	defer cancel()
	lock, err := WaitLock(lctx, p.StartLock)
	if err != nil {
		return st, err
	}
	defer lock.Unlock()
	// Another starter may have won while we waited.
	if st, err = Probe(ctx, p); err != nil || st.State == Running {
		return st, err
	}
	if st.State == Unresponsive {
		return waitRunning(ctx, p, o.Timeout, st)
	}
	r, err := spawn(p, o)
	if err != nil {
		return st, err
	}
	if r.kind == "running" {
		return waitRunning(ctx, p, o.Timeout, st)
	}
	if r.kind == "error" {
		return st, &StartError{Message: r.msg, Log: p.Log}
	}
	st, err = Probe(ctx, p)
	if err == nil && st.State != Running {
		err = fmt.Errorf("%w: it said ready, then: %s", ErrUnresponsive, st.Reason)
	}
	return st, err
}

// waitRunning waits for a live daemon to answer.
func waitRunning(ctx context.Context, p Paths, timeout time.Duration, st Status) (Status, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		var err error
		if st, err = Probe(ctx, p); err != nil || st.State == Running {
			return st, err
		}
		if st.State == Stopped {
			return st, fmt.Errorf("%w: %s", ErrNotRunning, st.Reason)
		}
	}
	return st, fmt.Errorf("%w: %s", ErrUnresponsive, st.Reason)
}

// spawn starts "cordon serve --ready-fd 3" detached (its own session,
// stdin /dev/null, output to daemon.log, working directory /) and reads
// its readiness line.
func spawn(p Paths, o StartOptions) (readiness, error) {
	exe := o.Exe
	env := o.Env
	if env == nil {
		env = os.Environ()
	}
	logf, err := os.OpenFile(p.Log, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return readiness{}, fmt.Errorf("opening %s: %w", p.Log, err)
	}
	defer logf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return readiness{}, err
	}
	defer r.Close()
	cmd := exec.Command(exe, append([]string{"serve", "--ready-fd", "3"}, o.Args...)...)
	cmd.Env = env
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return readiness{}, fmt.Errorf("starting %s serve: %w", exe, err)
	}
	// Reap it if it exits while this process lives (a long-lived harness).
	go func() { _ = cmd.Wait() }()
	rd, err := awaitReadiness(r, o.Timeout)
	if err != nil {
		msg := err.Error()
		if tail := logTail(p.Log); tail != "" {
			msg += ": " + tail
		}
		return rd, &StartError{Message: msg, Log: p.Log}
	}
	return rd, nil
}

// logTail is the last lines of the daemon's log, on one line.
func logTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > 2048 {
		_, _ = f.Seek(-2048, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return strings.Join(strings.Fields(strings.TrimSpace(string(b))), " ")
}

// ConnectOptions configures Connect.
type ConnectOptions struct {
	// AutoStart starts a daemon when none runs.
	AutoStart bool
	Start     StartOptions
}

// Connect returns a client of the user's daemon (CORDON_HOST, when set,
// names it), starting the daemon first when o.AutoStart is set and none
// runs.
func Connect(ctx context.Context, o ConnectOptions) (*client.Client, Status, error) {
	p, err := Locate()
	if err != nil {
		return nil, Status{}, err
	}
	var st Status
	if o.AutoStart {
		st, err = Start(ctx, p, o.Start)
	} else {
		st, err = Probe(ctx, p)
		if err == nil && st.State != Running {
			base := ErrNotRunning
			switch {
			case st.Refused != nil:
				base = ErrRefused
			case st.State == Unresponsive:
				base = ErrUnresponsive
			}
			err = fmt.Errorf("%w: %s", base, st.Reason)
		}
	}
	if err != nil {
		return nil, st, err
	}
	return client.New(st.Endpoint), st, nil
}

// Stop asks the running daemon to shut down and waits (up to timeout) until
// it has released its lock, that is, until it has closed its sessions and
// removed its files. A daemon that does not answer but holds the lock gets
// SIGTERM, if its pid is known.
func Stop(ctx context.Context, p Paths, timeout time.Duration) (Status, error) {
	st, err := Probe(ctx, p)
	if err != nil {
		return st, err
	}
	switch st.State {
	case Stopped:
		return st, fmt.Errorf("%w: %s", ErrNotRunning, st.Reason)
	case Running:
		c := client.New(st.Endpoint)
		err := c.Shutdown(ctx)
		c.Close()
		if err != nil {
			return st, fmt.Errorf("asking the daemon to stop: %w", err)
		}
	case Unresponsive:
		if st.Pid <= 0 {
			return st, fmt.Errorf("%w, and its pid is unknown: %s", ErrUnresponsive, st.Reason)
		}
		if err := syscall.Kill(st.Pid, syscall.SIGTERM); err != nil {
			return st, fmt.Errorf("sending SIGTERM to pid %d: %w", st.Pid, err)
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		held, err := lockHeld(p.Lock)
		if err == nil && !held {
			return st, nil
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("the daemon (pid %d) still runs after %v", st.Pid, timeout)
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
