package supervisor

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxSymlinks bounds the symlinks followed while walking a path (the kernel's
// own limit is 40).
const maxSymlinks = 40

// immutablePath reports whether path, as pid would resolve it, can only lead
// to the same file until the exec runs: every directory walked, every
// symlink followed and the file itself lie on read-only mounts, and pid is
// in the sandbox's own mount namespace (rootPid's), where nothing can mount
// or remount (the sandbox has no capabilities there). Anything it cannot
// tell reads as false: the exec is then verified with ptrace.
func immutablePath(pid, rootPid int, path string) bool {
	if !strings.HasPrefix(path, "/") || !inSandboxMountNS(pid, rootPid) {
		return false
	}
	return walkReadOnly(pid, path)
}

// inSandboxMountNS reports whether pid is in rootPid's mount namespace (or
// rootPid is 0: no sandbox, the host's).
func inSandboxMountNS(pid, rootPid int) bool {
	if rootPid <= 0 {
		return true
	}
	mine, err1 := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/mnt")
	theirs, err2 := os.Readlink("/proc/" + strconv.Itoa(rootPid) + "/ns/mnt")
	return err1 == nil && err2 == nil && mine == theirs
}

// immutableCache remembers paths proven immutable in the sandbox's own
// mount namespace. The proof cannot go stale there: nothing in that
// namespace can mount, unmount or remount (no capabilities), so a path on
// read-only mounts stays on them, and so do the symlinks it follows.
// Paths that were not immutable are not remembered (a symlink on a
// writable mount may change). Used by one goroutine.
type immutableCache struct {
	rootPid int
	paths   map[string]bool
}

func (c *immutableCache) immutable(pid int, path string) bool {
	if !strings.HasPrefix(path, "/") || !inSandboxMountNS(pid, c.rootPid) {
		return false
	}
	if c.paths[path] {
		return true
	}
	if !walkReadOnly(pid, path) {
		return false
	}
	if c.paths == nil || len(c.paths) > 4096 {
		c.paths = map[string]bool{}
	}
	c.paths[path] = true
	return true
}

// walkReadOnly resolves path from pid's root, component by component, and
// reports whether every directory walked, every symlink followed and the
// file itself lie on read-only mounts.
func walkReadOnly(pid int, path string) bool {
	proc := "/proc/" + strconv.Itoa(pid)
	root, err := unix.Open(proc+"/root", unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
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
		if !readOnlyMount(dir) {
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
			ok := len(comps) == 0 && readOnlyMount(fd)
			unix.Close(fd)
			return ok
		}
	}
	return false // ended on a directory
}

func splitPath(p string) []string { return strings.Split(p, "/") }

// readOnlyMount reports whether fd lies on a read-only mount, as the mount
// is seen in its namespace.
func readOnlyMount(fd int) bool {
	var s unix.Statfs_t
	return unix.Fstatfs(fd, &s) == nil && s.Flags&unix.ST_RDONLY != 0
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
