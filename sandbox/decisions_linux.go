package sandbox

import (
	"context"
	"iter"

	"github.com/cordon-sandbox/cordon/internal/pathsearch"
)

// decisionLog is a session's exec decisions, every process's and every
// Exec's, as events with cursors (the daemon streams them).
type decisionLog struct {
	log     *eventLog
	repeats pathsearch.Repeats
}

func newDecisionLog(limit int) *decisionLog {
	return &decisionLog{log: newEventLog(limit)}
}

// add appends d, skipping the repeats a shell's PATH search makes after
// EPERM (the same caller, decision and argv again).
func (l *decisionLog) add(d ExecDecision) {
	// Connections are each their own record, however alike.
	if d.Kind != "net" && l.repeats.Repeated(d.Pid, d.Decision, d.Argv) {
		return
	}
	l.log.append(Event{Kind: EventDecision, Decision: &d, Time: d.Time})
}

// Decisions yields the session's exec decisions with a cursor greater than
// after, waiting for new ones, and ends once the session has ended (after
// the last decision) or with ctx's error. ExecDecision.Process names the started
// process that made the exec, when it is known; decisions of Exec calls
// carry no process.
func (s *Session) Decisions(ctx context.Context, after uint64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for {
			evs, _, wake := s.decisions.log.read(after)
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
				after = ev.Seq
			}
			select {
			case <-wake:
			case <-s.done:
				evs, _, _ := s.decisions.log.read(after)
				for _, ev := range evs {
					if !yield(ev, nil) {
						return
					}
				}
				return
			case <-ctx.Done():
				yield(Event{}, ctx.Err())
				return
			}
		}
	}
}

// Decisions yields a session's exec decisions (see Session.Decisions).
func (m *Manager) Decisions(ctx context.Context, session string, after uint64) iter.Seq2[Event, error] {
	s, err := m.Session(session)
	if err != nil {
		return func(yield func(Event, error) bool) { yield(Event{}, err) }
	}
	return s.Decisions(ctx, after)
}
