package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEventLog(t *testing.T) {
	out := func(s string) Event { return Event{Kind: EventStdout, Data: []byte(s)} }
	seqs := func(evs []Event) []uint64 {
		var out []uint64
		for _, ev := range evs {
			out = append(out, ev.Seq)
		}
		return out
	}
	tests := []struct {
		name     string
		limit    int
		appends  []Event
		after    uint64
		wantSeqs []uint64
		dropped  uint64 // of a leading truncation event, 0 when none
	}{
		{"all retained", 1 << 20, []Event{out("a"), out("b")}, 0, []uint64{1, 2}, 0},
		{"from a cursor", 1 << 20, []Event{out("a"), out("b"), out("c")}, 2, []uint64{3}, 0},
		{"oldest dropped", 2*eventOverhead + 2, []Event{out("a"), out("b"), out("c"), out("d")}, 0, []uint64{2, 3, 4}, 2},
		{"cursor inside the dropped range", 2*eventOverhead + 2, []Event{out("a"), out("b"), out("c"), out("d")}, 1, []uint64{2, 3, 4}, 1},
		{"cursor at the truncation", 2*eventOverhead + 2, []Event{out("a"), out("b"), out("c"), out("d")}, 2, []uint64{3, 4}, 0},
		{"the newest is kept even if alone too big", 10, []Event{out("aaaa"), out("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")}, 0, []uint64{1, 2}, 1},
		{"nothing after the exit", 1 << 20, []Event{out("a"), {Kind: EventExit, Exit: &ExitInfo{}}, out("late")}, 0, []uint64{1, 2}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newEventLog(tc.limit)
			for _, ev := range tc.appends {
				l.append(ev)
			}
			evs, _, _ := l.read(tc.after)
			assert.Equal(t, tc.wantSeqs, seqs(evs))
			if tc.dropped > 0 {
				require.NotEmpty(t, evs)
				assert.Equal(t, EventTruncated, evs[0].Kind)
				assert.Equal(t, tc.dropped, evs[0].Dropped)
			} else if len(evs) > 0 {
				assert.NotEqual(t, EventTruncated, evs[0].Kind)
			}
		})
	}
}

func TestEventLogIterate(t *testing.T) {
	l := newEventLog(1 << 20)
	l.append(Event{Kind: EventStdout, Data: []byte("a")})
	go func() {
		time.Sleep(20 * time.Millisecond)
		l.append(Event{Kind: EventStdout, Data: []byte("b")})
		l.append(Event{Kind: EventExit, Exit: &ExitInfo{ExitCode: 2}})
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []EventKind
	for ev, err := range l.iterate(ctx, 0) {
		require.NoError(t, err)
		got = append(got, ev.Kind)
	}
	assert.Equal(t, []EventKind{EventStdout, EventStdout, EventExit}, got)

	// A reader waiting on a process that never exits ends with ctx.
	l2 := newEventLog(1 << 20)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel2()
	var errs []error
	for _, err := range l2.iterate(ctx2, 0) {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], context.DeadlineExceeded)
}
