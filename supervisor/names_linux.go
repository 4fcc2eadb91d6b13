package supervisor

import (
	"strings"
	"sync"

	"github.com/cordon-sandbox/cordon/policy"
)

// pathNames remembers, for a path a caller asked to run (absolute in the
// sandbox's root, as absPath made it), the file it led to last time (its
// whole FileID, and whether the sandbox can write it) and that file's
// canonical path as the kernel rendered it. The check of the next exec of
// the same path uses it in one of two ways:
//
//   - the name: when the path leads to the same file, the readlink of
//     /proc/self/fd/N that renders the name again is skipped (about 4 µs
//     of a 21 µs decision; BENCHMARKS, "per-exec, fifth round");
//   - the whole file (target): when neither the path called nor the name
//     can change from inside the sandbox, the file is not opened at all:
//     the openat2 in the sandbox's root, its fstat, fstatfs and close
//     (about 7 µs; BENCHMARKS, "per-exec, seventh round"). The judge then
//     decides the remembered file, which must be one it read before with
//     no #! line (notScripts): it has no descriptor to read a head from.
//
// Neither is used unless the sandbox cannot change it: every directory on
// the name, and the file, lie where the sandbox cannot write (read-only
// mounts; in the landlock tier, outside its writable set: walkHeld with
// files.heldTest), so no entry on it can be renamed, removed or replaced
// from inside; for the whole file, the same of every directory walked and
// every symlink followed from the path called (the walk resolves it as the
// kernel will). That is proven once per entry, on its first reuse, and
// cannot go stale for the same reason the immutable paths cannot
// (immutableCache): nothing in the sandbox can mount, unmount or remount,
// and the tier's writable set is fixed for the run. A name the workload
// could change is rendered every time: a red team renamed a directory
// between two execs of the same path, so the check took the old, allowed
// name, and renamed it back between the kernel's open and the exec event,
// so the event's name matched too (8-22 runs in 100 of a denied program).
//
// Even so it is not a proof of the name or of the file, and nothing relies
// on it being one: the host can rename, replace or rewrite what the
// sandbox cannot (a read-only bind shows the host's changes), and the same
// path can lead to the same file under another name that is as fixed (a
// symlink on the way pointed at another hard link of the file), with the
// FileID unchanged. It is used
// only by the check of an exec that the tracer then verifies at its exec
// event (Supervisor.decide; a decision that is not an allow, or whose
// caller the tracer cannot attach to, is decided again with the name read:
// see Verdict.skipped), and the event renders the name of the file the
// kernel mapped (/proc/PID/exe), which the workload cannot change either,
// and decides again in full when the file, its whole FileID (a rewrite
// changes its ctime, which nothing can set back), its name or the argv is
// not the check's (tracer.unchanged), killing the process if that is not
// an allow. A stale entry costs a killed exec, never an unchecked one.
//
// Only plain names are remembered: not a memfd's, a deleted file's or
// anything opened through a /proc magic link (openTarget passes no key for
// those). Used by the receive loop's goroutine (the supervisor's judge)
// and, to forget an entry, by the exec event's, which is the same one
// while the loop runs on the tracer's thread (tracer.embed); the lock is
// for when it does not.
type pathNames struct {
	mu sync.Mutex
	m  map[string]pathName
	// held returns the test walkHeld applies to what the sandbox cannot
	// change, seen from the sandbox's root root, or nil when nothing is
	// held (files.heldTest).
	held func(root int) func(fd int) bool
}

type pathName struct {
	id       policy.FileID
	name     string
	writable bool // target.writable of the file
	// proven says fixed was worked out: whether the sandbox cannot change
	// name (every directory on it, and the file, held).
	proven, fixed bool
	// calledProven says calledFixed was worked out: whether the sandbox
	// cannot change where the path called leads (walkHeld of it).
	calledProven, calledFixed bool
}

// maxPathNames bounds the map; when full it is emptied.
const maxPathNames = 4096

// get returns the name remembered for called when it led to the file id
// and the sandbox cannot change that name; root is the sandbox's root.
func (n *pathNames) get(root int, called string, id policy.FileID) (string, bool) {
	if n == nil || called == "" {
		return "", false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.m[called]
	if !ok || e.id != id {
		return "", false
	}
	if !n.prove(root, called, &e) {
		return "", false
	}
	return e.name, true
}

// target returns the file called led to last time, without looking at what
// it leads to now, when the sandbox can change neither where called leads
// nor the file's name. root is the sandbox's root.
func (n *pathNames) target(root int, called string) (pathName, bool) {
	if n == nil || called == "" || strings.HasPrefix(called, "/proc/") || strings.HasPrefix(called, "/dev/fd/") {
		return pathName{}, false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.m[called]
	if !ok || !n.prove(root, called, &e) {
		return pathName{}, false
	}
	if !e.calledProven {
		e.calledProven = true
		e.calledFixed = called == e.name || n.walk(root, called)
		n.m[called] = e
	}
	return e, e.calledFixed
}

// prove works out, once, whether the sandbox cannot change e's name, and
// reports it. n.mu is held.
func (n *pathNames) prove(root int, called string, e *pathName) bool {
	if !e.proven {
		e.proven, e.fixed = true, n.walk(root, e.name)
		n.m[called] = *e
	}
	return e.fixed
}

// walk reports whether path, resolved from root, is held all the way
// (walkHeld with n.held).
func (n *pathNames) walk(root int, path string) bool {
	if n.held == nil {
		return false
	}
	held := n.held(root)
	return held != nil && walkHeld(root, path, held)
}

// put remembers that called led to the file id, named name, writable or
// not.
func (n *pathNames) put(called string, id policy.FileID, name string, writable bool) {
	if n == nil || called == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if e, ok := n.m[called]; ok && e.id == id && e.name == name && e.writable == writable {
		return // keeps its proofs
	}
	if n.m == nil || len(n.m) >= maxPathNames {
		n.m = map[string]pathName{}
	}
	n.m[called] = pathName{id: id, name: name, writable: writable}
}

// forget drops what n remembers of called.
func (n *pathNames) forget(called string) {
	n.mu.Lock()
	delete(n.m, called)
	n.mu.Unlock()
}
