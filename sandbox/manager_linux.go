package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Options configures a Manager. Zero fields take the defaults noted.
type Options struct {
	// Env is the sessions' default environment (default: os.Environ()).
	// Whatever it and a request hold, a workload never sees cordon's own
	// CORDON_* variables (runner.WorkloadEnv).
	Env []string
	// Dir is the sessions' default working directory (default: the
	// current directory).
	Dir string
	// KillGrace is the default time between SIGTERM and SIGKILL (5s).
	KillGrace time.Duration
	// DrainTimeout bounds how long output is read after a leader exited
	// while something it started still holds the pipes (500ms).
	DrainTimeout time.Duration
	// ExitRetention is how long a started process's record (its exit and
	// events) is kept after the exit; then it is not found (10m).
	ExitRetention time.Duration
	// EventBuffer bounds, in bytes, the events retained per process; the
	// oldest are dropped first (1 MiB).
	EventBuffer int
	// MaxOutput is Exec's default bound on each of stdout and stderr
	// (16 MiB).
	MaxOutput int
	// Exe is the binary that plays the sandbox's init (default: this
	// executable; its main must dispatch runner.InitArg).
	Exe string
	// Hide lists directories, and HideFiles files, that every session's
	// sandbox must not see (the daemon's socket and token; see
	// bwrap.Spec.Hide). Each must exist when a session starts.
	Hide, HideFiles []string
	Logger          *slog.Logger
}

// Manager is the in-process Service: it owns sessions. Its methods are safe
// for concurrent use.
type Manager struct {
	opts Options

	mu       sync.Mutex
	sessions map[string]*Session // guarded by mu
	names    map[string]bool     // guarded by mu: names taken, including by sessions being created
	closed   bool                // guarded by mu
}

var _ Service = (*Manager)(nil)

// NewManager returns a Manager with o's defaults filled in.
func NewManager(o Options) *Manager {
	if o.Env == nil {
		o.Env = os.Environ()
	}
	if o.Dir == "" {
		o.Dir, _ = os.Getwd()
	}
	if o.KillGrace <= 0 {
		o.KillGrace = 5 * time.Second
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 500 * time.Millisecond
	}
	if o.ExitRetention <= 0 {
		o.ExitRetention = 10 * time.Minute
	}
	if o.EventBuffer <= 0 {
		o.EventBuffer = 1 << 20
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = 16 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{opts: o, sessions: make(map[string]*Session), names: make(map[string]bool)}
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// NewSession starts a session. A name already taken, also by a session
// still being created, gives ErrExists before any sandbox is started.
func (m *Manager) NewSession(ctx context.Context, spec SessionSpec) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	if spec.Name != "" {
		if m.names[spec.Name] {
			m.mu.Unlock()
			return nil, fmt.Errorf("session %q: %w", spec.Name, ErrExists)
		}
		m.names[spec.Name] = true
	}
	m.mu.Unlock()
	s, err := newSession(ctx, m, newID("s-"), spec)
	m.mu.Lock()
	if err == nil && !m.closed {
		m.sessions[s.id] = s
		m.mu.Unlock()
		return s, nil
	}
	if spec.Name != "" {
		delete(m.names, spec.Name)
	}
	m.mu.Unlock()
	if err == nil { // the manager was closed meanwhile
		_ = s.Close(context.Background())
		err = ErrClosed
	}
	return nil, err
}

// Session returns an open (or lost, not yet closed) session.
func (m *Manager) Session(id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sessions[id]; s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
}

// Sessions lists the sessions, oldest first.
func (m *Manager) Sessions() []*Session {
	m.mu.Lock()
	out := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		out = append(out, s)
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b *Session) int { return a.createdAt.Compare(b.createdAt) })
	return out
}

func (m *Manager) remove(s *Session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions[s.id] == s {
		delete(m.sessions, s.id)
		if s.name != "" {
			delete(m.names, s.name)
		}
	}
}

// Close closes every session; later NewSession calls get ErrClosed.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range m.Sessions() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Close(ctx)
		}()
	}
	wg.Wait()
	return nil
}

// CreateSession implements Service.
func (m *Manager) CreateSession(ctx context.Context, spec SessionSpec) (SessionInfo, error) {
	s, err := m.NewSession(ctx, spec)
	if err != nil {
		return SessionInfo{}, err
	}
	return s.Info(), nil
}

// GetSession implements Service.
func (m *Manager) GetSession(_ context.Context, id string) (SessionInfo, error) {
	s, err := m.Session(id)
	if err != nil {
		return SessionInfo{}, err
	}
	return s.Info(), nil
}

// ListSessions implements Service.
func (m *Manager) ListSessions(context.Context) ([]SessionInfo, error) {
	ss := m.Sessions()
	out := make([]SessionInfo, len(ss))
	for i, s := range ss {
		out[i] = s.Info()
	}
	return out, nil
}

// CloseSession implements Service.
func (m *Manager) CloseSession(ctx context.Context, id string) error {
	s, err := m.Session(id)
	if err != nil {
		return err
	}
	return s.Close(ctx)
}

// AnswerAsk answers a pending ask of session (SessionSpec.AskTimeout; the
// ask's id is the "ask" decision's AskID).
func (m *Manager) AnswerAsk(_ context.Context, session, ask string, a AskAnswer) error {
	s, err := m.Session(session)
	if err != nil {
		return err
	}
	return s.AnswerAsk(ask, a)
}

// Exec implements Service. Without req.Session the command runs in a
// throwaway sandbox made from req.Sandbox, closed before Exec returns.
func (m *Manager) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	if req.Session != "" {
		s, err := m.Session(req.Session)
		if err != nil {
			return ExecResult{}, err
		}
		return s.Exec(ctx, req)
	}
	if _, err := commandOf(req.Argv, req.Script); err != nil {
		return ExecResult{}, err
	}
	var spec SessionSpec
	if req.Sandbox != nil {
		spec = *req.Sandbox
		spec.Name = "" // a throwaway sandbox takes no name
	}
	s, err := m.NewSession(ctx, spec)
	if err != nil {
		return ExecResult{}, err
	}
	defer s.Close(context.Background())
	return s.Exec(ctx, req)
}

// Start implements Service.
func (m *Manager) Start(ctx context.Context, req StartRequest) (ProcessInfo, error) {
	s, err := m.Session(req.Session)
	if err != nil {
		return ProcessInfo{}, err
	}
	p, err := s.Start(ctx, req)
	if err != nil {
		return ProcessInfo{}, err
	}
	return p.Info(), nil
}

func (m *Manager) process(session, id string) (*Process, error) {
	s, err := m.Session(session)
	if err != nil {
		return nil, err
	}
	return s.Process(id)
}

// GetProcess implements Service.
func (m *Manager) GetProcess(_ context.Context, session, id string) (ProcessInfo, error) {
	p, err := m.process(session, id)
	if err != nil {
		return ProcessInfo{}, err
	}
	return p.Info(), nil
}

// ListProcesses implements Service.
func (m *Manager) ListProcesses(_ context.Context, session string) ([]ProcessInfo, error) {
	s, err := m.Session(session)
	if err != nil {
		return nil, err
	}
	ps := s.Processes()
	out := make([]ProcessInfo, len(ps))
	for i, p := range ps {
		out[i] = p.Info()
	}
	return out, nil
}

// Events implements Service.
func (m *Manager) Events(ctx context.Context, session, id string, after uint64) iter.Seq2[Event, error] {
	p, err := m.process(session, id)
	if err != nil {
		return func(yield func(Event, error) bool) { yield(Event{}, err) }
	}
	return p.Events(ctx, after)
}

// Wait implements Service.
func (m *Manager) Wait(ctx context.Context, session, id string) (ExitInfo, error) {
	p, err := m.process(session, id)
	if err != nil {
		return ExitInfo{}, err
	}
	return p.Wait(ctx)
}

// Signal implements Service.
func (m *Manager) Signal(ctx context.Context, session, id string, sig syscall.Signal, scope Scope) error {
	if err := checkSignal(sig); err != nil {
		return err
	}
	p, err := m.process(session, id)
	if err != nil {
		return err
	}
	return p.Signal(ctx, sig, scope)
}

// Kill implements Service.
func (m *Manager) Kill(ctx context.Context, session, id string, grace time.Duration) (ExitInfo, error) {
	p, err := m.process(session, id)
	if err != nil {
		return ExitInfo{}, err
	}
	return p.Kill(ctx, grace)
}

// WriteStdin implements Service.
func (m *Manager) WriteStdin(ctx context.Context, session, id string, data []byte) error {
	p, err := m.process(session, id)
	if err != nil {
		return err
	}
	_, err = p.writeStdin(ctx, data)
	return err
}

// CloseStdin implements Service.
func (m *Manager) CloseStdin(_ context.Context, session, id string) error {
	p, err := m.process(session, id)
	if err != nil {
		return err
	}
	return p.closeStdin()
}
