package supervisor

import (
	"bytes"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

const (
	// binprmBufSize is how much of a file the kernel reads to find a #!
	// line (BINPRM_BUF_SIZE).
	binprmBufSize = 256
	// maxInterpDepth is how many #! interpreters the kernel follows
	// (BINPRM_MAX_RECURSION).
	maxInterpDepth = 4
)

// shebang parses a #! line exactly as the kernel's binfmt_script does
// (fs/binfmt_script.c, load_script), so what is decided is what the kernel
// will run: head is the first BINPRM_BUF_SIZE bytes of the file (fewer for
// a short file; the kernel's buffer is zeroed past them). The line ends at
// the first newline; without one in the buffer, the interpreter must be
// followed by a space, tab or NUL before its last byte (else the kernel
// refuses it as possibly truncated) and the line ends there. Trailing
// spaces and tabs are trimmed; the interpreter runs to the first space, tab
// or NUL; what follows a space or tab, trimmed, is one argument, read as a
// C string (up to its first NUL; it may be empty and still be passed).
// args holds that argument, or nothing.
func shebang(head []byte) (interp string, args []string, ok bool) {
	var buf [binprmBufSize]byte
	copy(buf[:], head)
	b := buf[:]
	if b[0] != '#' || b[1] != '!' {
		return "", nil, false
	}
	spacetab := func(c byte) bool { return c == ' ' || c == '\t' }
	// Both search up to and including last, as the kernel's helpers do.
	nextNonSpaceTab := func(first, last int) int {
		for ; first <= last; first++ {
			if !spacetab(b[first]) {
				return first
			}
		}
		return -1
	}
	nextTerminator := func(first, last int) int {
		for ; first <= last; first++ {
			if spacetab(b[first]) || b[first] == 0 {
				return first
			}
		}
		return -1
	}
	bufEnd := binprmBufSize - 1
	iEnd := bytes.IndexByte(b, '\n')
	if iEnd < 0 {
		iEnd = nextNonSpaceTab(2, bufEnd)
		if iEnd < 0 {
			return "", nil, false // the whole buffer is spaces and tabs
		}
		if nextTerminator(iEnd, bufEnd) < 0 {
			return "", nil, false // the interpreter's name may be cut short
		}
		iEnd = bufEnd
	}
	for spacetab(b[iEnd-1]) {
		iEnd--
	}
	iName := nextNonSpaceTab(2, iEnd)
	if iName < 0 || iName == iEnd {
		return "", nil, false // no interpreter
	}
	iSep := nextTerminator(iName, iEnd)
	nameEnd := iEnd
	if iSep >= 0 {
		nameEnd = iSep
		if b[iSep] != 0 {
			if iArg := nextNonSpaceTab(iSep, iEnd); iArg >= 0 {
				args = []string{cString(b[iArg:iEnd])}
			}
		}
	}
	return cString(b[iName:nameEnd]), args, true
}

// cString is b up to its first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// readHead returns the first BINPRM_BUF_SIZE bytes (or fewer, for a short
// file) of the file behind an O_PATH fd. A file that cannot be read cannot
// be told from a script: the caller refuses it.
func readHead(fd int) ([]byte, error) {
	// Plain system calls: an os.File would register the descriptor with
	// the netpoller (a failing epoll_ctl and fcntls) on every exec.
	dir, name := selfFD(fd)
	rd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(rd)
	buf := make([]byte, binprmBufSize)
	n := 0
	for n < len(buf) {
		// pread at the offset reached: the kernel's own read of the head
		// (kernel_read at 0) stops short only at end of file.
		got, err := unix.Pread(rd, buf[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if got == 0 {
			break
		}
		n += got
	}
	return buf[:n], nil
}

// kernelFilename is bprm->filename: what a #! interpreter receives as the
// script's name. For execveat with a directory fd and a relative path, or
// with AT_EMPTY_PATH, the kernel passes a /dev/fd path.
func kernelFilename(call execCall, path string) string {
	switch {
	case path == "" && call.flags&unix.AT_EMPTY_PATH != 0:
		return "/dev/fd/" + strconv.Itoa(int(call.dirfd))
	case call.dirfd != unix.AT_FDCWD && !strings.HasPrefix(path, "/"):
		return "/dev/fd/" + strconv.Itoa(int(call.dirfd)) + "/" + path
	}
	return path
}
