package supervisor

import "github.com/cordon-sandbox/cordon/policy"

// pathNames remembers, for a path a caller asked to run (absolute in the
// sandbox's root, as absPath made it), the file it led to last time (its
// whole FileID) and that file's canonical path as the kernel rendered it,
// so that the check of the next exec of the same path, when it finds the
// same file, skips the readlink of /proc/self/fd/N that renders the name
// again: about 4 µs of a 22 µs decision (BENCHMARKS, "per-exec, fifth
// round").
//
// Like notScripts it is not a proof, and nothing relies on it being one:
// the same path can lead to the same file under another canonical name (a
// directory on the way renamed, a symlink pointed at another hard link of
// the file), with the FileID unchanged. It is used only by the check of an
// exec that the tracer then verifies at its exec event (Supervisor.decide;
// a decision that is not an allow, or whose caller the tracer cannot
// attach to, is decided again with the name read: see Verdict.skipped),
// and the event makes a stale entry harmless: it renders the name of the
// file the kernel mapped (/proc/PID/exe), and a name other than the one
// the check decided with is decided again in full (tracer.unchanged), the
// process killed if that is not an allow. A stale entry costs a killed
// exec, never an unchecked one.
//
// Only plain names are remembered: not a memfd's, a deleted file's or
// anything opened through a /proc magic link (openTarget passes no key for
// those), so a remembered FileID is always a file with a name in the
// sandbox's tree. Owned by the receive loop's goroutine (the supervisor's
// judge): no lock.
type pathNames struct {
	m map[string]pathName
}

type pathName struct {
	id   policy.FileID
	name string
}

// maxPathNames bounds the map; when full it is emptied.
const maxPathNames = 4096

// get returns the name remembered for called when it led to the file id.
func (n *pathNames) get(called string, id policy.FileID) (string, bool) {
	if n == nil || called == "" {
		return "", false
	}
	e, ok := n.m[called]
	if !ok || e.id != id {
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
		return
	}
	if n.m == nil || len(n.m) >= maxPathNames {
		n.m = map[string]pathName{}
	}
	n.m[called] = pathName{id: id, name: name}
}
