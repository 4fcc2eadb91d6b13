package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnvForms(t *testing.T) {
	tests := []struct {
		name, in string
		want     Env
		err      bool
	}{
		{"list", `["A=1","B=2"]`, Env{"A=1", "B=2"}, false},
		{"object, keys sorted", `{"B":"2","A":"x=y"}`, Env{"A=x=y", "B=2"}, false},
		{"number", `5`, nil, true},
		{"object of numbers", `{"A":1}`, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e Env
			err := json.Unmarshal([]byte(tc.in), &e)
			if tc.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, e)
		})
	}
}

func TestSignalForms(t *testing.T) {
	var r SignalRequest
	require.NoError(t, json.Unmarshal([]byte(`{"signal":15}`), &r))
	assert.Equal(t, Signal("15"), r.Signal)
	require.NoError(t, json.Unmarshal([]byte(`{"signal":"SIGINT","scope":"process"}`), &r))
	assert.Equal(t, Signal("SIGINT"), r.Signal)
	assert.Error(t, json.Unmarshal([]byte(`{"signal":[1]}`), &r))
}

func TestExecResultEncodings(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	res := sandbox.ExecResult{
		ExitInfo: sandbox.ExitInfo{ExitCode: 3, StartedAt: start, ExitedAt: start.Add(1500 * time.Millisecond), Duration: sandbox.Duration(1500 * time.Millisecond)},
		Stdout:   []byte("héllo\n"),
		Stderr:   []byte{0xff, 0x00, 'x'},
	}
	t.Run("text", func(t *testing.T) {
		w := ExecResultOf(res, EncodingText)
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
		b, err := json.Marshal(ExecResultOf(res, EncodingBase64))
		require.NoError(t, err)
		assert.NotContains(t, string(b), `"stdout":`)
		var w ExecResult
		require.NoError(t, json.Unmarshal(b, &w))
		got, err := w.Result()
		require.NoError(t, err)
		assert.Equal(t, res.Stdout, got.Stdout)
		assert.Equal(t, res.Stderr, got.Stderr)
		assert.Equal(t, res.ExitInfo.Duration, got.Duration)
		assert.Equal(t, 3, got.ExitCode)
	})
}

func TestExecRequestRoundTrip(t *testing.T) {
	req := sandbox.ExecRequest{
		Session: "s", Script: "cat", Stdin: []byte{0, 1, 2}, Env: []string{"A=1"},
		Timeout: sandbox.Duration(1500 * time.Microsecond), Sandbox: &sandbox.SessionSpec{Net: "none"},
	}
	w := ExecRequestOf(req)
	assert.EqualValues(t, 2, w.TimeoutMs, "a sub-millisecond remainder rounds up")
	b, err := json.Marshal(w)
	require.NoError(t, err)
	var back ExecRequest
	require.NoError(t, json.Unmarshal(b, &back))
	got, err := back.Request()
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
		var r ExecRequest
		require.NoError(t, json.Unmarshal([]byte(in), &r))
		_, err := r.Request()
		assert.ErrorIs(t, err, sandbox.ErrInvalid, in)
	}
}

func TestEventRoundTrip(t *testing.T) {
	for _, data := range [][]byte{[]byte("text\n"), {0xc3}, nil} {
		ev := sandbox.Event{Seq: 4, Kind: sandbox.EventStdout, Data: data}
		b, err := json.Marshal(EventOf(ev))
		require.NoError(t, err)
		var w Event
		require.NoError(t, json.Unmarshal(b, &w))
		got, err := w.SandboxEvent()
		require.NoError(t, err)
		assert.Equal(t, ev.Data, got.Data)
	}
	exit := sandbox.ExitInfo{ExitCode: 137, Signal: 9}
	got, err := EventOf(sandbox.Event{Seq: 9, Kind: sandbox.EventExit, Exit: &exit}).SandboxEvent()
	require.NoError(t, err)
	assert.Equal(t, 9, got.Exit.Signal)
}
