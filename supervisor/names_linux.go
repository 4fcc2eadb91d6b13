package supervisor

import "github.com/cordon-sandbox/cordon/policy"

// pathNames remembers, for a path a caller asked to run (absolute in the
// sandbox's root, as absPath made it), the file it led to last time (its
// whole FileID) and that file's canonical path as the kernel rendered it,
// so that the check of the next exec of the same path, when it finds the
// same file, skips the readlink of /proc/self/fd/N that renders the name
// again: about 4 µs of a 21 µs decision (BENCHMARKS, "per-exec, fifth
// round").
//
// A name is used only when the sandbox cannot change it: every directory
// on it, and the file, lie where the sandbox cannot write (read-only
// mounts; in the landlock tier, outside its writable set: walkHeld with
// files.heldTest), so no entry on it can be renamed, removed or replaced
// from inside. That is proven once per entry, on its first reuse, and
// cannot go stale for the same reason the immutable paths cannot
// (immutableCache): nothing in the sandbox can mount, unmount or remount,
// and the tier's writable set is fixed for the run. A name the workload
// could change is rendered every time: a red team renamed a directory
// between two execs of the same path, so the check took the old, allowed
// name, and renamed it back between the kernel's open and the exec event,
// so the event's name matched too (8-22 runs in 100 of a denied program).
//
// Even so it is not a proof of the name, and nothing relies on it being
// one: the same path can lead to the same file under another name that is
// as fixed (a symlink on the way pointed at another hard link of the file,
// or something the host renamed), with the FileID unchanged. It is used
// only by the check of an exec that the tracer then verifies at its exec
// event (Supervisor.decide; a decision that is not an allow, or whose
// caller the tracer cannot attach to, is decided again with the name read:
// see Verdict.skipped), and the event renders the name of the file the
// kernel mapped (/proc/PID/exe), which the workload cannot change either,
// and decides again in full when it is not the check's (tracer.unchanged),
// killing the process if that is not an allow. A stale entry costs a
// killed exec, never an unchecked one.
//
// Only plain names are remembered: not a memfd's, a deleted file's or
// anything opened through a /proc magic link (openTarget passes no key for
// those). Owned by the receive loop's goroutine (the supervisor's judge):
// no lock.
type pathNames struct {
	m map[string]pathName
	// held returns the test walkHeld applies to what the sandbox cannot
	// change, seen from the sandbox's root root, or nil when nothing is
	// held (files.heldTest).
	held func(root int) func(fd int) bool
}

type pathName struct {
	id   policy.FileID
	name string
	// proven says fixed was worked out: whether the sandbox cannot change
	// name (every directory on it, and the file, held).
	proven, fixed bool
}

// maxPathNames bounds the map; when full it is emptied.
const maxPathNames = 4096

// get returns the name remembered for called when it led to the file id
// and the sandbox cannot change that name; root is the sandbox's root.
func (n *pathNames) get(root int, called string, id policy.FileID) (string, bool) {
	if n == nil || called == "" {
		return "", false
	}
	e, ok := n.m[called]
	if !ok || e.id != id {
		return "", false
	}
	if !e.proven {
		var held func(fd int) bool
		if n.held != nil {
			held = n.held(root)
		}
		e.proven, e.fixed = true, held != nil && walkHeld(root, e.name, held)
		n.m[called] = e
	}
	if !e.fixed {
		return "", false
	}
	return e.name, true
}

// put remembers that called led to the file id, named name.
func (n *pathNames) put(called string, id policy.FileID, name string) {
	if n == nil || called == "" {
		return
	}
	if e, ok := n.m[called]; ok && e.id == id && e.name == name {
		return // keeps its proof
	}
	if n.m == nil || len(n.m) >= maxPathNames {
		n.m = map[string]pathName{}
	}
	n.m[called] = pathName{id: id, name: name}
}
