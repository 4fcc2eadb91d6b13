package sandbox

import (
	"context"
	"iter"
	"sync"
	"time"
)

// eventOverhead is what an event without data counts against the
// retention buffer.
const eventOverhead = 64

// eventLog is a process's events: a retention buffer bounded in bytes that
// drops its oldest events first, with cursors that never change meaning.
type eventLog struct {
	limit int

	mu     sync.Mutex
	events []Event       // guarded by mu: retained, oldest first
	next   uint64        // guarded by mu: the next event's Seq (the first is 1)
	size   int           // guarded by mu: bytes counted against limit
	closed bool          // guarded by mu: the exit event is in
	wake   chan struct{} // guarded by mu: closed and replaced on append
}

func newEventLog(limit int) *eventLog {
	return &eventLog{limit: limit, next: 1, wake: make(chan struct{})}
}

// append adds ev (setting Seq and, if unset, Time) and trims the buffer.
// The newest event is never dropped. Nothing is added after an exit event.
func (l *eventLog) append(ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	ev.Seq = l.next
	l.next++
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	l.events = append(l.events, ev)
	l.size += eventOverhead + len(ev.Data)
	for l.size > l.limit && len(l.events) > 1 {
		l.size -= eventOverhead + len(l.events[0].Data)
		l.events[0] = Event{}
		l.events = l.events[1:]
	}
	if ev.Kind == EventExit {
		l.closed = true
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

// read returns the events after cursor, preceded by a truncation event
// when some of them were dropped; closed reports whether the exit event is
// in the log; wake is closed at the next append.
func (l *eventLog) read(after uint64) (evs []Event, closed bool, wake <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := l.next
	if len(l.events) > 0 {
		first = l.events[0].Seq
	}
	if after+1 < first {
		evs = append(evs, Event{Seq: first - 1, Time: time.Now(), Kind: EventTruncated, Dropped: first - 1 - after})
	}
	for i := range l.events {
		if l.events[i].Seq > after {
			evs = append(evs, l.events[i])
		}
	}
	return evs, l.closed, l.wake
}

// last is the newest event's cursor (0 when there is none).
func (l *eventLog) last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next - 1
}

// iterate yields the events after cursor as they come and ends after the
// exit event, or with ctx's error.
func (l *eventLog) iterate(ctx context.Context, after uint64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			evs, closed, wake := l.read(after)
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
				after = ev.Seq
				if ev.Kind == EventExit {
					return
				}
			}
			if closed {
				return // the cursor was already past the exit event
			}
			select {
			case <-wake:
			case <-ctx.Done():
				yield(Event{}, ctx.Err())
				return
			}
		}
	}
}
