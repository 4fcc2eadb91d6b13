package server

import (
	"context"
	"embed"
	"iter"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/cordon-sandbox/cordon/api"
	"github.com/cordon-sandbox/cordon/service"
)

//go:embed openapi.yaml
var openapiFS embed.FS

// OpenAPI returns the API's OpenAPI document (YAML).
func OpenAPI() []byte {
	b, _ := openapiFS.ReadFile("openapi.yaml")
	return b
}

// DecisionStreamer is a Service that can stream a session's exec decisions
// (service.Manager and client.Client are).
type DecisionStreamer interface {
	Decisions(ctx context.Context, session string, after uint64) iter.Seq2[service.Event, error]
}

// AskAnswerer is a Service whose sessions' pending asks a client can
// answer (sandbox.Manager and client.Client are).
type AskAnswerer interface {
	AnswerAsk(ctx context.Context, session, ask string, a service.AskAnswer) error
}

// Options configures a Server.
type Options struct {
	Service service.Service
	// Version is reported by GET /v1/health.
	Version string
	// InstanceID is embedded in every id handed out; empty means a random
	// one (NewInstanceID).
	InstanceID string
	// Transport is api.TransportUnix or api.TransportTCP: it selects the
	// access rule (peer uid, or bearer token).
	Transport string
	// Token is the bearer token TCP requests must carry.
	Token string
	// Socket is the Unix socket's path; a Host header naming it is
	// accepted.
	Socket string
	// UID is the uid Unix-socket peers must have; negative means
	// os.Geteuid().
	UID int
	// Shutdown is called (once, on its own goroutine) by POST /v1/shutdown.
	Shutdown func()
	// MaxBody bounds JSON request bodies (default 64 MiB).
	MaxBody int64
	Logger  *slog.Logger
}

// Server serves the API. Create it with New.
type Server struct {
	o        Options
	ids      ids
	mux      *http.ServeMux
	routes   []string
	started  time.Time
	closing  atomic.Bool
	shutOnce atomic.Bool
}

// New returns a Server for o.
func New(o Options) *Server {
	if o.InstanceID == "" {
		o.InstanceID = NewInstanceID()
	}
	if o.UID < 0 {
		o.UID = os.Geteuid()
	}
	if o.MaxBody <= 0 {
		o.MaxBody = 64 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{o: o, ids: ids{inst: o.InstanceID}, mux: http.NewServeMux(), started: time.Now()}
	s.handle("GET "+api.PathHealth, s.health)
	s.handle("GET "+api.PathOpenAPI, s.openapi)
	s.handle("POST "+api.PathSessions, s.createSession)
	s.handle("GET "+api.PathSessions, s.listSessions)
	s.handle("GET "+api.PathSession, s.getSession)
	s.handle("DELETE "+api.PathSession, s.closeSession)
	s.handle("GET "+api.PathDecisions, s.decisions)
	s.handle("POST "+api.PathAsk, s.answerAsk)
	s.handle("POST "+api.PathExec, s.exec)
	s.handle("POST "+api.PathProcesses, s.startProcess)
	s.handle("GET "+api.PathProcesses, s.listProcesses)
	s.handle("GET "+api.PathProcess, s.getProcess)
	s.handle("GET "+api.PathProcessEvents, s.events)
	s.handle("POST "+api.PathProcessWait, s.wait)
	s.handle("POST "+api.PathProcessSignal, s.signal)
	s.handle("POST "+api.PathProcessKill, s.kill)
	s.handle("POST "+api.PathProcessStdin, s.stdin)
	s.handle("POST "+api.PathShutdown, s.shutdown)
	s.mux.HandleFunc("/", s.unmatched)
	return s
}

func (s *Server) handle(pattern string, h http.HandlerFunc) {
	s.routes = append(s.routes, pattern)
	s.mux.HandleFunc(pattern, h)
}

// InstanceID is the id embedded in every id this server hands out.
func (s *Server) InstanceID() string { return s.o.InstanceID }

// Routes lists the registered patterns ("GET /v1/health", ...).
func (s *Server) Routes() []string { return append([]string(nil), s.routes...) }

// Mux is the route table, without the access rules (for tests that check
// which pattern a request matches).
func (s *Server) Mux() *http.ServeMux { return s.mux }

// Handler is the API with the access rules in front.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			s.o.Logger.Debug("request", "method", r.Method, "path", r.URL.Path, "status", rec.status, "took", time.Since(start))
		}()
		if !s.allowed(rec, r) {
			return
		}
		if s.closing.Load() && r.URL.Path != api.PathHealth {
			writeError(rec, http.StatusServiceUnavailable, api.CodeShutdown, "the daemon is shutting down")
			return
		}
		s.mux.ServeHTTP(rec, r)
	})
}

// statusRecorder remembers the status for the request log and passes
// flushes through (server-sent events).
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (s *Server) unmatched(w http.ResponseWriter, r *http.Request) {
	// The catch-all matches every method: say 405 when another method
	// would have matched.
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/" && pattern != "" {
			w.Header().Set("Allow", m)
			writeError(w, http.StatusMethodNotAllowed, api.CodeMethod, r.Method+" is not allowed on "+r.URL.Path)
			return
		}
	}
	writeError(w, http.StatusNotFound, api.CodeNotFound, "no route "+r.Method+" "+r.URL.Path)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	n := 0
	if list, err := s.o.Service.ListSessions(r.Context()); err == nil {
		n = len(list)
	}
	writeJSON(w, http.StatusOK, api.Health{
		Pid: os.Getpid(), Version: s.o.Version, InstanceID: s.o.InstanceID,
		Transport: s.o.Transport, StartedAt: s.started, Sessions: n,
	})
}

func (s *Server) openapi(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(OpenAPI())
}

func (s *Server) shutdown(w http.ResponseWriter, _ *http.Request) {
	s.closing.Store(true)
	writeJSON(w, http.StatusAccepted, api.Shutdown{ShuttingDown: true})
	if s.o.Shutdown != nil && s.shutOnce.CompareAndSwap(false, true) {
		go s.o.Shutdown()
	}
}
