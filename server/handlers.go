package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/api"
	"github.com/cordon-sandbox/cordon/internal/apiconv"
	"github.com/cordon-sandbox/cordon/service"
)

// decode reads a JSON body into v; unknown fields are refused, so a typo
// ("timeout" for "timeout_ms") is an error, not a silent default. An empty
// body is an empty object.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, s.o.MaxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return err
		}
		return fmt.Errorf("%w: request body: %v", errBadRequest, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: request body: more than one JSON value", errBadRequest)
	}
	return nil
}

// sessionRef resolves a session id or name to the library's id.
func (s *Server) sessionRef(r *http.Request, ref string) (string, error) {
	if ref == "" {
		return "", fmt.Errorf("%w: session_id is required", errBadRequest)
	}
	lib, ok, err := s.ids.parseSession(ref)
	if ok || err != nil {
		return lib, err
	}
	list, err := s.o.Service.ListSessions(r.Context())
	if err != nil {
		return "", err
	}
	for _, si := range list {
		if si.Name == ref {
			return si.ID, nil
		}
	}
	return "", fmt.Errorf("session %q: %w", ref, service.ErrNotFound)
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var req api.SessionRequest
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, err)
		return
	}
	if err := checkName(req.Name); err != nil {
		s.fail(w, err)
		return
	}
	info, err := s.o.Service.CreateSession(r.Context(), s.spec(req))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, apiconv.APISession(s.ids.sessionInfo(info)))
}

// spec converts a session request; the daemon's default directory is "/"
// (nothing writable but the sandbox's own /tmp) when none is given.
func (s *Server) spec(req api.SessionRequest) service.SessionSpec {
	spec := apiconv.SessionSpec(req)
	if spec.Dir == "" {
		spec.Dir = "/"
	}
	return spec
}

// checkName refuses names that could be read as an id.
func checkName(name string) error {
	if strings.ContainsAny(name, "./") {
		return fmt.Errorf("%w: session name %q: it may not contain '.' or '/'", errBadRequest, name)
	}
	return nil
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	list, err := s.o.Service.ListSessions(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	out := api.Sessions{Sessions: make([]api.Session, len(list))}
	for i, si := range list {
		out.Sessions[i] = apiconv.APISession(s.ids.sessionInfo(si))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	id, err := s.sessionRef(r, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	info, err := s.o.Service.GetSession(r.Context(), id)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, apiconv.APISession(s.ids.sessionInfo(info)))
}

func (s *Server) closeSession(w http.ResponseWriter, r *http.Request) {
	id, err := s.sessionRef(r, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	if err := s.o.Service.CloseSession(r.Context(), id); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// exec runs a command to completion. The request's context ends when the
// client disconnects: the library then kills the command's tree.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	var req api.ExecRequest
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, err)
		return
	}
	if enc := r.URL.Query().Get("encoding"); enc != "" {
		req.Encoding = enc
	}
	lreq, err := apiconv.ExecRequest(req)
	if err != nil {
		s.fail(w, err)
		return
	}
	if req.SessionID != "" {
		if lreq.Session, err = s.sessionRef(r, req.SessionID); err != nil {
			s.fail(w, err)
			return
		}
	} else {
		var sr api.SessionRequest
		if req.Sandbox != nil {
			sr = *req.Sandbox
		}
		spec := s.spec(sr)
		lreq.Sandbox = &spec
	}
	var st *execStream
	switch r.URL.Query().Get("stream") {
	case "1", "true", "yes":
		st = &execStream{w: w, rc: http.NewResponseController(w), encoding: req.Encoding}
		st.conv = func(d service.ExecDecision) service.ExecDecision {
			return s.ids.decisions(lreq.Session, []service.ExecDecision{d})[0]
		}
		lreq.Output, lreq.OnDecision = st.output, st.decision
	}
	res, err := s.o.Service.Exec(r.Context(), lreq)
	if st != nil && st.started() {
		// The answer is already a stream: the result (or the failure)
		// is its last event.
		st.finish(s, res, err, lreq.Session, r.Context().Err() != nil)
		return
	}
	if err != nil && (res.ExitedAt.IsZero() || r.Context().Err() != nil) {
		// Nothing ran, or nobody is listening any more. A command whose
		// session was closed under it has a result (lost: true): send it.
		s.fail(w, err)
		return
	}
	res.Decisions = s.ids.decisions(lreq.Session, res.Decisions)
	writeJSON(w, http.StatusOK, apiconv.APIExecResult(res, req.Encoding))
}

// answerAsk answers a session's pending ask (an "ask" decision with an
// ask_id on its decision stream).
func (s *Server) answerAsk(w http.ResponseWriter, r *http.Request) {
	aa, ok := s.o.Service.(AskAnswerer)
	if !ok {
		writeError(w, http.StatusNotImplemented, api.CodeUnsupported, "this service cannot answer asks")
		return
	}
	sess, err := s.sessionRef(r, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	var body api.AskAnswer
	if err := s.decode(w, r, &body); err != nil {
		s.fail(w, err)
		return
	}
	if err := aa.AnswerAsk(r.Context(), sess, r.PathValue("ask"), service.AskAnswer{Allow: body.Allow, Remember: body.Remember}); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) startProcess(w http.ResponseWriter, r *http.Request) {
	var req api.StartRequest
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, err)
		return
	}
	lreq, err := apiconv.StartRequest(req)
	if err != nil {
		s.fail(w, err)
		return
	}
	if lreq.Session, err = s.sessionRef(r, req.SessionID); err != nil {
		s.fail(w, err)
		return
	}
	// r's context only covers the start: a client gone before it got the
	// id gets no process; once started, the process outlives the request.
	info, err := s.o.Service.Start(r.Context(), lreq)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, apiconv.APIProcess(s.ids.processInfo(info)))
}

func (s *Server) listProcesses(w http.ResponseWriter, r *http.Request) {
	var sessions []string
	if ref := r.URL.Query().Get("session_id"); ref != "" {
		id, err := s.sessionRef(r, ref)
		if err != nil {
			s.fail(w, err)
			return
		}
		sessions = []string{id}
	} else {
		list, err := s.o.Service.ListSessions(r.Context())
		if err != nil {
			s.fail(w, err)
			return
		}
		for _, si := range list {
			sessions = append(sessions, si.ID)
		}
	}
	out := api.Processes{Processes: []api.Process{}}
	for _, id := range sessions {
		ps, err := s.o.Service.ListProcesses(r.Context(), id)
		if err != nil {
			if len(sessions) > 1 && errors.Is(err, service.ErrNotFound) {
				continue // closed meanwhile
			}
			s.fail(w, err)
			return
		}
		for _, p := range ps {
			out.Processes = append(out.Processes, apiconv.APIProcess(s.ids.processInfo(p)))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// process resolves the {id} path parameter.
func (s *Server) process(r *http.Request) (session, process string, err error) {
	return s.ids.parseProcess(r.PathValue("id"))
}

func (s *Server) getProcess(w http.ResponseWriter, r *http.Request) {
	sess, proc, err := s.process(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	info, err := s.o.Service.GetProcess(r.Context(), sess, proc)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, apiconv.APIProcess(s.ids.processInfo(info)))
}

func (s *Server) wait(w http.ResponseWriter, r *http.Request) {
	sess, proc, err := s.process(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	exit, err := s.o.Service.Wait(r.Context(), sess, proc)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, apiconv.APIExit(exit))
}

func (s *Server) signal(w http.ResponseWriter, r *http.Request) {
	sess, proc, err := s.process(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var req api.SignalRequest
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, err)
		return
	}
	sig, err := service.ParseSignal(string(req.Signal))
	if err != nil {
		s.fail(w, err)
		return
	}
	scope := service.Scope(req.Scope)
	if scope == "" {
		scope = service.ScopeTree
	}
	if err := s.o.Service.Signal(r.Context(), sess, proc, sig, scope); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) kill(w http.ResponseWriter, r *http.Request) {
	sess, proc, err := s.process(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var req api.KillRequest
	if err := s.decode(w, r, &req); err != nil {
		s.fail(w, err)
		return
	}
	grace := int64(api.DefaultKillGraceMs)
	if req.GraceMs != nil {
		if *req.GraceMs < 0 {
			s.fail(w, fmt.Errorf("%w: grace_ms must not be negative", errBadRequest))
			return
		}
		grace = *req.GraceMs
	}
	exit, err := s.o.Service.Kill(r.Context(), sess, proc, time.Duration(grace)*time.Millisecond)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, apiconv.APIExit(exit))
}

// stdin copies the body to the process's stdin as it arrives; ?close=1
// closes it afterwards (the process reads EOF).
func (s *Server) stdin(w http.ResponseWriter, r *http.Request) {
	sess, proc, err := s.process(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	buf := make([]byte, 64<<10)
	for {
		n, rerr := r.Body.Read(buf)
		if n > 0 {
			if err := s.o.Service.WriteStdin(r.Context(), sess, proc, buf[:n]); err != nil {
				s.fail(w, err)
				return
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			s.fail(w, fmt.Errorf("%w: reading the body: %v", errBadRequest, rerr))
			return
		}
	}
	if q := r.URL.Query().Get("close"); q == "1" || q == "true" {
		if err := s.o.Service.CloseStdin(r.Context(), sess, proc); err != nil {
			s.fail(w, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}
