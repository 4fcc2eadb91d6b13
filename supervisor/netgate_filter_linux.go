package supervisor

import (
	"fmt"

	seccomp "github.com/seccomp/libseccomp-golang"
	"golang.org/x/sys/unix"
)

// GatedFilter is FilterWith(creates, true) plus the socket rules of the
// landlock tier's --net filter and --net none (see Options.ConnectGate).
// Without a network namespace, and with Landlock governing TCP only, the
// sandbox may make only sockets whose connections the supervisor or
// Landlock decide:
//   - socket: AF_UNIX and AF_NETLINK (local to the host) of any type;
//     AF_INET and AF_INET6 only as SOCK_STREAM with protocol 0 or
//     IPPROTO_TCP (not UDP, raw, SCTP, MPTCP); every other family
//     (packet, vsock, bluetooth, ...) fails with EAFNOSUPPORT;
//   - socketpair is unaffected (its sockets have no address);
//   - sendto, sendmsg and sendmmsg with MSG_FASTOPEN: EOPNOTSUPP (TCP
//     Fast Open connects without connect(2));
//   - listen: notified, and refused on TCP sockets by the supervisor
//     (gateListen);
//   - i386's socketcall: ENOSYS (its arguments are in memory, where the
//     filter cannot read them; glibc uses the direct calls the kernel has
//     had since 4.3).
func GatedFilter(creates bool) ([]byte, error) {
	opts := optNotify | optConnects | optSockets
	if creates {
		opts |= optCreates
	}
	return program(opts)
}

func addSocketRules(f *seccomp.ScmpFilter) error {
	eafnosupport := seccomp.ActErrno.SetReturnCode(int16(unix.EAFNOSUPPORT))
	rule := func(name string, act seccomp.ScmpAction, conds ...seccomp.ScmpCondition) error {
		sc, err := seccomp.GetSyscallFromName(name)
		if err != nil {
			return fmt.Errorf("resolving %s: %w", name, err)
		}
		if err := f.AddRuleConditional(sc, act, conds); err != nil {
			return fmt.Errorf("adding %s rule: %w", name, err)
		}
		return nil
	}
	cond := func(arg uint, op seccomp.ScmpCompareOp, v ...uint64) seccomp.ScmpCondition {
		c, err := seccomp.MakeCondition(arg, op, v...)
		if err != nil {
			panic(err) // constant arguments: a programming error
		}
		return c
	}
	// Families: each rule refuses one value (a rule compares an argument
	// once); every family above AF_NETLINK is refused by one rule. The
	// comparison is on 64 bits: garbage in the upper half (which the
	// kernel ignores) makes the value large, so refused.
	allowed := map[uint64]bool{unix.AF_UNIX: true, unix.AF_INET: true, unix.AF_INET6: true, unix.AF_NETLINK: true}
	for fam := uint64(0); fam < unix.AF_NETLINK; fam++ {
		if allowed[fam] {
			continue
		}
		if err := rule("socket", eafnosupport, cond(0, seccomp.CompareEqual, fam)); err != nil {
			return err
		}
	}
	if err := rule("socket", eafnosupport, cond(0, seccomp.CompareGreater, unix.AF_NETLINK)); err != nil {
		return err
	}
	for _, fam := range []uint64{unix.AF_INET, unix.AF_INET6} {
		// The type without SOCK_NONBLOCK and SOCK_CLOEXEC (its low
		// four bits) must be SOCK_STREAM.
		for typ := uint64(0); typ <= 0xf; typ++ {
			if typ == unix.SOCK_STREAM {
				continue
			}
			if err := rule("socket", eafnosupport, cond(0, seccomp.CompareEqual, fam),
				cond(1, seccomp.CompareMaskedEqual, 0xf, typ)); err != nil {
				return err
			}
		}
		// Protocol 0 or IPPROTO_TCP (6): 1 to 5, and above 6, refused.
		for proto := uint64(1); proto < unix.IPPROTO_TCP; proto++ {
			if err := rule("socket", eafnosupport, cond(0, seccomp.CompareEqual, fam),
				cond(2, seccomp.CompareEqual, proto)); err != nil {
				return err
			}
		}
		if err := rule("socket", eafnosupport, cond(0, seccomp.CompareEqual, fam),
			cond(2, seccomp.CompareGreater, unix.IPPROTO_TCP)); err != nil {
			return err
		}
	}
	eopnotsupp := seccomp.ActErrno.SetReturnCode(int16(unix.EOPNOTSUPP))
	for _, c := range []struct {
		name string
		arg  uint
	}{{"sendto", 3}, {"sendmsg", 2}, {"sendmmsg", 3}} {
		if err := rule(c.name, eopnotsupp, cond(c.arg, seccomp.CompareMaskedEqual, unix.MSG_FASTOPEN, unix.MSG_FASTOPEN)); err != nil {
			return err
		}
	}
	// listen is decided by the supervisor (Options.ConnectGate): not on a
	// TCP socket, which would get an ephemeral port without bind(2).
	if err := rule("listen", seccomp.ActNotify); err != nil {
		return err
	}
	// Unconditional, so it also replaces the connect notification
	// libseccomp derives for socketcall(SYS_CONNECT).
	return rule("socketcall", seccomp.ActErrno.SetReturnCode(int16(unix.ENOSYS)))
}
