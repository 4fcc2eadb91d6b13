// Package pathsearch recognises the repeats of a shell's PATH search. dash,
// bash and other shells exec every PATH entry in turn after an EPERM, so one
// refused command arrives as one decision per entry: the same caller with the
// same argv, only the path differs. The one-shot launcher (its denial lines)
// and the sessions (their decision events) report such a run once, through
// the one rule here.
package pathsearch

import (
	"fmt"
	"sync"

	"github.com/cordon-sandbox/cordon/internal/proc"
)

// maxCallers bounds the table: past it the table starts again, and a repeat
// may be reported twice, nothing worse.
const maxCallers = 1024

// Repeats remembers each caller's last exec decision. It is keyed by caller:
// another process's decision in between (a PATH retry interleaved with a
// sibling's exec) must not hide a repeat. The zero value is ready; it is
// safe for concurrent use.
type Repeats struct {
	mu   sync.Mutex
	last map[int]string // guarded by mu: each caller's last decision (its start time, kind and argv)
}

// Repeated reports whether decision on argv is what pid's last decision
// was too, and records it as pid's last.
//
// A caller is its pid and its start time: a new process that got a recycled
// pid (an exec storm) is not the one whose decision was recorded. Call it
// while pid's exec waits for its answer, so pid is still the caller.
func (r *Repeats) Repeated(pid int, decision string, argv []string) bool {
	var started uint64
	if st, err := proc.ReadStat(pid); err == nil {
		started = st.StartTime
	}
	key := fmt.Sprintf("%d\x00%s\x00%q", started, decision, argv)
	r.mu.Lock()
	defer r.mu.Unlock()
	dup := key == r.last[pid]
	if r.last == nil || len(r.last) > maxCallers {
		r.last = make(map[int]string)
	}
	r.last[pid] = key
	return dup
}
