// Package proc reads what cordon needs of Linux's /proc: a process's stat
// and status files and its children. It is the one parser of those files
// in cordon (the supervisor's checks, the tree walks of sessions, the audit
// log and the daemon's liveness check all use it), tested and fuzzed here.
// It never writes and never signals.
package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// Stat is what cordon reads of /proc/PID/stat (proc_pid_stat(5)).
type Stat struct {
	State     byte // R, S, D, Z, T, t, X...
	PPid      int
	StartTime uint64 // in clock ticks after boot: with the pid, names one process
	// Layout is the address-space layout: startcode, endcode, startstack,
	// start_data, end_data, start_brk, arg_start, arg_end, env_start,
	// env_end. It is set at exec; processes sharing an address space have
	// the same one. The kernel shows zeros to a reader that may not trace
	// the process.
	Layout [10]uint64
}

// ErrMalformed is returned for a stat or status file that cannot be parsed.
var ErrMalformed = errors.New("malformed /proc file")

// layoutFields are the stat fields of Stat.Layout, numbered from 1.
var layoutFields = [10]int{26, 27, 28, 45, 46, 47, 48, 49, 50, 51}

// ParseStat parses the content of a /proc/PID/stat file. Fields the kernel
// does not show (old kernels) read as zero; the state, ppid and start time
// must be there.
func ParseStat(b []byte) (Stat, error) {
	var st Stat
	// The command name may hold spaces and parentheses: the fields start
	// after its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return st, fmt.Errorf("%w: stat has no ')'", ErrMalformed)
	}
	f := bytes.Fields(b[i+1:])
	// f[k] is field k+3.
	field := func(n int) []byte {
		if n-3 < len(f) {
			return f[n-3]
		}
		return nil
	}
	if len(f) < 20 || len(f[0]) != 1 {
		return st, fmt.Errorf("%w: short stat", ErrMalformed)
	}
	st.State = f[0][0]
	var err error
	if st.PPid, err = strconv.Atoi(string(field(4))); err != nil {
		return st, fmt.Errorf("%w: stat ppid: %v", ErrMalformed, err)
	}
	if st.StartTime, err = strconv.ParseUint(string(field(22)), 10, 64); err != nil {
		return st, fmt.Errorf("%w: stat starttime: %v", ErrMalformed, err)
	}
	for j, n := range layoutFields {
		v := field(n)
		if v == nil {
			continue
		}
		if st.Layout[j], err = strconv.ParseUint(string(v), 10, 64); err != nil {
			return st, fmt.Errorf("%w: stat field %d: %v", ErrMalformed, n, err)
		}
	}
	return st, nil
}

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	b, err := ReadFile("/proc/"+strconv.Itoa(pid)+"/stat", nil)
	if err != nil {
		return Stat{}, err
	}
	st, err := ParseStat(b)
	if err != nil {
		return st, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

// Status is what cordon reads of /proc/PID/status. A field that is missing
// reads as -1, which no caller accepts as a real value.
type Status struct {
	Tgid, PPid, TracerPid, Threads int
	// NSTgid and NSPid are the process's and the thread's ids in their own
	// (innermost) pid namespace: the last values of NStgid and NSpid.
	NSTgid, NSPid int
}

// ParseStatus parses the content of a /proc/PID/status file.
func ParseStatus(b []byte) Status {
	st := Status{Tgid: -1, PPid: -1, TracerPid: -1, Threads: -1, NSTgid: -1, NSPid: -1}
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		var dst *int
		switch string(k) {
		case "Tgid":
			dst = &st.Tgid
		case "PPid":
			dst = &st.PPid
		case "TracerPid":
			dst = &st.TracerPid
		case "Threads":
			dst = &st.Threads
		case "NStgid":
			dst = &st.NSTgid
		case "NSpid":
			dst = &st.NSPid
		default:
			continue
		}
		f := bytes.Fields(v)
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.Atoi(string(f[len(f)-1])); err == nil {
			*dst = n
		}
	}
	return st
}

// ReadStatus reads /proc/PID/status (a thread's, for a tid).
func ReadStatus(pid int) (Status, error) {
	b, err := ReadFile("/proc/"+strconv.Itoa(pid)+"/status", nil)
	if err != nil {
		return ParseStatus(nil), err
	}
	return ParseStatus(b), nil
}

// Children lists pid's children from /proc/PID/task/*/children (a child is
// listed under the thread that forked it). Not filepath.Glob: matching
// "children" lists every task directory in full, several times slower.
func Children(pid int) []int {
	out, _ := ChildrenErr(pid)
	return out
}

// ChildrenErr is Children with the error of a read that failed for another
// reason than the process or one of its threads being gone (EMFILE, say):
// for a caller that must not take "could not look" for "none".
func ChildrenErr(pid int) ([]int, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ESRCH) {
		return nil, err
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + t.Name() + "/children")
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ESRCH) {
				return out, err
			}
			continue
		}
		out = ParseChildren(b, out)
	}
	return out, nil
}

// ParseChildren appends the pids of a children file to out.
func ParseChildren(b []byte, out []int) []int {
	for _, w := range bytes.Fields(b) {
		if k, err := strconv.Atoi(string(w)); err == nil && k > 0 {
			out = append(out, k)
		}
	}
	return out
}
