package supervisor

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxSymlinks bounds the symlinks followed while walking a path (the kernel's
// own limit is 40).
const maxSymlinks = 40

// immutableCache remembers paths proven immutable in the sandbox's own
// mount namespace. The proof cannot go stale there: nothing in that
// namespace can mount, unmount or remount (no capabilities), so a path on
// read-only mounts stays on them, and so do the symlinks it follows.
// Paths that were not immutable are not remembered (a symlink on a
// writable mount may change). Used by one goroutine.
type immutableCache struct {
	paths map[string]bool
}

// immutable reports whether path, as a caller whose root is root would
// resolve it, can only lead to the same file until the exec runs: see
// walkReadOnly. Preconditions: root is the caller's root from
// sandboxView.openRoot, which proved the caller's root the sandbox's own
// root mount and directory, where nothing can mount or remount.
func (c *immutableCache) immutable(root int, path string) bool {
	if !strings.HasPrefix(path, "/") {
		return false
	}
	if c.paths[path] {
		return true
	}
	if !walkReadOnly(root, path) {
		return false
	}
	if c.paths == nil || len(c.paths) > 4096 {
		c.paths = map[string]bool{}
	}
	c.paths[path] = true
	return true
}

// walkReadOnly resolves path from root (a caller's root directory),
// component by component, and reports whether every directory walked, every
// symlink followed and the file itself lie on read-only mounts. Anything
// under proc never qualifies: its links are magic (what /proc/PID/exe leads
// to is not what its text says). Anything it cannot tell reads as false.
func walkReadOnly(rootDir int, path string) bool {
	return walkHeld(rootDir, path, readOnlyMount)
}

// walkHeld is walkReadOnly with held, instead of readOnlyMount, saying of
// each directory walked and of the file whether the sandbox cannot change
// it: for the landlock tier, whose mounts are the host's, outsideWritable.
func walkHeld(rootDir int, path string, held func(fd int) bool) bool {
	root, err := unix.FcntlInt(uintptr(rootDir), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return false
	}
	// dirs is the stack of directories walked, root first; ".." pops it
	// and never climbs above the caller's root.
	dirs := []int{root}
	defer func() {
		for _, d := range dirs {
			unix.Close(d)
		}
	}()
	comps := splitPath(path)
	hops := 0
	for len(comps) > 0 {
		c := comps[0]
		comps = comps[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(dirs) > 1 {
				unix.Close(dirs[len(dirs)-1])
				dirs = dirs[:len(dirs)-1]
			}
			continue
		}
		dir := dirs[len(dirs)-1]
		if !held(dir) {
			return false // the entry could be replaced
		}
		fd, err := unix.Openat(dir, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			unix.Close(fd)
			return false
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			target, err := readlinkFD(fd)
			unix.Close(fd)
			if err != nil || hops >= maxSymlinks {
				return false
			}
			hops++
			if strings.HasPrefix(target, "/") {
				for _, d := range dirs[1:] {
					unix.Close(d)
				}
				dirs = dirs[:1]
			}
			comps = append(splitPath(target), comps...)
		case unix.S_IFDIR:
			dirs = append(dirs, fd)
		default:
			ok := len(comps) == 0 && held(fd)
			unix.Close(fd)
			return ok
		}
	}
	return false // ended on a directory
}

func splitPath(p string) []string { return strings.Split(p, "/") }

// readOnlyMount reports whether fd lies on a read-only mount, as the mount
// is seen in its namespace, and not in a proc file system.
func readOnlyMount(fd int) bool {
	var s unix.Statfs_t
	return unix.Fstatfs(fd, &s) == nil && s.Flags&unix.ST_RDONLY != 0 && s.Type != unix.PROC_SUPER_MAGIC
}

// readlinkFD reads the target of the symlink an O_PATH|O_NOFOLLOW fd refers
// to (readlinkat with an empty path, Linux 2.6.39+).
func readlinkFD(fd int) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// outsideWritable returns a walkHeld test for a sandbox whose writes are
// bounded by directories, not mounts (the landlock tier: Landlock grants
// writing beneath each of writable and nowhere else; see realWritable):
// fd's path, as the kernel renders it, must be none of them and lie
// beneath none of them, and not in a proc file system. A path it cannot
// read counts as writable.
func outsideWritable(writable []string) func(fd int) bool {
	return func(fd int) bool {
		p, err := readlinkSelfFD(fd)
		if err != nil || !strings.HasPrefix(p, "/") || strings.HasSuffix(p, " (deleted)") {
			return false
		}
		var s unix.Statfs_t
		if unix.Fstatfs(fd, &s) != nil || s.Type == unix.PROC_SUPER_MAGIC {
			return false
		}
		for _, w := range writable {
			if p == w || strings.HasPrefix(p, strings.TrimSuffix(w, "/")+"/") {
				return false
			}
		}
		return true
	}
}

// realWritable is writable with each directory's real path added where it
// differs (a writable /home that is a symlink): the kernel renders a path
// with its symlinks resolved. Done once, when the supervisor is made.
func realWritable(writable []string) []string {
	var all []string
	for _, w := range writable {
		all = append(all, w)
		if r, err := filepath.EvalSymlinks(w); err == nil && r != w {
			all = append(all, r)
		}
	}
	return all
}
