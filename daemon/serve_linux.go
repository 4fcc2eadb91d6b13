package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cordon-sandbox/cordon/api"
	"github.com/cordon-sandbox/cordon/client"
	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/cordon-sandbox/cordon/server"
)

// RunningError: another daemon holds the lock.
type RunningError struct{ Pid int }

func (e *RunningError) Error() string {
	if e.Pid > 0 {
		return fmt.Sprintf("a cordon daemon is already running (pid %d)", e.Pid)
	}
	return "a cordon daemon is already running"
}

// ServeOptions configures Serve.
type ServeOptions struct {
	Paths Paths
	// Socket is an explicit Unix socket path (--socket); a failure to
	// bind it is an error, not a fallback.
	Socket string
	// Listen is an explicit TCP address on loopback (--listen
	// 127.0.0.1:0).
	Listen string
	// Version is reported by /v1/health.
	Version string
	// ShutdownTimeout bounds closing the sessions at shutdown (10s).
	ShutdownTimeout time.Duration
	// Ready receives the readiness line (nil: nobody waits for it).
	Ready *Notifier
	// Manager tunes the sessions (Dir, Env and Hide are set here).
	Manager sandbox.Options
	Logger  *slog.Logger
}

// Serve runs the daemon until ctx ends or a client asks it to shut down.
// It takes the lock (one daemon per user), removes what a dead daemon left,
// listens (Unix socket; TCP on loopback with a token when the socket
// cannot be created or its path is too long), writes daemon.json, reports
// readiness, and serves. At the end it closes every session (bounded by
// ShutdownTimeout) and removes its files before it releases the lock. Any
// start-up error is sent on the readiness pipe as well as returned.
func Serve(ctx context.Context, o ServeOptions) (err error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
	defer func() {
		var re *RunningError
		if errors.As(err, &re) {
			o.Ready.Running(re.Pid)
		} else if err != nil {
			o.Ready.Failed(err)
		}
	}()
	p := o.Paths

	// One daemon per user. A client probing the lock holds it shared for
	// an instant: retry briefly before concluding another daemon runs.
	lctx, cancel := context.WithTimeout(ctx, time.Second)
	lock, err := WaitLock(lctx, p.Lock)
	cancel()
	if err != nil {
		if held, herr := lockHeld(p.Lock); herr == nil && held {
			if d, derr := ReadDiscovery(p.Discovery); derr == nil {
				return &RunningError{Pid: d.Pid}
			}
			return &RunningError{}
		}
		return err
	}
	defer lock.Unlock()

	// Under the lock, whatever is left is a dead daemon's.
	if err := removeStale(p, o.Socket); err != nil {
		return err
	}
	l, ep, err := listen(p, o, log)
	if err != nil {
		return err
	}
	transport := api.TransportUnix
	if ep.Addr != "" {
		transport = api.TransportTCP
		if ep.Token, err = newToken(); err != nil {
			l.Close()
			return err
		}
	}
	instance := server.NewInstanceID()

	mo := o.Manager
	mo.Dir = "/"
	// The sandboxes' environment is the daemon's (mo.Env, else
	// os.Environ()); the runner strips CORDON_* from every workload's.
	// The sandboxes must not reach this daemon: its directory (socket,
	// token) is hidden, and so is an explicit socket elsewhere.
	mo.Hide, mo.HideFiles = HidePaths()
	if !containsString(mo.Hide, p.Dir) {
		mo.Hide = append(mo.Hide, p.Dir)
	}
	if ep.Socket != "" && !strings.HasPrefix(ep.Socket, p.Dir+"/") && !containsString(mo.HideFiles, ep.Socket) {
		mo.HideFiles = append(mo.HideFiles, ep.Socket)
	}
	if mo.Logger == nil {
		mo.Logger = log
	}
	mgr := sandbox.NewManager(mo)

	shutdown := make(chan struct{})
	var shutOnce sync.Once
	srv := server.New(server.Options{
		Service: mgr, Version: o.Version, InstanceID: instance, Transport: transport,
		Token: ep.Token, Socket: ep.Socket, UID: -1, Logger: log,
		Shutdown: func() { shutOnce.Do(func() { close(shutdown) }) },
	})
	hs := &http.Server{
		Handler:           srv.Handler(),
		ConnContext:       server.ConnContext,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}

	disc := Discovery{
		Pid: os.Getpid(), InstanceID: instance, Version: o.Version, StartedAt: time.Now().UTC(),
		Socket: ep.Socket, Addr: ep.Addr, Token: ep.Token,
	}
	disc.StartTime, _ = procStartTime(os.Getpid())
	if ep.Addr != "" {
		_, port, _ := net.SplitHostPort(ep.Addr)
		disc.Port, _ = strconv.Atoi(port)
	}
	if err := WriteDiscovery(p.Discovery, disc); err != nil {
		l.Close()
		return err
	}
	cleanup := func() {
		_ = os.Remove(p.Discovery)
		if ep.Socket != "" {
			_ = os.Remove(ep.Socket)
		}
	}

	served := make(chan error, 1)
	go func() { served <- hs.Serve(l) }()
	log.Info("serving", "endpoint", ep.String(), "pid", os.Getpid(), "instance", instance, "dir", p.Dir)
	o.Ready.Ready(os.Getpid())

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("stopping", "cause", context.Cause(ctx))
	case <-shutdown:
		log.Info("stopping: shutdown requested")
	case serveErr = <-served:
		log.Error("serving stopped", "err", serveErr)
	}

	// New connections are refused from here; every session is closed
	// (which ends the requests waiting on them); then the rest of the
	// requests get what is left of the deadline.
	sctx, scancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer scancel()
	l.Close()
	closed := make(chan struct{})
	go func() {
		_ = mgr.Close(sctx)
		close(closed)
	}()
	select {
	case <-closed:
	case <-sctx.Done():
		log.Error("sessions not closed within the shutdown timeout", "timeout", o.ShutdownTimeout)
	}
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	cleanup()
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	return nil
}

// removeStale removes a dead daemon's discovery file and socket. The
// caller holds the lock. An explicit socket path is removed only when it is
// a socket.
func removeStale(p Paths, explicit string) error {
	if err := os.Remove(p.Discovery); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale %s: %w", p.Discovery, err)
	}
	for _, s := range []string{p.Socket, explicit} {
		if s == "" {
			continue
		}
		fi, err := os.Lstat(s)
		if err != nil {
			continue
		}
		if fi.Mode()&fs.ModeSocket == 0 {
			if s == explicit {
				return fmt.Errorf("%s exists and is not a socket", s)
			}
			continue
		}
		if err := os.Remove(s); err != nil {
			return fmt.Errorf("removing stale socket %s: %w", s, err)
		}
	}
	return nil
}

// listen opens the daemon's listener: the explicit TCP address, the
// explicit socket, or the default socket with TCP on loopback as the
// fallback when it cannot be used.
func listen(p Paths, o ServeOptions, log *slog.Logger) (net.Listener, client.Endpoint, error) {
	if o.Listen != "" {
		if err := checkLoopback(o.Listen); err != nil {
			return nil, client.Endpoint{}, err
		}
		return listenTCP(o.Listen)
	}
	sock, explicit := p.Socket, o.Socket != ""
	if explicit {
		sock = o.Socket
	}
	if !SocketFits(sock) {
		err := fmt.Errorf("socket path %s is %d bytes long, over the %d that fit in sun_path", sock, len(sock), maxSocketPath)
		if explicit {
			return nil, client.Endpoint{}, err
		}
		log.Warn("using TCP on loopback instead of a Unix socket", "why", err)
		return listenTCP("127.0.0.1:0")
	}
	l, err := listenUnix(sock)
	if err != nil {
		if explicit {
			return nil, client.Endpoint{}, err
		}
		log.Warn("using TCP on loopback instead of a Unix socket", "why", err)
		return listenTCP("127.0.0.1:0")
	}
	return l, client.Endpoint{Socket: sock}, nil
}

func listenUnix(path string) (net.Listener, error) {
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on unix socket %s: %w", path, unwrapOp(err))
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	return l, nil
}

func listenTCP(addr string) (net.Listener, client.Endpoint, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, client.Endpoint{}, fmt.Errorf("listening on %s: %w", addr, unwrapOp(err))
	}
	return l, client.Endpoint{Addr: l.Addr().String()}, nil
}

// unwrapOp drops net.OpError's own rendering of the address, which the
// caller's message already has.
func unwrapOp(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return fmt.Errorf("%s: %w", oe.Op, oe.Err)
	}
	return err
}

// checkLoopback refuses addresses other machines could reach.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--listen %q: only loopback addresses (127.0.0.1, [::1]) are allowed", addr)
	}
	return nil
}

// newToken is 32 random bytes, hex.
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making a token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
