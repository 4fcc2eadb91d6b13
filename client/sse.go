package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/cordon-sandbox/cordon/api"
	"github.com/cordon-sandbox/cordon/internal/apiconv"
	"github.com/cordon-sandbox/cordon/service"
)

// stream reads a server-sent event stream. untilExit: the stream must end
// with an exit event; ending before it is an error (the daemon went away).
func (c *Client) stream(ctx context.Context, path string, untilExit bool) iter.Seq2[service.Event, error] {
	return func(yield func(service.Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		resp, err := c.request(ctx, "GET", path, nil)
		if err != nil {
			yield(service.Event{}, err)
			return
		}
		defer resp.Body.Close()
		r := newSSEReader(resp.Body)
		for {
			msg, err := r.next()
			if err != nil {
				switch {
				case ctx.Err() != nil:
					yield(service.Event{}, ctx.Err())
				case errors.Is(err, io.EOF) && !untilExit:
				case errors.Is(err, io.EOF):
					yield(service.Event{}, fmt.Errorf("%w: the event stream ended before the exit", ErrUnavailable))
				default:
					yield(service.Event{}, fmt.Errorf("%w: reading events: %v", ErrUnavailable, err))
				}
				return
			}
			if msg.event == "end" {
				return
			}
			if msg.event == "error" {
				var e api.Error
				_ = json.Unmarshal([]byte(msg.data), &e)
				yield(service.Event{}, &Error{Code: e.Code, Message: e.Message})
				return
			}
			var wire api.Event
			if err := json.Unmarshal([]byte(msg.data), &wire); err != nil {
				yield(service.Event{}, fmt.Errorf("event %s: %w", msg.id, err))
				return
			}
			ev, err := apiconv.Event(wire)
			if !yield(ev, err) || err != nil {
				return
			}
			if ev.Kind == service.EventExit {
				return
			}
		}
	}
}

type sseMessage struct{ id, event, data string }

type sseReader struct{ sc *bufio.Scanner }

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	return &sseReader{sc: sc}
}

// next returns the next message (comments and empty messages skipped).
func (r *sseReader) next() (sseMessage, error) {
	var m sseMessage
	var data []string
	have := false
	for r.sc.Scan() {
		line := r.sc.Text()
		if line == "" {
			if have {
				m.data = strings.Join(data, "\n")
				return m, nil
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			m.id = value
		case "event":
			m.event = value
		case "data":
			data = append(data, value)
			have = true
		}
	}
	if err := r.sc.Err(); err != nil {
		return m, err
	}
	return m, io.EOF
}

// execStream runs an Exec whose output is streamed (POST /v1/exec?stream=1):
// stdout and stderr events go to req.Output as they arrive, the "result"
// event is the result. A command that printed nothing is answered with
// the plain JSON result.
func (c *Client) execStream(ctx context.Context, req service.ExecRequest) (service.ExecResult, error) {
	resp, err := c.request(ctx, "POST", api.PathExec+"?stream=1", apiconv.APIExecRequest(req))
	if err != nil {
		return service.ExecResult{}, err
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), api.EventStreamType) {
		var out api.ExecResult
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			if ctx.Err() != nil {
				return service.ExecResult{}, ctx.Err()
			}
			return service.ExecResult{}, fmt.Errorf("reading the answer to POST %s: %w", api.PathExec, err)
		}
		return apiconv.ExecResult(out)
	}
	r := newSSEReader(resp.Body)
	for {
		msg, err := r.next()
		if err != nil {
			if ctx.Err() != nil {
				return service.ExecResult{}, ctx.Err()
			}
			return service.ExecResult{}, fmt.Errorf("%w: the exec stream ended before the result: %v", ErrUnavailable, err)
		}
		switch msg.event {
		case string(service.EventStdout), string(service.EventStderr):
			if req.Output == nil {
				continue
			}
			var wire api.Event
			if err := json.Unmarshal([]byte(msg.data), &wire); err != nil {
				return service.ExecResult{}, fmt.Errorf("exec output event %s: %w", msg.id, err)
			}
			ev, err := apiconv.Event(wire)
			if err != nil {
				return service.ExecResult{}, err
			}
			req.Output(ev.Kind, ev.Data)
		case string(service.EventDecision):
			var wire api.Event
			if err := json.Unmarshal([]byte(msg.data), &wire); err != nil || wire.Decision == nil {
				return service.ExecResult{}, fmt.Errorf("exec decision event %s: %v", msg.id, err)
			}
			if req.OnDecision != nil {
				req.OnDecision(apiconv.Decision(*wire.Decision))
			}
		case api.EventResult:
			var out api.ExecResult
			if err := json.Unmarshal([]byte(msg.data), &out); err != nil {
				return service.ExecResult{}, fmt.Errorf("exec result: %w", err)
			}
			return apiconv.ExecResult(out)
		case "error":
			var e api.Error
			_ = json.Unmarshal([]byte(msg.data), &e)
			return service.ExecResult{}, &Error{Code: e.Code, Message: e.Message}
		}
	}
}
