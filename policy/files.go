package policy

// FileID identifies a file in the sandbox's view. Dev and Ino say which file
// it is; Size, MtimeNs and CtimeNs let a digest cache notice that a file was
// rewritten in place. CtimeNs is what makes that sound: mtime can be set
// back to any value (touch -d, utimensat), but every write, truncate, chmod
// or utimensat sets ctime to the current time, and no unprivileged call can
// choose it.
type FileID struct {
	Dev, Ino uint64
	Size     int64
	MtimeNs  int64
	CtimeNs  int64
}

// Same reports whether a and b are the same file (device and inode).
func (a FileID) Same(b FileID) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// Files gives Decide what it cannot find out itself, being pure: which files
// a program name stands for in the sandbox, and what those files contain.
// The supervisor implements it; a Policy uses it once bound with WithFiles.
//
// With Files, a rule naming git also matches an executable that is the same
// file as a git on the sandbox's PATH (a symlink or hard link under another
// name) or has the same content as one (a renamed copy). Without Files, or
// for an Exec whose File is not Known, programs are recognised by the
// resolved executable's name only.
//
// Decide calls Files only when the executable's name and the rules already
// matched could not settle the decision: it calls Lookup for the names that
// could still make the decision stricter, compares device and inode, and
// calls Digest only for files of exactly the executable's size. Both methods
// are called concurrently from every goroutine that calls Decide, so an
// implementation must be safe for concurrent use and should answer from a
// cache: Lookup results can be resolved up front from Policy.Programs.
type Files interface {
	// Lookup returns the files name stands for in the sandbox. A bare name
	// is looked up in every directory of the sandbox's PATH, and every file
	// found counts, not only the first. An absolute path names that file.
	// Either may contain the glob metacharacters * and ? (as in
	// path/filepath.Match), and then every matching file counts. Symlinks
	// are followed; missing files are left out.
	Lookup(name string) []FileID
	// Digest returns a cryptographic hash (SHA-256) of the file's content,
	// or ok false when the file cannot be read, or its content cannot be
	// taken for what would run. Implementations should cache by the whole
	// FileID, so a file rewritten in place (new ctime, whatever its size
	// and mtime) is hashed again. A file of a program's size whose content
	// could not be compared counts as that program for its deny and ask
	// rules, never for its allows.
	Digest(f FileID) (sum [32]byte, ok bool)
}

// Vouching is implemented by a Files that can tell which of a name's files
// the sandbox could have put under that name itself: a copy of python
// named ls, or a symlink to it, in a PATH directory the workload can write.
// Such a file still stands for the name when a rule would deny or ask (a
// stricter decision); an allow rule takes only the others as the name's
// identity, and so does the proof that a file is a multi-call program
// (busybox, whose argv[0] then chooses the program). Without Vouching,
// every file Lookup gives counts for both.
type Vouching interface {
	// LookupVouched is Lookup without the files the sandbox could have
	// placed or replaced under name.
	LookupVouched(name string) []FileID
}

// Resolver is implemented by a Files that can also resolve a path the exec
// names as an argument: the program a dynamic loader is asked to run
// (ld.so ./renamed-git push). Such a program is never exec'd itself, so the
// supervisor never sees it; with a Resolver, Decide recognises it by
// identity as it does a program that is exec'd. Resolve interprets path as
// the exec's caller would, relative to its working directory, in the
// sandbox's view, and returns the program as an Exec with Resolved, File,
// Known and Writable filled in. ok is false when the program cannot be
// identified, or could be replaced before the loader opens it (the loader
// opens it after the exec was decided): Decide then denies with LoaderRule.
type Resolver interface {
	Resolve(path string) (e Exec, ok bool)
}
