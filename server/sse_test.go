package server

import (
	"context"
	"iter"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quietProcess is a running process with no event yet, whose event
// source never yields.
type quietProcess struct{ service.Service }

func (quietProcess) GetProcess(context.Context, string, string) (service.ProcessInfo, error) {
	return service.ProcessInfo{ID: "p-1", Session: "s-1", State: service.ProcessRunning}, nil
}

func (quietProcess) Events(ctx context.Context, _, _ string, _ uint64) iter.Seq2[service.Event, error] {
	return func(func(service.Event, error) bool) { <-ctx.Done() }
}

// TestEventsWithoutFollowOfAQuietProcessEnds: without follow=1 the events
// of a process that has none yet are an empty stream, not a follow (the
// cursor 0 used to mean "no bound").
func TestEventsWithoutFollowOfAQuietProcessEnds(t *testing.T) {
	s := New(Options{Service: quietProcess{}, InstanceID: "0123abcd"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := httptest.NewRequest("GET", "/v1/processes/p-1.s-1.0123abcd/events", nil).WithContext(ctx)
	req.Host = "localhost"
	w := httptest.NewRecorder()
	s.Mux().ServeHTTP(w, req)
	require.NoError(t, ctx.Err(), "the request ended by itself")
	assert.Equal(t, 200, w.Code, w.Body.String())
	assert.True(t, strings.HasSuffix(w.Body.String(), "event: end\ndata: {}\n\n"), w.Body.String())
}
