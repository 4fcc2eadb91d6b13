package supervisor

import (
	"syscall"

	"github.com/cordon-sandbox/cordon/policy"
	"golang.org/x/sys/unix"
)

// judge turns one exec into a decision: the caller, the file it runs
// (opened in the caller's root), the path and the argv it runs it with. It
// is the one function every exec goes through — at the notification, at
// PTRACE_EVENT_EXEC when an allowed exec is verified, and in ptrace-only
// supervision — so a rule, a script or a file means the same in each.
//
// A judge holds a policy bound to one view of the sandbox's files; the
// supervisor's goroutine and the tracer's thread each have their own.
type judge struct {
	pol   *policy.Policy
	files *files
	rec   *recordingFiles // what pol is bound to: files, recording for memo
	memo  *decisionMemo
	// heads, when set, lets decide skip the #! head read of a file seen
	// to have none: only for the supervisor's check, and only while every
	// exec it lets run is verified at its exec event (see notScripts).
	heads *notScripts
	// names, set with heads and for the same execs, lets the check skip
	// rendering the canonical path of a file it found at a path before
	// (see pathNames; openTarget in Supervisor.decide).
	names *pathNames
}

func newJudge(pol *policy.Policy, fs *files) judge {
	rec := &recordingFiles{files: fs}
	return judge{pol: pol.WithFiles(rec), files: fs, rec: rec, memo: newDecisionMemo()}
}

// open is openTarget for the check of an exec its event will verify: a
// path whose file the judge remembers (pathNames.target), read before with
// no #! line (notScripts), is not opened; the target has no descriptor
// (fd -1) and the name, identity and writability remembered. Anything the
// judge then does not allow is decided again from the file opened
// (Supervisor.decide), and the exec event decides again in full whatever
// the kernel mapped that is not that file (tracer.unchanged).
//
// absolute says the caller passed called as it is: the kernel resolves it
// from the caller's root, the sandbox's, as the proof of pathNames.target
// walked it. A path relative to a directory descriptor or the working
// directory (made absolute by absPath from what they were at the check) is
// opened every time: another thread can point the descriptor, or the
// shared working directory, elsewhere before the kernel's lookup (a red
// team ran a denied script so: TestAdvRememberedFileThroughAnotherDirectory).
func (j judge) open(pid, root int, called string, absolute bool) (target, syscall.Errno) {
	if !absolute {
		return openTarget(pid, root, called, j.names)
	}
	if e, ok := j.names.target(root, called); ok && j.heads.has(e.id) {
		return target{pid: pid, fd: -1, id: e.id, path: e.name, named: true, writable: e.writable}, 0
	}
	return openTarget(pid, root, called, j.names)
}

// policyDecide is pol.Decide through the judge's memo (see decisionMemo),
// and whether the decision was volatile (Verdict.volatile).
func (j judge) policyDecide(e *policy.Exec) (policy.Result, bool) {
	return j.memo.decide(j.pol, j.rec, e)
}

// decide decides d.Exec (Argv and Path as the caller passed them), whose file
// is tgt, for the caller pid with root directory root. filename is what the
// kernel hands a #! interpreter as the script's name. It fills d.Exec's file
// fields, d.Result, and for a #! script d.Interpreter and d.Expect; d.image
// becomes the file the kernel will map (the file itself, or a script's
// innermost interpreter). The errno is nonzero when the exec cannot succeed
// or cannot be decided (d.Reason then says why): a missing interpreter
// fails as the kernel would, one that cannot be identified is EPERM.
//
// A #! script is decided as itself and as what the kernel runs: its
// interpreter line + the script + its arguments, following nested
// interpreters as the kernel does. The strictest decision wins, so a script
// cannot be used to start a denied interpreter.
func (j judge) decide(pid, root int, tgt *target, filename string, d *Verdict) syscall.Errno {
	d.Interpreter, d.Expect, d.skipped = nil, nil, tgt.named
	j.rec.loaded = j.rec.loaded[:0]
	defer func() { d.loaded = append([]loadedProg(nil), j.rec.loaded...) }()
	if j.files.neverRun[[2]uint64{tgt.id.Dev, tgt.id.Ino}] {
		d.Result = policy.Result{Decision: policy.Deny}
		d.Reason = reasonNeverRun
		return unix.EPERM
	}
	if tgt.unsealed {
		d.Result = policy.Result{Decision: policy.Deny}
		d.Reason = reasonUnsealed
		return unix.EPERM
	}
	d.Exec.File, d.Exec.Known, d.Exec.Writable = tgt.id, true, tgt.writable
	d.Exec.Resolved = tgt.path
	d.image, d.imageKnown = tgt.id, true
	j.files.setCurrent(tgt)
	d.Result, d.volatile = j.policyDecide(&d.Exec)
	j.files.setCurrent(nil)

	if tgt.mapped {
		return 0
	}
	argv, fd := d.Exec.Argv, tgt.fd
	var opened []int
	defer func() {
		for _, fd := range opened {
			unix.Close(fd)
		}
	}()
	id := tgt.id
	for depth := 0; depth < maxInterpDepth; depth++ {
		if j.heads.has(id) {
			d.skipped = true // see notScripts: the exec event checks it
			return 0
		}
		head, err := readHead(fd)
		if err != nil {
			d.Result = policy.Result{Decision: policy.Deny}
			d.Reason = reasonUnreadable
			return unix.EPERM
		}
		interp, args, ok := shebang(head)
		if !ok {
			j.heads.add(id)
			return 0
		}
		next := append([]string{interp}, args...)
		next = append(next, filename)
		if len(argv) > 1 {
			next = append(next, argv[1:]...)
		}
		// The kernel looks the interpreter up as the caller would: a
		// relative one from its working directory.
		abs, errno := absPath(pid, root, unix.AT_FDCWD, interp)
		if errno != 0 {
			return errno
		}
		it, errno := openTarget(pid, root, abs, nil)
		if errno == unix.EPERM {
			d.Result = policy.Result{Decision: policy.Deny}
			d.Reason = reasonUnidentified + " " + interp
		}
		if errno != 0 {
			return errno // a missing interpreter fails the exec as the kernel would
		}
		opened = append(opened, it.fd)
		if it.unsealed {
			d.Result = policy.Result{Decision: policy.Deny}
			d.Reason = reasonUnsealed
			return unix.EPERM
		}
		if j.files.neverRun[[2]uint64{it.id.Dev, it.id.Ino}] {
			d.Result = policy.Result{Decision: policy.Deny}
			d.Reason = reasonNeverRun
			return unix.EPERM
		}
		e := policy.Exec{Argv: next, Path: interp, Resolved: it.path, File: it.id, Known: true, Writable: it.writable}
		j.files.setCurrent(&it)
		r, volatile := j.policyDecide(&e)
		d.volatile = d.volatile || volatile
		j.files.setCurrent(nil)
		if r.Decision > d.Result.Decision {
			d.Result = r
		}
		d.Interpreter = append(d.Interpreter, abs)
		d.Expect = next
		d.image = it.id
		argv, filename, fd, id = next, interp, it.fd, it.id
	}
	return unix.ELOOP // the kernel gives up after BINPRM_MAX_RECURSION
}
