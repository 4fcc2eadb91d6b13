package sandbox

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Output and input: process-edge-cases.md 15-18.

// Edge 15: binary output and invalid UTF-8 survive byte for byte, through
// Exec, events and JSON.
func TestBinaryOutputSurvives(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	want := []byte("\xff\xfe\x00abc\x80\n\xc3\x28")
	script := `printf '\377\376\000abc\200\n\303\050'; printf '\377\376\000abc\200\n\303\050' >&2`

	res := execIn(t, s, ExecRequest{Script: script})
	assert.Equal(t, want, res.Stdout)
	assert.Equal(t, want, res.Stderr)
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var back ExecResult
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, want, back.Stdout)

	p := start(t, s, StartRequest{Script: script})
	var out, errOut []byte
	for _, ev := range collect(t, p, 0) {
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		var back Event
		require.NoError(t, json.Unmarshal(b, &back))
		switch back.Kind {
		case EventStdout:
			out = append(out, back.Data...)
		case EventStderr:
			errOut = append(errOut, back.Data...)
		}
	}
	assert.Equal(t, want, out)
	assert.Equal(t, want, errOut)

	// Input too.
	res = execIn(t, s, ExecRequest{Argv: []string{"cat"}, Stdin: want})
	assert.Equal(t, want, res.Stdout)
}

// Edge 16: output beyond the retention buffer yields a truncation event;
// cursors keep their meaning, before and after the drop.
func TestEventTruncation(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, func(o *Options) { o.EventBuffer = 16 << 10 })
	s := newTestSession(t, m, SessionSpec{})
	// Eight bursts, so the output arrives as several events whatever the
	// reads' timing.
	p := start(t, s, StartRequest{Script: "i=0; while [ $i -lt 400 ]; do printf 'line %04d %0100d\\n' $i 0; i=$((i+1)); [ $((i % 50)) = 0 ] && sleep 0.01; done; exit 0"})
	_, err := p.Wait(testCtx(t, 10*time.Second))
	require.NoError(t, err)

	evs := collect(t, p, 0)
	require.NotEmpty(t, evs)
	require.Equal(t, EventTruncated, evs[0].Kind, "first event: %+v", evs[0])
	assert.Positive(t, evs[0].Dropped)
	assert.Equal(t, evs[0].Dropped, evs[0].Seq, "everything up to the truncation's cursor was dropped")
	assert.Equal(t, EventExit, evs[len(evs)-1].Kind)
	for i := 1; i < len(evs); i++ {
		assert.Equal(t, evs[i-1].Seq+1, evs[i].Seq, "cursors are consecutive")
	}
	// The retained output is the end of the whole output.
	out := stdoutOf(evs)
	assert.True(t, strings.HasSuffix(out, "line 0399 "+strings.Repeat("0", 100)+"\n"))
	assert.LessOrEqual(t, len(out), 16<<10)

	// Resuming after the truncation event continues with the oldest
	// retained event; resuming after a retained event continues after it.
	resumed := collect(t, p, evs[0].Seq)
	assert.Equal(t, evs[1:], resumed)
	mid := evs[len(evs)/2]
	assert.Equal(t, evs[len(evs)/2+1:], collect(t, p, mid.Seq))
	// A cursor from before the drop is still valid: it gets the same
	// truncation (with the same cursor) and the same events.
	require.GreaterOrEqual(t, evs[0].Dropped, uint64(2), "want a cursor inside the dropped range")
	inside := evs[0].Seq - 1
	old := collect(t, p, inside)
	require.NotEmpty(t, old)
	require.Equal(t, EventTruncated, old[0].Kind)
	assert.Equal(t, evs[0].Seq, old[0].Seq)
	assert.Equal(t, uint64(1), old[0].Dropped)
	assert.Equal(t, evs[1:], old[1:])
	// Past the exit: nothing, at once.
	assert.Empty(t, collect(t, p, evs[len(evs)-1].Seq))
}

// Edge 17: a command that fills both pipes at once never deadlocks, also
// when the output is over MaxOutput (the rest is read and dropped).
func TestBothPipesFull(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})
	script := "head -c 3000000 /dev/zero >&2 & head -c 3000000 /dev/zero; wait"
	tests := []struct {
		name      string
		max       int
		wantBytes int
		truncated bool
	}{
		{"kept", 0, 3000000, false},
		{"over max output", 64 << 10, 64 << 10, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			res := execIn(t, s, ExecRequest{Script: script, MaxOutput: tc.max})
			assert.Less(t, time.Since(t0), 10*time.Second)
			assert.Equal(t, 0, res.ExitCode)
			assert.Len(t, res.Stdout, tc.wantBytes)
			assert.Len(t, res.Stderr, tc.wantBytes)
			assert.Equal(t, tc.truncated, res.StdoutTruncated)
			assert.Equal(t, tc.truncated, res.StderrTruncated)
		})
	}
	t.Run("started process", func(t *testing.T) {
		p := start(t, s, StartRequest{Script: script})
		exit, err := p.Wait(testCtx(t, 10*time.Second))
		require.NoError(t, err)
		assert.Equal(t, 0, exit.ExitCode)
	})
}

// Edge 18: with stdin none, reading stdin gets EOF at once; a stdin pipe
// delivers what is written and EOF on close.
func TestStdin(t *testing.T) {
	t.Parallel()
	m := newTestManager(t, nil)
	s := newTestSession(t, m, SessionSpec{})

	t.Run("exec without stdin reads EOF", func(t *testing.T) {
		t0 := time.Now()
		res := execIn(t, s, ExecRequest{Script: "cat; echo rc=$?", Timeout: Duration(5 * time.Second)})
		assert.Equal(t, "rc=0\n", string(res.Stdout))
		assert.False(t, res.TimedOut)
		assert.Less(t, time.Since(t0), time.Second)
	})
	t.Run("start with stdin none reads EOF", func(t *testing.T) {
		p := start(t, s, StartRequest{Script: "read x; echo \"got=[$x] rc=$?\"", Stdin: StdinNone, Timeout: Duration(5 * time.Second)})
		evs := collect(t, p, 0)
		assert.Equal(t, "got=[] rc=1\n", stdoutOf(evs))
		exit := evs[len(evs)-1].Exit
		require.NotNil(t, exit)
		assert.False(t, exit.TimedOut)
		_, err := p.Stdin()
		assert.ErrorIs(t, err, ErrNoStdin)
		assert.ErrorIs(t, m.WriteStdin(testCtx(t, time.Second), s.ID(), p.ID(), []byte("x")), ErrNoStdin)
	})
	t.Run("stdin pipe", func(t *testing.T) {
		p := start(t, s, StartRequest{Argv: []string{"cat"}, Stdin: StdinPipe})
		w, err := p.Stdin()
		require.NoError(t, err)
		_, err = io.WriteString(w, "hello ")
		require.NoError(t, err)
		require.NoError(t, m.WriteStdin(testCtx(t, time.Second), s.ID(), p.ID(), []byte("world\n")))
		waitOutput(t, p, "hello world\n")
		assert.Equal(t, ProcessRunning, p.Info().State, "cat ended before its stdin was closed")
		require.NoError(t, m.CloseStdin(testCtx(t, time.Second), s.ID(), p.ID()))
		exit, err := p.Wait(testCtx(t, 5*time.Second))
		require.NoError(t, err)
		assert.Equal(t, 0, exit.ExitCode)
		_, err = w.Write([]byte("late"))
		assert.Error(t, err, "writing after close")
	})
	t.Run("exec stdin larger than a pipe", func(t *testing.T) {
		in := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		res := execIn(t, s, ExecRequest{Argv: []string{"wc", "-c"}, Stdin: in})
		assert.Equal(t, "1048576\n", string(res.Stdout))
	})
}
