package supervisor

import (
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
)

// A decision memo remembers what the policy answered for one exec, so that
// the same program run again with the same arguments (a build's thousandth
// cc, a shell loop's /bin/true, the exec event deciding what the check
// just decided) costs one map lookup instead of the policy's walk and its
// identity lookups (about 5 µs of a 40 µs decision).
//
// It cannot answer differently from the policy, because an entry's key is
// everything Decide reads of the exec and its lifetime is that of every
// other answer Decide used:
//   - Decide is a pure function of the policy (a judge has one, for its
//     life), the Exec and what Files answers. The key holds every field of
//     the Exec: argv (with its length, so [""] and [] differ), the path as
//     passed, the resolved path, Known, Writable, and the file's whole
//     FileID. A file replaced (new inode), renamed or reached by another
//     name (another Resolved), rewritten in place (ctime: every write,
//     truncate, chmod or utimensat sets it to the current time, which no
//     unprivileged call can choose, so a restored mtime does not hide a
//     rewrite) or remounted read-write (Writable) is another key.
//   - Files answers are snapshots: a Lookup answer is reused for lookupTTL
//     after the listing it came from was read, a Digest is cached by the
//     whole FileID. An entry expires when the oldest Lookup answer its
//     decision used expires, so it is never older than the answers it
//     stands for would be. Digests are keyed as the entry is.
//   - What Files cannot answer from a snapshot is never remembered: a
//     decision that used Resolve (the program a dynamic loader is asked to
//     run, resolved from the caller's working directory), a Lookup that
//     failed without an answer (the sandbox's root not there: nothing was
//     cached), a Digest that failed, or a Digest of a file the sandbox can
//     write (its content can change with no new ctime: see Digest) is
//     decided again next time.
//
// A memo belongs to one judge (one goroutine): no lock.
type decisionMemo struct {
	entries map[memoKey]memoEntry
	onMiss  func() // tests: called for every decision the policy makes
}

// maxMemo bounds the memo; when full it is emptied (a cold decision costs
// what every decision cost before).
const maxMemo = 4096

type memoKey struct {
	file            policy.FileID
	known, writable bool
	argc            int
	argv            string // the words joined by NUL, which no word holds
	path, resolved  string
}

type memoEntry struct {
	result  policy.Result
	expires time.Time
}

func newDecisionMemo() *decisionMemo {
	return &decisionMemo{entries: map[memoKey]memoEntry{}}
}

func keyOf(e *policy.Exec) memoKey {
	return memoKey{
		file: e.File, known: e.Known, writable: e.Writable,
		argc: len(e.Argv), argv: strings.Join(e.Argv, "\x00"),
		path: e.Path, resolved: e.Resolved,
	}
}

// decide is p.Decide(e) through the memo; rec is the view p is bound to.
// volatile says the decision read what its key does not cover (see
// recordingFiles.stop): it was not remembered, and whoever relies on it
// staying true must decide again (tracer.unchanged).
func (m *decisionMemo) decide(p *policy.Policy, rec *recordingFiles, e *policy.Exec) (r policy.Result, volatile bool) {
	k := keyOf(e)
	now := time.Now()
	if got, ok := m.entries[k]; ok {
		if now.Before(got.expires) {
			return got.result, false
		}
		delete(m.entries, k)
	}
	if m.onMiss != nil {
		m.onMiss()
	}
	rec.start(now)
	r = p.Decide(e)
	expires, ok := rec.stop()
	if ok && now.Before(expires) {
		if len(m.entries) >= maxMemo {
			clear(m.entries)
		}
		m.entries[k] = memoEntry{result: r, expires: expires}
	}
	return r, !ok
}

// recordingFiles is the policy.Files a judge's policy is bound to: the
// judge's files view, noting while a decision is made how long the
// answers it gets stay valid (see decisionMemo).
type recordingFiles struct {
	*files
	on       bool
	expires  time.Time
	volatile bool
	// loaded collects the programs Resolve identified for a loader while
	// a judge decides one exec (judge.decide resets and reads it).
	loaded []loadedProg
}

var (
	_ policy.Files    = (*recordingFiles)(nil)
	_ policy.Resolver = (*recordingFiles)(nil)
	_ policy.Vouching = (*recordingFiles)(nil)
)

func (r *recordingFiles) start(now time.Time) {
	r.on, r.volatile, r.expires = true, false, now.Add(lookupTTL)
}

// stop ends the recording: until when the decision made holds, and false
// when it must not be remembered at all.
func (r *recordingFiles) stop() (time.Time, bool) {
	r.on = false
	return r.expires, !r.volatile
}

// Lookup implements policy.Files.
func (r *recordingFiles) Lookup(name string) []policy.FileID {
	ids := r.files.Lookup(name)
	r.note(name)
	return ids
}

// note dates the decision being recorded with the answer for name.
func (r *recordingFiles) note(name string) {
	if !r.on {
		return
	}
	at, ok := r.files.answeredAt(name)
	if !ok {
		r.volatile = true
	} else if exp := at.Add(lookupTTL); exp.Before(r.expires) {
		r.expires = exp
	}
}

// LookupVouched implements policy.Vouching, dated as Lookup's answer for
// name (it is made from it).
func (r *recordingFiles) LookupVouched(name string) []policy.FileID {
	ids := r.files.LookupVouched(name)
	r.note(name)
	return ids
}

// Digest implements policy.Files. A decision that read the content of a
// file is volatile: not remembered, and decided again at the exec event,
// where the image's digest is taken from the mapped file itself
// (files.Digest). Stores through a shared writable mapping change a file
// without a new ctime, so neither the key nor Digest's cache can tell the
// new content from the old; a device no mount of this sandbox can write is
// no shelter, since the writer can be the host or another sandbox of the
// same user that can write it (a red team's mapping, made before the
// check, rewrote a file the check had taken for ls into a program the
// policy denied, and it ran as ls). A decision that read no content
// (sizes differ, the name or the inode settled it) holds whatever the
// content becomes: a mapping cannot change the size.
func (r *recordingFiles) Digest(id policy.FileID) ([32]byte, bool) {
	sum, ok := r.files.Digest(id)
	if r.on {
		r.volatile = true
	}
	return sum, ok
}

// Resolve implements policy.Resolver: its answer depends on the caller's
// working directory, which is no part of the key.
func (r *recordingFiles) Resolve(path string) (policy.Exec, bool) {
	if r.on {
		r.volatile = true
	}
	e, ok := r.files.Resolve(path)
	if ok {
		r.loaded = append(r.loaded, loadedProg{path: path, resolved: e.Resolved, id: e.File})
	}
	return e, ok
}

// answeredAt returns the time the cached answer for name is dated at, and
// false when there is none (Lookup could not answer).
func (f *files) answeredAt(name string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.lookups[name]
	return e.at, ok
}
