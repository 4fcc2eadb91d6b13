package service

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDurationJSON(t *testing.T) {
	b, err := json.Marshal(Duration(1500 * time.Millisecond))
	require.NoError(t, err)
	assert.Equal(t, `"1.5s"`, string(b))
	tests := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{`"250ms"`, 250 * time.Millisecond, false},
		{`2`, 2 * time.Second, false},
		{`0.5`, 500 * time.Millisecond, false},
		{`"soon"`, 0, true},
		{`true`, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var d Duration
			err := json.Unmarshal([]byte(tc.in), &d)
			if tc.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, time.Duration(d))
		})
	}
}

// The library types' own JSON (the daemon's wire format is package api's):
// snake_case names, bytes as base64, durations as Go strings,
// the exit flattened into the exec result.
func TestJSONShape(t *testing.T) {
	res := ExecResult{
		ExitInfo: ExitInfo{ExitCode: 137, Signal: 9, TimedOut: true, Duration: Duration(time.Second)},
		Stdout:   []byte{0xff, 'a'},
	}
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.EqualValues(t, 137, m["exit_code"])
	assert.EqualValues(t, 9, m["signal"])
	assert.Equal(t, true, m["timed_out"])
	assert.Equal(t, "1s", m["duration"])
	assert.Equal(t, "/2E=", m["stdout"])

	var req ExecRequest
	require.NoError(t, json.Unmarshal([]byte(`{"session":"s-1","script":"ls","timeout":"2s","kill_grace":1,"stdin":"aGk="}`), &req))
	assert.Equal(t, ExecRequest{Session: "s-1", Script: "ls", Timeout: Duration(2 * time.Second), KillGrace: Duration(time.Second), Stdin: []byte("hi")}, req)

	var spec SessionSpec
	require.NoError(t, json.Unmarshal([]byte(`{"name":"n","carry":true,"policy":"rules: []"}`), &spec))
	assert.True(t, spec.Carry)
	_, err = json.Marshal(SessionSpec{Ask: nil})
	require.NoError(t, err, "the Ask callback does not travel")
}

func TestShellCode(t *testing.T) {
	assert.Equal(t, 124, ExitInfo{ExitCode: 143, Signal: 15, TimedOut: true}.ShellCode())
	assert.Equal(t, 137, ExitInfo{ExitCode: 137, Signal: 9}.ShellCode())
	assert.Equal(t, 3, ExitInfo{ExitCode: 3}.ShellCode())
}
