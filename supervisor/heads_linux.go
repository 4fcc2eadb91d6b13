package supervisor

import "github.com/cordon-sandbox/cordon/policy"

// notScripts remembers files whose head the check read and found no #!
// line in, by their whole FileID, so that the check of the next exec of the
// same file (a shell loop's thousandth /bin/true) skips the head read: an
// open through /proc/self/fd, a pread and a close, about 4 µs of a 26 µs
// decision.
//
// It is not a proof that the file is still no script, and nothing relies
// on it being one: a file can be rewritten with its FileID unchanged (a
// shared writable mapping's stores set no new ctime; a rewrite within one
// timestamp tick on a file system without fine-grained times). It is used
// only by the check of an exec that the tracer then verifies at its exec
// event (Supervisor.decide; a decision that is not an allow, or whose
// caller the tracer cannot attach to, is decided again with the head read:
// see Verdict.skipped), and the event makes a stale entry harmless:
// a file the kernel runs as a #! script (binfmt_script, or binfmt_misc)
// never becomes the process's image; the interpreter does. So a check
// that took a script for a program expects the script itself as the image
// (Verdict.image), and the event finds another file mapped (the
// interpreter, a different device and inode: a file that names itself as
// its own interpreter only loops to ELOOP) and kills the process before
// an instruction of it runs (tracer.decideImage). A stale entry costs a
// killed exec, never an unchecked one.
//
// Owned by the receive loop's goroutine (the supervisor's judge): no lock.
type notScripts struct {
	ids map[policy.FileID]struct{}
}

// maxNotScripts bounds the set; when full it is emptied.
const maxNotScripts = 4096

func (n *notScripts) has(id policy.FileID) bool {
	if n == nil {
		return false
	}
	_, ok := n.ids[id]
	return ok
}

func (n *notScripts) add(id policy.FileID) {
	if n == nil {
		return
	}
	if n.ids == nil || len(n.ids) >= maxNotScripts {
		n.ids = map[policy.FileID]struct{}{}
	}
	n.ids[id] = struct{}{}
}
