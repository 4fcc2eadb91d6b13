package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A session's decision stream has every exec decision of the session, its
// started processes' (named) and its Execs', resumes from a cursor, and
// ends when the session closes.
func TestSessionDecisions(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{Policy: "rules:\n  - deny: git push\n  - deny: cat /etc/shadow\n"})
	res := execIn(t, s, ExecRequest{Script: "git push origin main; true"})
	require.Len(t, res.Decisions, 1)
	assert.Empty(t, res.Decisions[0].Process, "an Exec's decisions name no process")
	p := start(t, s, StartRequest{Script: "cat /etc/shadow; echo done"})
	_, err := p.Wait(testCtx(t, 10*time.Second))
	require.NoError(t, err)
	info := s.Info()
	require.EqualValues(t, 2, info.LastDecision)

	var got []Event
	ctx, cancel := context.WithCancel(testCtx(t, 10*time.Second))
	for ev, err := range m.Decisions(ctx, s.ID(), 0) {
		require.NoError(t, err)
		got = append(got, ev)
		if ev.Seq == info.LastDecision {
			break
		}
	}
	cancel()
	require.Len(t, got, 2)
	assert.Equal(t, "git push origin main", strings.Join(got[0].Decision.Argv, " "))
	assert.Equal(t, "deny", got[1].Decision.Decision)
	assert.Equal(t, p.ID(), got[1].Decision.Process, "a started process's decision names it")

	// Resume after the first: only the second; the stream ends when the
	// session closes.
	done := make(chan []Event)
	seq := m.Decisions(testCtx(t, 10*time.Second), s.ID(), 1) // finds the session now
	go func() {
		var evs []Event
		for ev, err := range seq {
			if err != nil {
				break
			}
			evs = append(evs, ev)
		}
		done <- evs
	}()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, s.Close(testCtx(t, 5*time.Second)))
	select {
	case evs := <-done:
		require.Len(t, evs, 1)
		assert.EqualValues(t, 2, evs[0].Seq)
	case <-time.After(5 * time.Second):
		t.Fatal("the decision stream did not end with the session")
	}
}
