package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"time"

	"github.com/cordon-sandbox/cordon/api"
	"github.com/cordon-sandbox/cordon/internal/apiconv"
	"github.com/cordon-sandbox/cordon/service"
)

// keepAlive is how often an idle followed stream gets a comment line, so
// a dead client is noticed and proxies keep the connection.
const keepAlive = 15 * time.Second

// cursor reads where a stream resumes: Last-Event-ID (what an EventSource
// sends when it reconnects) or ?after=N; 0 is the beginning.
func cursor(r *http.Request) (uint64, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: cursor %q is not a number", errBadRequest, v)
	}
	return n, nil
}

func following(r *http.Request) bool {
	switch r.URL.Query().Get("follow") {
	case "1", "true", "yes":
		return true
	}
	return false
}

// events streams a process's events. Without ?follow=1 it sends what has
// happened so far and ends; with it, it ends after the exit event.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	sess, proc, err := s.process(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	after, err := cursor(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	info, err := s.o.Service.GetProcess(r.Context(), sess, proc)
	if err != nil {
		s.fail(w, err)
		return
	}
	var until uint64 // 0: until the stream ends by itself
	if !following(r) && info.State != service.ProcessExited {
		if info.LastEvent <= after {
			// Nothing new so far: the answer is an empty stream. (until
			// = after would be 0 for a process with no event yet, which
			// means "follow" to stream.)
			s.stream(w, r, after, 0, nil, nil) // a nil source: an empty stream
			return
		}
		until = info.LastEvent
	}
	s.stream(w, r, after, until, func(ctx context.Context) iter.Seq2[service.Event, error] {
		return s.o.Service.Events(ctx, sess, proc, after)
	}, func(ev service.Event) api.Event {
		if ev.Decision != nil {
			d := s.ids.decisions(sess, []service.ExecDecision{*ev.Decision})[0]
			ev.Decision = &d
		}
		return apiconv.APIEvent(ev)
	})
}

// decisions streams a session's exec decisions. Without ?follow=1 it sends
// those made so far; with it, it ends when the session ends.
func (s *Server) decisions(w http.ResponseWriter, r *http.Request) {
	ds, ok := s.o.Service.(DecisionStreamer)
	if !ok {
		writeError(w, http.StatusNotImplemented, api.CodeUnsupported, "this service cannot stream decisions")
		return
	}
	sess, err := s.sessionRef(r, r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	after, err := cursor(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	info, err := s.o.Service.GetSession(r.Context(), sess)
	if err != nil {
		s.fail(w, err)
		return
	}
	var until uint64
	if !following(r) {
		until = max(info.LastDecision, after)
	}
	s.stream(w, r, after, until, func(ctx context.Context) iter.Seq2[service.Event, error] {
		return ds.Decisions(ctx, sess, after)
	}, func(ev service.Event) api.Event {
		if ev.Decision != nil {
			d := s.ids.decisions(sess, []service.ExecDecision{*ev.Decision})[0]
			ev.Decision = &d
		}
		return apiconv.APIEvent(ev)
	})
}

// stream writes events as server-sent events (id: cursor, event: kind,
// data: JSON) until the source ends, the cursor reaches until (when not 0),
// or the client leaves. A stream that ends normally ends with an "end"
// event, so a client can tell it from a dropped connection.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, after, until uint64,
	source func(context.Context) iter.Seq2[service.Event, error], conv func(service.Event) api.Event) {
	h := w.Header()
	h.Set("Content-Type", api.EventStreamType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	end := func() {
		fmt.Fprint(w, "event: end\ndata: {}\n\n")
		_ = rc.Flush()
	}
	if source == nil || (until != 0 && until <= after) {
		end()
		return
	}

	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	type item struct {
		ev  service.Event
		err error
	}
	ch := make(chan item)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		for ev, err := range source(ctx) {
			select {
			case ch <- item{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		cancel()
		<-done
	}()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case it, ok := <-ch:
			if !ok {
				if r.Context().Err() == nil {
					end()
				}
				return
			}
			if it.err != nil {
				if ctx.Err() == nil {
					status, code := classify(it.err)
					b, _ := json.Marshal(api.Error{Code: code, Message: it.err.Error()})
					fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
					_ = rc.Flush()
					s.o.Logger.Debug("event stream ended with an error", "status", status, "err", it.err)
				}
				return
			}
			b, err := json.Marshal(conv(it.ev))
			if err != nil {
				return
			}
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", it.ev.Seq, it.ev.Kind, b); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			if until != 0 && it.ev.Seq >= until {
				end()
				return
			}
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// execStream is a POST /v1/exec answered as a stream (?stream=1): the
// command's output as stdout and stderr events while it runs, then one
// "result" event with the ExecResult, then "end". Until the first output
// nothing is written, so a request that fails before the command runs
// gets the usual JSON error with its status.
type execStream struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	encoding string
	conv     func(service.ExecDecision) service.ExecDecision // the server's ids
	seq      uint64                                          // guarded by Exec, which serialises output calls
	begun    bool                                            // guarded as seq
	broken   bool                                            // guarded as seq: the client went away
}

func (e *execStream) begin() {
	if e.begun {
		return
	}
	e.begun = true
	h := e.w.Header()
	h.Set("Content-Type", api.EventStreamType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	e.w.WriteHeader(http.StatusOK)
}

// started reports whether the answer is a stream: Exec has returned, so
// no output call runs any more.
func (e *execStream) started() bool { return e.begun }

// output is the request's ExecRequest.Output.
func (e *execStream) output(kind service.EventKind, data []byte) {
	if e.broken {
		return
	}
	e.begin()
	e.seq++
	ev := apiconv.APIEvent(service.Event{Seq: e.seq, Time: time.Now(), Kind: kind, Data: data})
	if e.encoding == api.EncodingBase64 && ev.Text != nil {
		b64 := base64.StdEncoding.EncodeToString(data)
		ev.Text, ev.DataB64 = nil, &b64
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	if _, err := fmt.Fprintf(e.w, "id: %d\nevent: %s\ndata: %s\n\n", e.seq, kind, b); err != nil {
		e.broken = true
		return
	}
	if e.rc.Flush() != nil {
		e.broken = true
	}
}

// decision is the request's ExecRequest.OnDecision: a "decision" event.
func (e *execStream) decision(d service.ExecDecision) {
	if e.broken {
		return
	}
	e.begin()
	e.seq++
	d = e.conv(d)
	b, err := json.Marshal(apiconv.APIEvent(service.Event{Seq: e.seq, Time: d.Time, Kind: service.EventDecision, Decision: &d}))
	if err != nil {
		return
	}
	if _, err := fmt.Fprintf(e.w, "id: %d\nevent: %s\ndata: %s\n\n", e.seq, service.EventDecision, b); err != nil {
		e.broken = true
		return
	}
	if e.rc.Flush() != nil {
		e.broken = true
	}
}

// finish sends the result, or the error, and the end of the stream.
func (e *execStream) finish(s *Server, res service.ExecResult, err error, session string, gone bool) {
	if gone || e.broken {
		return
	}
	if err != nil && res.ExitedAt.IsZero() {
		_, code := classify(err)
		b, _ := json.Marshal(api.Error{Code: code, Message: err.Error()})
		fmt.Fprintf(e.w, "event: error\ndata: %s\n\n", b)
		_ = e.rc.Flush()
		return
	}
	res.Decisions = s.ids.decisions(session, res.Decisions)
	b, mErr := json.Marshal(apiconv.APIExecResult(res, e.encoding))
	if mErr != nil {
		return
	}
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", api.EventResult, b)
	fmt.Fprint(e.w, "event: end\ndata: {}\n\n")
	_ = e.rc.Flush()
}
