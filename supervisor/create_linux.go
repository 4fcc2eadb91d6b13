package supervisor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"strings"
	"syscall"
	"time"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"

	kseccomp "github.com/cordon-sandbox/cordon/internal/seccomp"
	"github.com/cordon-sandbox/cordon/policy"
)

// createCall describes a system call that creates a name: which of its
// arguments are paths to check (the new names), where its open flags are
// (for open-like calls: -1 when it always creates) and whether its flags
// are in an open_how struct (openat2).
type createCall struct {
	name string
	// names are the argument indexes of paths whose last component is
	// created; target is the index of a symlink's target (-1: none).
	names  []int
	target int
	// flags is the argument holding open flags (-1: the call always
	// creates); how is set for openat2, whose flags are in memory.
	flags int
	how   bool
}

var createCalls = []createCall{
	{name: "open", names: []int{0}, target: -1, flags: 1},
	{name: "openat", names: []int{1}, target: -1, flags: 2},
	{name: "creat", names: []int{0}, target: -1, flags: -1},
	{name: "openat2", names: []int{1}, target: -1, flags: 2, how: true},
	{name: "mkdir", names: []int{0}, target: -1, flags: -1},
	{name: "mkdirat", names: []int{1}, target: -1, flags: -1},
	{name: "mknod", names: []int{0}, target: -1, flags: -1},
	{name: "mknodat", names: []int{1}, target: -1, flags: -1},
	{name: "link", names: []int{1}, target: -1, flags: -1},
	{name: "linkat", names: []int{3}, target: -1, flags: -1},
	{name: "symlink", names: []int{1}, target: 0, flags: -1},
	{name: "symlinkat", names: []int{2}, target: 0, flags: -1},
	// Both names of a rename: RENAME_EXCHANGE gives the old name the new
	// one's content.
	{name: "rename", names: []int{1, 0}, target: -1, flags: -1},
	{name: "renameat", names: []int{3, 1}, target: -1, flags: -1},
	{name: "renameat2", names: []int{3, 1}, target: -1, flags: -1},
}

// addCreateRules adds the notify rules of CreateFilter. open and openat are
// notified only with O_CREAT: most opens only read, and a notification
// costs a round trip to the supervisor.
func addCreateRules(f *seccomp.ScmpFilter) error {
	for _, c := range createCalls {
		sc, err := seccomp.GetSyscallFromName(c.name)
		if err != nil {
			return fmt.Errorf("resolving %s: %w", c.name, err)
		}
		if c.flags >= 0 && !c.how {
			cond, err := seccomp.MakeCondition(uint(c.flags), seccomp.CompareMaskedEqual, unix.O_CREAT, unix.O_CREAT)
			if err != nil {
				return fmt.Errorf("building %s condition: %w", c.name, err)
			}
			if err := f.AddRuleConditional(sc, seccomp.ActNotify, []seccomp.ScmpCondition{cond}); err != nil {
				return fmt.Errorf("adding notify rule for %s: %w", c.name, err)
			}
			continue
		}
		if err := f.AddRule(sc, seccomp.ActNotify); err != nil {
			return fmt.Errorf("adding notify rule for %s: %w", c.name, err)
		}
	}
	return nil
}

// createKey names a system call by the architecture the caller used and
// its number there.
type createKey struct {
	arch uint32
	nr   int32
}

// createTable maps every architecture's numbers of createCalls to them.
func createTable() (map[createKey]*createCall, error) {
	out := map[createKey]*createCall{}
	for _, a := range []struct {
		arch  seccomp.ScmpArch
		audit uint32
	}{
		{seccomp.ArchAMD64, unix.AUDIT_ARCH_X86_64},
		{seccomp.ArchX32, unix.AUDIT_ARCH_X86_64},
		{seccomp.ArchX86, unix.AUDIT_ARCH_I386},
	} {
		for i := range createCalls {
			c := &createCalls[i]
			sc, err := seccomp.GetSyscallFromNameByArch(c.name, a.arch)
			if err != nil {
				if errors.Is(err, seccomp.ErrSyscallDoesNotExist) {
					continue
				}
				return nil, fmt.Errorf("resolving %s for %v: %w", c.name, a.arch, err)
			}
			if sc < 0 {
				continue // not on this architecture (i386 has no open flavours missing, x32 lacks some)
			}
			out[createKey{a.audit, int32(sc)}] = c
		}
	}
	return out, nil
}

// CreateVerdict is a refused creation of a protected name.
type CreateVerdict struct {
	Time    time.Time
	Pid     int
	Syscall string
	// Path is the path as the caller passed it; Target is a symlink's
	// target when that is what names the protected file.
	Path, Target string
	// Name is the protected name (a deny_write rule) it would create.
	Name string
}

// Words describe the refused creation as words: create PATH, or symlink
// PATH -> TARGET. Sessions report it in this form (as the argv of a denied
// decision), so their clients print the same line as a one-shot run.
func (v *CreateVerdict) Words() []string {
	if v.Target != "" {
		return []string{"symlink", v.Path, "->", v.Target}
	}
	return []string{"create", v.Path}
}

// RuleText names the rule that refused it.
func (v *CreateVerdict) RuleText() string {
	if v.Name == ".git" {
		// git init and git clone meet this one in normal work: say how
		// to allow them.
		return fmt.Sprintf("deny_write %q: protected name; to allow new repositories (git init, git clone): --deny-write '!.git'", v.Name)
	}
	return fmt.Sprintf("deny_write %q: protected name", v.Name)
}

// DenialLine is the line printed for a refused creation.
func (v *CreateVerdict) DenialLine() string {
	return fmt.Sprintf("cordon: denied: %s (rule: %s)", FormatArgv(v.Words()), v.RuleText())
}

// lastName is the final component of p as the kernel creates it: trailing
// slashes do not count ("dir/.claude/" creates .claude).
func lastName(p string) string {
	p = strings.TrimRight(p, "/")
	if p == "" {
		return ""
	}
	return path.Base(p)
}

// handleCreate answers a notified creating call: EACCES when a name it
// creates is protected, or when a symlink it makes points at a protected
// name (so an O_CREAT through a dangling symlink cannot make one), else
// continue. The rule is on names alone: where the directory is, or what
// its parents are called, does not matter, so renaming or swapping a parent
// after the check changes nothing. What can change after the check is the
// caller's memory (another thread rewriting the path before the kernel
// reads it again): see the README's limits.
func (s *Supervisor) handleCreate(n *kseccomp.Notif, c *createCall) {
	resp := kseccomp.NotifResp{ID: n.ID}
	v, errno := s.decideCreate(n, c)
	if errno != 0 {
		resp.Error = -int32(errno)
	} else {
		resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	}
	if v != nil && s.opts.OnCreateDenied != nil {
		s.opts.OnCreateDenied(v)
	}
	if err := kseccomp.NotifSend(s.listener, &resp); err != nil && !errors.Is(err, unix.ENOENT) {
		s.log.Error("answering create notification", "pid", n.Pid, "err", err)
	}
}

// decideCreate returns the errno to answer (0: continue) and, for a
// refusal because of a protected name, its verdict.
func (s *Supervisor) decideCreate(n *kseccomp.Notif, c *createCall) (*CreateVerdict, syscall.Errno) {
	if n.Pid == 0 {
		return nil, unix.EACCES // cannot read the caller: fail closed
	}
	pid := int(n.Pid)
	args := n.Data.Args
	if n.Data.Arch == unix.AUDIT_ARCH_I386 || n.Data.Nr&x32Bit != 0 {
		for i := range args {
			args[i] &= 0xffffffff
		}
	}
	if c.how {
		// openat2(dirfd, path, how, size): flags are how's first u64.
		var b [8]byte
		got, err := s.mem.readAt(pid, args[2], b[:])
		if err != nil || got < len(b) {
			return nil, s.createReadErrno(pid, err)
		}
		if binary.NativeEndian.Uint64(b[:])&unix.O_CREAT == 0 {
			return nil, s.createContinue(n)
		}
	}
	for _, i := range c.names {
		p, err := s.mem.readString(pid, args[i], pathMax, errNameLen)
		if err != nil {
			return nil, s.createReadErrno(pid, err)
		}
		if name, ok := policy.NameProtected(s.opts.ProtectedNames, lastName(p)); ok {
			return &CreateVerdict{Time: time.Now(), Pid: pid, Syscall: c.name, Path: p, Name: name}, unix.EACCES
		}
		if c.target >= 0 {
			t, err := s.mem.readString(pid, args[c.target], pathMax, errNameLen)
			if err != nil {
				return nil, s.createReadErrno(pid, err)
			}
			if name, ok := policy.NameProtected(s.opts.ProtectedNames, lastName(t)); ok {
				return &CreateVerdict{Time: time.Now(), Pid: pid, Syscall: c.name, Path: p, Target: t, Name: name}, unix.EACCES
			}
		}
	}
	return nil, s.createContinue(n)
}

// createContinue checks that the caller whose memory was read is still the
// task that made the call (its pid was not reused while we read).
func (s *Supervisor) createContinue(n *kseccomp.Notif) syscall.Errno {
	if err := kseccomp.NotifIDValid(s.listener, n.ID); err != nil {
		return unix.ENOENT
	}
	return 0
}

// createReadErrno maps a failure to read a creating call's arguments to
// what the kernel would have answered; anything else fails closed.
func (s *Supervisor) createReadErrno(pid int, err error) syscall.Errno {
	switch {
	case err == nil, errors.Is(err, errFault):
		return unix.EFAULT
	case errors.Is(err, errNameLen):
		return unix.ENAMETOOLONG
	case errors.Is(err, unix.ESRCH):
		return unix.ESRCH
	}
	s.log.Error("reading a creating call's arguments", "pid", pid, "err", err)
	return unix.EACCES
}
