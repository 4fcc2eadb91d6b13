package supervisor

import (
	"bytes"
	"os"
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

// shebang parses a #! line the way the kernel's binfmt_script does: the
// interpreter is the first word; the rest of the line, trimmed, is at most
// one argument.
func shebang(head []byte) (interp, arg string, ok bool) {
	if !bytes.HasPrefix(head, []byte("#!")) {
		return "", "", false
	}
	line := head[2:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	s := strings.Trim(string(line), " \t")
	if s == "" {
		return "", "", false
	}
	interp, rest, _ := strings.Cut(s, " ")
	if i := strings.IndexByte(interp, '\t'); i >= 0 {
		interp, rest = interp[:i], interp[i+1:]+" "+rest
	}
	return interp, strings.Trim(rest, " \t"), true
}

// readHead returns the first bytes of the file behind an O_PATH fd.
func readHead(fd int) []byte {
	f, err := os.Open("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, binprmBufSize)
	n, _ := f.Read(buf)
	return buf[:n]
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
