package apiconv

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/api"
	"github.com/cordon-sandbox/cordon/service"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExecResultEncodings(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	res := service.ExecResult{
		ExitInfo: service.ExitInfo{ExitCode: 3, StartedAt: start, ExitedAt: start.Add(1500 * time.Millisecond), Duration: service.Duration(1500 * time.Millisecond)},
		Stdout:   []byte("héllo\n"),
		Stderr:   []byte{0xff, 0x00, 'x'},
	}
	t.Run("text", func(t *testing.T) {
		w := APIExecResult(res, api.EncodingText)
		b, err := json.Marshal(w)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		assert.Equal(t, "héllo\n", m["stdout"])
		assert.EqualValues(t, 1500, m["duration_ms"])
		assert.EqualValues(t, 0, m["signal"], "signal is always present")
		assert.Equal(t, true, m["stderr_lossy"], "bytes that are not UTF-8 are flagged")
		assert.NotContains(t, m, "stdout_b64")
	})
	t.Run("base64 round trip is byte-exact", func(t *testing.T) {
		b, err := json.Marshal(APIExecResult(res, api.EncodingBase64))
		require.NoError(t, err)
		assert.NotContains(t, string(b), `"stdout":`)
		var w api.ExecResult
		require.NoError(t, json.Unmarshal(b, &w))
		got, err := ExecResult(w)
		require.NoError(t, err)
		assert.Equal(t, res.Stdout, got.Stdout)
		assert.Equal(t, res.Stderr, got.Stderr)
		assert.Equal(t, res.ExitInfo.Duration, got.Duration)
		assert.Equal(t, 3, got.ExitCode)
	})
}

func TestExecRequestRoundTrip(t *testing.T) {
	req := service.ExecRequest{
		Session: "s", Script: "cat", Stdin: []byte{0, 1, 2}, Env: []string{"A=1"},
		Timeout: service.Duration(1500 * time.Microsecond), Sandbox: &service.SessionSpec{Net: "none"},
	}
	w := APIExecRequest(req)
	assert.EqualValues(t, 2, w.TimeoutMs, "a sub-millisecond remainder rounds up")
	b, err := json.Marshal(w)
	require.NoError(t, err)
	var back api.ExecRequest
	require.NoError(t, json.Unmarshal(b, &back))
	got, err := ExecRequest(back)
	require.NoError(t, err)
	assert.Equal(t, req.Stdin, got.Stdin)
	assert.Equal(t, "none", got.Sandbox.Net)

	bad := []string{
		`{"script":"x","stdin":"a","stdin_b64":"YQ=="}`,
		`{"script":"x","stdin_b64":"!!"}`,
		`{"script":"x","timeout_ms":-1}`,
		`{"script":"x","encoding":"hex"}`,
	}
	for _, in := range bad {
		var r api.ExecRequest
		require.NoError(t, json.Unmarshal([]byte(in), &r))
		_, err := ExecRequest(r)
		assert.ErrorIs(t, err, service.ErrInvalid, in)
	}
}

func TestEventRoundTrip(t *testing.T) {
	for _, data := range [][]byte{[]byte("text\n"), {0xc3}, nil} {
		ev := service.Event{Seq: 4, Kind: service.EventStdout, Data: data}
		b, err := json.Marshal(APIEvent(ev))
		require.NoError(t, err)
		var w api.Event
		require.NoError(t, json.Unmarshal(b, &w))
		got, err := Event(w)
		require.NoError(t, err)
		assert.Equal(t, ev.Data, got.Data)
	}
	exit := service.ExitInfo{ExitCode: 137, Signal: 9}
	got, err := Event(APIEvent(service.Event{Seq: 9, Kind: service.EventExit, Exit: &exit}))
	require.NoError(t, err)
	assert.Equal(t, 9, got.Exit.Signal)
}

// api.Session and api.ExecDecision were once the library's own types: the
// wire still carries exactly the JSON those marshal to, set or zero.
func TestSessionAndDecisionKeepTheLibrarysJSON(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sessions := []service.SessionInfo{{}, {
		ID: "s-1", Name: "dev", State: service.SessionLost, CreatedAt: at, Carry: true, Cwd: "/w",
		Processes: 2, Error: "bwrap exited", LastDecision: 7,
	}}
	for _, info := range sessions {
		lib, err := json.Marshal(info)
		require.NoError(t, err)
		wire, err := json.Marshal(APISession(info))
		require.NoError(t, err)
		assert.JSONEq(t, string(lib), string(wire))
		assert.Equal(t, info, SessionInfo(APISession(info)))
	}
	decisions := []service.ExecDecision{{}, {
		Time: at, Decision: "deny", Asked: true, Rule: `deny "git push"`, Argv: []string{"git", "push"},
		Program: "/usr/bin/git", Pid: 4, Process: "p-1",
	}}
	for _, d := range decisions {
		lib, err := json.Marshal(d)
		require.NoError(t, err)
		wire, err := json.Marshal(APIDecision(d))
		require.NoError(t, err)
		assert.JSONEq(t, string(lib), string(wire))
		assert.Equal(t, d, Decision(APIDecision(d)))
	}
}
