package supervisor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Kernel limits on what execve accepts (fs/exec.c, include/uapi/linux/binfmts.h).
// Reading past them is pointless: the kernel would fail the exec with E2BIG
// or ENAMETOOLONG, so the supervisor answers that errno itself.
const (
	maxArgStrlen = 32 * 4096 // MAX_ARG_STRLEN, including the NUL
	// maxArgBytes bounds argv strings plus their pointers: the kernel allows
	// at most 3/4 of _STK_LIM (8 MiB), and less under a smaller stack rlimit.
	maxArgBytes = 6 << 20
	pathMax     = 4096 // PATH_MAX, including the NUL
	pageSize    = 4096
	firstChunk  = 256 // bytes read per string before knowing its length
	iovMax      = 1024
)

var (
	errTooBig  = errors.New("argument list too long")
	errNameLen = errors.New("file name too long")
	errFault   = errors.New("bad address")
)

// memReader reads strings and pointer arrays from another process with
// process_vm_readv. It reuses its buffers; one reader serves one goroutine.
type memReader struct {
	buf   []byte   // scratch for readString and readPointers
	batch []byte   // first chunks of a batch of strings
	ptrs  []uint64 // the argv pointers of the last readArgv
	rem   []unix.RemoteIovec
	// pieces and iovAt lay out a batch of readStrings: each string's
	// first chunk, in the iovec (rem) that reads it, and where each iovec
	// lands in batch.
	pieces []strPiece
	iovAt  []int
}

// strPiece is n bytes at addr of the caller's memory, read as part of the
// remote iovec iov.
type strPiece struct {
	iov  int
	addr uint64
	n    int
}

// readAt fills p from addr in pid's memory, returning how many bytes it got
// before the first unreadable byte.
func (m *memReader) readAt(pid int, addr uint64, p []byte) (int, error) {
	local := []unix.Iovec{{Base: &p[0]}}
	local[0].SetLen(len(p))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	for {
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EFAULT {
			return 0, nil
		}
		if err != nil {
			return 0, os.NewSyscallError("process_vm_readv", err)
		}
		return n, nil
	}
}

// readString reads a NUL-terminated string of at most limit bytes (NUL
// included) starting at addr. It never reads across a page boundary it does
// not need, so a string ending just before an unmapped page still reads.
func (m *memReader) readString(pid int, addr uint64, limit int, tooLong error) (string, error) {
	var out []byte
	for len(out) < limit {
		n := pageSize - int(addr%pageSize)
		if n > limit-len(out) {
			n = limit - len(out)
		}
		chunk := m.scratch(n)
		got, err := m.readAt(pid, addr, chunk)
		if err != nil {
			return "", err
		}
		if i := bytes.IndexByte(chunk[:got], 0); i >= 0 {
			return string(append(out, chunk[:i]...)), nil
		}
		if got < n {
			return "", errFault
		}
		out = append(out, chunk...)
		addr += uint64(n)
	}
	return "", tooLong
}

func (m *memReader) scratch(n int) []byte {
	if cap(m.buf) < n {
		m.buf = make([]byte, n)
	}
	return m.buf[:n]
}

// readArgv reads a NULL-terminated array of pointers of ptrSize bytes at
// addr and the strings they point to. There is no cap on the count beyond
// the kernel's own byte limits.
func (m *memReader) readArgv(pid int, addr uint64, ptrSize int) ([]string, error) {
	m.ptrs = m.ptrs[:0]
	if addr == 0 {
		return nil, nil // execve(path, NULL, ...) is an empty argv.
	}
	ptrs, err := m.readPointers(pid, addr, ptrSize)
	if err != nil {
		return nil, err
	}
	m.ptrs = ptrs
	argv, _, err := m.readStrings(pid, ptrs, 0, false)
	return argv, err
}

// readExec reads an exec's path (a string of at most pathMax bytes) and
// argv (as readArgv) with one process_vm_readv fewer than reading them
// apart: the path's first chunk goes in the batch of argv's strings. The
// errors are the kernel's, in its order: the path's first (getname runs
// before the arguments are copied).
func (m *memReader) readExec(pid int, pathAddr, argvAddr uint64, ptrSize int) (string, []string, error) {
	m.ptrs = m.ptrs[:0]
	if argvAddr == 0 {
		path, err := m.readString(pid, pathAddr, pathMax, errNameLen)
		return path, nil, err // execve(path, NULL, ...) is an empty argv.
	}
	ptrs, err := m.readPointers(pid, argvAddr, ptrSize)
	if err != nil {
		if _, perr := m.readString(pid, pathAddr, pathMax, errNameLen); perr != nil {
			return "", nil, perr
		}
		return "", nil, err
	}
	m.ptrs = ptrs
	argv, path, err := m.readStrings(pid, ptrs, pathAddr, true)
	return path, argv, err
}

// readImageArgv reads a new image's argv from its initial stack at sp
// (imageArgv), with words of ptrSize bytes: argc, then argc pointers and a
// NULL, pointing to the strings the kernel copied end to end from the mm's
// arg_start — the bytes /proc/PID/cmdline shows, read by the reader that
// reads the check's argv instead of two /proc lookups, an open, a read and
// a close (BENCHMARKS, "per-exec, sixth round"). Nothing can have written
// that memory since the kernel did: the image has not run, its mm is new
// (no thread or vfork child shares it), and in the bwrap and landlock tiers
// nothing in the sandbox may write another process's memory (with
// --isolation none a sibling can, through /proc/PID/mem, here or once the
// program runs: README, security model). Any other shape — argc not the number of
// pointers, strings not end to end — is errImageShape, never an argv: a
// wrong word width or a misread stack must not decide an exec. A lone
// empty string is no argument (noLoneEmpty), as /proc/PID/cmdline's
// NUL-separated bytes read.
func (m *memReader) readImageArgv(pid int, sp uint64, ptrSize int) ([]string, error) {
	// argc is the first word, non-zero before the NULL that ends argv (a
	// zero argc, from a kernel before 5.18, reads as no words at all).
	m.ptrs = m.ptrs[:0]
	words, err := m.readPointers(pid, sp, ptrSize)
	if err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return []string{}, nil
	}
	if words[0] != uint64(len(words)-1) {
		return nil, fmt.Errorf("%w: argc %d, %d pointers", errImageShape, words[0], len(words)-1)
	}
	ptrs := words[1:]
	argv, _, err := m.readStrings(pid, ptrs, 0, false)
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(ptrs); i++ {
		if ptrs[i] != ptrs[i-1]+uint64(len(argv[i-1]))+1 {
			return nil, fmt.Errorf("%w: argument %d not after argument %d", errImageShape, i, i-1)
		}
	}
	return noLoneEmpty(argv), nil
}

// readPointers reads the NULL-terminated pointer array at addr into the
// reader's own array (m.ptrs's, reused from one exec to the next: its
// callers reset m.ptrs and keep the result there, and no decision holds it
// past the next read).
func (m *memReader) readPointers(pid int, addr uint64, ptrSize int) ([]uint64, error) {
	ptrs := m.ptrs[:0]
	// The first read is short: most argvs are a few words, and the copy
	// of a page's rest is time in the decision for nothing (BENCHMARKS,
	// "per-exec, fifth round"). A long one continues in bigger reads.
	batch := 64
	for {
		n := batch * ptrSize
		batch = 512
		// Stay within the page so an array ending just before an unmapped
		// page reads.
		if room := pageSize - int(addr%pageSize); room < n {
			n = room - room%ptrSize
			if n == 0 {
				n = ptrSize
			}
		}
		chunk := m.scratch(n)
		got, err := m.readAt(pid, addr, chunk)
		if err != nil {
			return nil, err
		}
		for off := 0; off+ptrSize <= got; off += ptrSize {
			var p uint64
			if ptrSize == 8 {
				p = binary.NativeEndian.Uint64(chunk[off:])
			} else {
				p = uint64(binary.NativeEndian.Uint32(chunk[off:]))
			}
			if p == 0 {
				return ptrs, nil
			}
			ptrs = append(ptrs, p)
			if (len(ptrs)+1)*(ptrSize+1) > maxArgBytes {
				return nil, errTooBig
			}
		}
		if got < n {
			return nil, errFault
		}
		addr += uint64(n)
	}
}

// readStrings reads every string in one process_vm_readv call per iovMax
// strings: a short first chunk of each, then a full read of the few that
// were longer. With withPath, the exec's path (at pathAddr) is read too,
// its first chunk last in the first call, and returned; its errors come
// before the strings'.
func (m *memReader) readStrings(pid int, ptrs []uint64, pathAddr uint64, withPath bool) ([]string, string, error) {
	out := make([]string, len(ptrs))
	total := len(ptrs) * 8
	var path string
	if withPath && len(ptrs) == 0 {
		p, err := m.readString(pid, pathAddr, pathMax, errNameLen)
		return out, p, err
	}
	for start, end := 0, 0; start < len(ptrs); start = end {
		first := withPath && start == 0
		end = min(start+iovMax, len(ptrs))
		if first && end-start == iovMax {
			end-- // room for the path in IOV_MAX
		}
		// Each string's first chunk (to its page's end at most) is one
		// piece; pieces on the same page as the one before are read as one
		// remote iovec spanning both (still within that page, so the span
		// faults exactly when either piece would): the kernel pins and
		// copies per iovec, and argv's strings mostly sit side by side.
		m.rem, m.pieces = m.rem[:0], m.pieces[:0]
		add := func(p uint64) {
			n := min(firstChunk, pageSize-int(p%pageSize))
			if k := len(m.rem) - 1; k >= 0 {
				b := uint64(m.rem[k].Base)
				if b/pageSize == p/pageSize {
					lo, hi := min(b, p), max(b+uint64(m.rem[k].Len), p+uint64(n))
					m.rem[k] = unix.RemoteIovec{Base: uintptr(lo), Len: int(hi - lo)}
					m.pieces = append(m.pieces, strPiece{iov: k, addr: p, n: n})
					return
				}
			}
			m.rem = append(m.rem, unix.RemoteIovec{Base: uintptr(p), Len: n})
			m.pieces = append(m.pieces, strPiece{iov: len(m.rem) - 1, addr: p, n: n})
		}
		for _, p := range ptrs[start:end] {
			add(p)
		}
		if first {
			add(pathAddr)
		}
		// Where each iovec, and so each piece, lands in the buffer.
		size := 0
		m.iovAt = m.iovAt[:0]
		for _, r := range m.rem {
			m.iovAt = append(m.iovAt, size)
			size += r.Len
		}
		if cap(m.batch) < size {
			m.batch = make([]byte, size)
		}
		buf := m.batch[:size]
		local := []unix.Iovec{{Base: &buf[0]}}
		local[0].SetLen(size)
		got := 0
		for {
			n, err := unix.ProcessVMReadv(pid, local, m.rem, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil && err != unix.EFAULT {
				return nil, "", os.NewSyscallError("process_vm_readv", err)
			}
			got = max(n, 0)
			break
		}
		// chunk returns piece i's bytes, or nil when they were not all
		// read (the read stopped at an unreadable page before its end).
		chunk := func(i int) []byte {
			pc := m.pieces[i]
			off := m.iovAt[pc.iov] + int(pc.addr-uint64(m.rem[pc.iov].Base))
			if off+pc.n > got {
				return nil
			}
			return buf[off : off+pc.n]
		}
		if first {
			// The path's piece is the last one.
			j := -1
			c := chunk(len(m.pieces) - 1)
			if c != nil {
				j = bytes.IndexByte(c, 0)
			}
			if j >= 0 {
				path = string(c[:j])
			} else {
				// Longer than the chunk, or not read in the batch.
				p, err := m.readString(pid, pathAddr, pathMax, errNameLen)
				if err != nil {
					return nil, "", err
				}
				path = p
			}
		}
		for i := range end - start {
			idx := start + i
			if c := chunk(i); c != nil {
				if j := bytes.IndexByte(c, 0); j >= 0 {
					s := string(c[:j])
					total += len(s) + 1
					if total > maxArgBytes {
						return nil, "", errTooBig
					}
					out[idx] = s
					continue
				}
			}
			// Longer than the first chunk, or not read in the batch: read
			// it alone.
			long, err := m.readString(pid, ptrs[idx], maxArgStrlen, errTooBig)
			if err != nil {
				return nil, "", err
			}
			total += len(long) + 1
			if total > maxArgBytes {
				return nil, "", errTooBig
			}
			out[idx] = long
		}
	}
	return out, path, nil
}

// writeBack writes each piece's data at its address in pid's memory with
// process_vm_writev (see settle), failing unless every byte is written.
func writeBack(pid int, pieces []piece) error {
	for len(pieces) > 0 {
		batch := pieces[:min(len(pieces), iovMax)]
		pieces = pieces[len(batch):]
		local := make([]unix.Iovec, len(batch))
		remote := make([]unix.RemoteIovec, len(batch))
		want := 0
		for i, p := range batch {
			local[i].Base = &p.data[0]
			local[i].SetLen(len(p.data))
			remote[i] = unix.RemoteIovec{Base: uintptr(p.lo), Len: len(p.data)}
			want += len(p.data)
		}
		for {
			n, err := unix.ProcessVMWritev(pid, local, remote, 0)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return os.NewSyscallError("process_vm_writev", err)
			}
			if n != want {
				return fmt.Errorf("process_vm_writev wrote %d of %d bytes", n, want)
			}
			break
		}
	}
	return nil
}
