package runner

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/internal/proc"
	"github.com/cordon-sandbox/cordon/netproxy"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/supervisor"
	"golang.org/x/sys/unix"
)

// netMode is the network mode a sandbox gets: a policy with a network
// section never runs with the host's network (it is filtered unless the
// caller asked for none at all), and filtering needs a network namespace.
func netMode(asked bwrap.Net, pol *policy.Policy, iso Isolation) (bwrap.Net, error) {
	mode := asked
	if mode == "" {
		mode = bwrap.NetHost
	}
	if pol != nil && pol.Network() != nil && mode == bwrap.NetHost {
		mode = bwrap.NetFilter
	}
	if mode == bwrap.NetFilter && iso == IsolationNone {
		return "", &SetupError{Err: errors.New("--net filter needs a network namespace (--isolation bwrap)"),
			Hint: "drop --isolation none, or the network rules"}
	}
	if mode != bwrap.NetHost && iso == IsolationLandlock {
		// Without a network namespace the proxy's ports would be the
		// host's loopback, Landlock restricts TCP by port only (any
		// address on an allowed port) and UDP not before ABI 10: the
		// filter could not be the only way out. Never an unfiltered
		// fallback.
		return "", &SetupError{Err: fmt.Errorf("--net %s (or a policy with network rules) needs the bwrap tier: without a network namespace Landlock cannot make cordon's proxy the only way out", mode),
			Hint: "make bubblewrap work here (cordon doctor says how), or drop --net and the network rules"}
	}
	return mode, nil
}

// ProxyEnv returns env with the variables that point proxy-aware clients
// at cordon's proxy on the sandbox's loopback (--net filter). Values the
// caller had for them are replaced: no other proxy is reachable. exe, when
// set, is cordon's binary as the sandbox sees it: git over ssh gets it as
// ssh's ProxyCommand (unless GIT_SSH_COMMAND is set already).
func ProxyEnv(env []string, exe string) []string {
	httpURL := fmt.Sprintf("http://127.0.0.1:%d", ProxyHTTPPort)
	socksURL := fmt.Sprintf("socks5h://127.0.0.1:%d", ProxySOCKSPort)
	noProxy := "localhost,127.0.0.1,::1"
	set := [][2]string{
		{"http_proxy", httpURL}, {"HTTP_PROXY", httpURL},
		{"https_proxy", httpURL}, {"HTTPS_PROXY", httpURL},
		{"all_proxy", socksURL}, {"ALL_PROXY", socksURL},
		{"no_proxy", noProxy}, {"NO_PROXY", noProxy},
		// Node >= 22.21/24.5 honours the variables above only when asked.
		{"NODE_USE_ENV_PROXY", "1"},
		{"npm_config_proxy", httpURL}, {"npm_config_https_proxy", httpURL},
		{"npm_config_noproxy", noProxy},
		{"YARN_HTTP_PROXY", httpURL}, {"YARN_HTTPS_PROXY", httpURL},
		{"PIP_PROXY", httpURL},
	}
	java := fmt.Sprintf("-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=%d -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=%d -Dhttp.nonProxyHosts=localhost|127.0.0.1",
		ProxyHTTPPort, ProxyHTTPPort)
	names := map[string]bool{"JAVA_TOOL_OPTIONS": true}
	for _, kv := range set {
		names[kv[0]] = true
	}
	out := make([]string, 0, len(env)+len(set)+1)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "JAVA_TOOL_OPTIONS" {
			java = strings.TrimSpace(v + " " + java)
		}
		if !names[k] {
			out = append(out, kv)
		}
	}
	for _, kv := range set {
		out = append(out, kv[0]+"="+kv[1])
	}
	if exe != "" && !strings.ContainsAny(exe, "'\"\\ %") && envValue(env, "GIT_SSH_COMMAND") == "" {
		out = append(out, "GIT_SSH_COMMAND=ssh -o ProxyCommand='"+exe+" "+ConnectArg+" %h %p'")
	}
	return append(out, "JAVA_TOOL_OPTIONS="+java)
}

// unixSocketHides lists what a filtered sandbox must not reach through
// the file system: /run (and /var/run when it is a directory of its own),
// where the system's sockets live (D-Bus, and through it
// systemd-resolved: a DNS way out; nscd; docker), and every other
// pathname socket the host lists in /proc/net/unix that the sandbox would
// see on its read-only root. Sockets under /tmp, /dev and /proc are
// hidden by the sandbox's own mounts already.
func unixSocketHides() (dirs, files []string) {
	for _, d := range []string{"/run", "/var/run"} {
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			dirs = append(dirs, d)
		}
	}
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return dirs, files
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || !strings.HasPrefix(fields[7], "/") {
			continue
		}
		p := filepath.Clean(fields[7])
		covered := false
		for _, d := range append([]string{"/tmp", "/dev", "/proc"}, dirs...) {
			if p == d || strings.HasPrefix(p, d+"/") {
				covered = true
			}
		}
		if covered || seen[p] {
			continue
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			seen[p] = true
			files = append(files, p)
		}
	}
	return dirs, files
}

// execTable remembers what each process of the sandbox was exec'd as, from
// the supervisor's allowed decisions: the one account of a process's
// program that the process cannot rewrite (unlike /proc/PID/cmdline).
type execTable struct {
	// recognize says which of the network rules' for: programs an exec
	// is (set before the supervisor runs; nil: none).
	recognize func(e *policy.Exec) []string

	mu sync.Mutex
	m  map[int]*execEntry // guarded by mu; keyed by host pid
}

type execEntry struct {
	start uint64   // the process's start time: with the pid, one process
	progs []string // for: programs it was exec'd as (supervisor.Recognize)
	argv  []string // its last exec's argv
	image string   // its last exec's file, or its innermost interpreter
}

// maxExecEntries bounds the table; entries of processes gone are pruned
// first when it is full, then new ones are not recorded (their processes
// are unknown: rules limited to programs do not match them).
const maxExecEntries = 8192

func newExecTable() *execTable { return &execTable{m: map[int]*execEntry{}} }

// note records an exec the supervisor let through.
func (t *execTable) note(d *supervisor.Verdict) {
	if d.Errno != 0 || d.Refused() || d.Exec.Argv == nil {
		return
	}
	st, err := proc.ReadStat(d.Pid)
	if err != nil {
		return
	}
	image := d.Exec.Resolved
	if n := len(d.Interpreter); n > 0 {
		image = d.Interpreter[n-1]
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[d.Pid]
	if e == nil || e.start != st.StartTime {
		if len(t.m) >= maxExecEntries {
			t.prune()
			if len(t.m) >= maxExecEntries {
				return
			}
		}
		e = &execEntry{start: st.StartTime}
		t.m[d.Pid] = e
	}
	e.argv, e.image = append([]string(nil), d.Exec.Argv...), image
	// A program the sandbox could have written proves nothing about what
	// runs: a copy of curl named npm must not pass for npm.
	if !d.Exec.Writable && t.recognize != nil && len(e.progs) < 32 {
		e.progs = append(e.progs, t.recognize(&d.Exec)...)
	}
}

// forRecognizer returns what execTable.recognize does for the network
// rules' for: programs: one single-rule exec policy per program ("allow
// npm", default deny), decided by the supervisor with its view of the
// sandbox's files, so a program is recognised by identity as exec rules
// recognise it.
func forRecognizer(sup *supervisor.Supervisor, np *policy.NetPolicy) (func(*policy.Exec) []string, error) {
	names := np.ForPrograms()
	if len(names) == 0 {
		return nil, nil
	}
	pols := make([]*policy.Policy, len(names))
	for i, n := range names {
		p, err := policy.Compile(policy.Config{Default: policy.Deny,
			Rules: []policy.Rule{{Decision: policy.Allow, Pattern: n, Source: "for: " + n}}})
		if err != nil {
			return nil, fmt.Errorf("network rule for: %q: %w", n, err)
		}
		pols[i] = p
	}
	return func(e *policy.Exec) []string {
		var out []string
		for i, p := range pols {
			if sup.Recognize(p, e).Decision == policy.Allow {
				out = append(out, names[i])
			}
		}
		return out
	}, nil
}

// prune drops entries whose process is gone. Preconditions: t.mu held.
func (t *execTable) prune() {
	for pid, e := range t.m {
		if st, err := proc.ReadStat(pid); err != nil || st.StartTime != e.start {
			delete(t.m, pid)
		}
	}
}

// lookup returns what pid was exec'd as, if the record is still its own.
func (t *execTable) lookup(pid int) (progs, argv []string, ok bool) {
	st, err := proc.ReadStat(pid)
	if err != nil {
		return nil, nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[pid]
	if e == nil || e.start != st.StartTime {
		return nil, nil, false
	}
	// The last recorded exec must be what runs: a failed exec leaves a
	// record of a program the process never became.
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err != nil || exe != e.image {
		return nil, nil, false
	}
	return e.progs, e.argv, true
}

// netOwner finds the process of the sandbox that holds the client end of
// a proxy connection: the socket's inode from the sandbox's TCP table
// (read through its init, which is in its network namespace), then the
// processes below the init that hold that inode. The programs are those
// every holder and its ancestors were proven to be exec'd as; anything
// unknown leaves them empty, so rules limited to programs fail closed.
func netOwner(initPid int, diag *sockDiag, execs *execTable, peer netip.AddrPort) netproxy.Owner {
	inode := diag.inode(peer)
	if inode == "" {
		// Slower (the kernel walks its whole TCP table), same answer.
		inode = socketInode(initPid, peer)
	}
	if inode == "" {
		return netproxy.Owner{}
	}
	holders := socketHolders(initPid, "socket:["+inode+"]")
	if len(holders) == 0 {
		return netproxy.Owner{}
	}
	var owner netproxy.Owner
	var common map[string]bool
	for i, pid := range holders {
		progs, argv, known := chainPrograms(initPid, execs, pid)
		if i == 0 {
			owner.Pid, owner.Argv = pid, argv
		}
		set := map[string]bool{}
		if known {
			for _, p := range progs {
				set[p] = true
			}
		}
		if common == nil {
			common = set
			continue
		}
		for p := range common {
			if !set[p] {
				delete(common, p)
			}
		}
	}
	for p := range common {
		owner.Programs = append(owner.Programs, p)
	}
	return owner
}

// chainPrograms returns the programs pid and its ancestors up to the init
// were exec'd as, and pid's argv. known is false when pid itself has no
// valid record.
func chainPrograms(initPid int, execs *execTable, pid int) (progs, argv []string, known bool) {
	progs, argv, known = execs.lookup(pid)
	if !known {
		return nil, nil, false
	}
	progs = append([]string(nil), progs...)
	cur := pid
	for depth := 0; depth < 256; depth++ {
		st, err := proc.ReadStat(cur)
		if err != nil || st.PPid <= 1 || st.PPid == initPid {
			break
		}
		cur = st.PPid
		if p, _, ok := execs.lookup(cur); ok {
			progs = append(progs, p...)
		}
	}
	return progs, argv, true
}

// socketInode finds the inode of the sandbox's TCP socket whose local
// address is peer and whose remote port is one of the proxy's.
func socketInode(initPid int, peer netip.AddrPort) string {
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", initPid, name))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 {
				continue
			}
			local, ok1 := parseProcAddr(fs[1])
			remote, ok2 := parseProcAddr(fs[2])
			if !ok1 || !ok2 || local.Addr().Unmap() != peer.Addr().Unmap() || local.Port() != peer.Port() {
				continue
			}
			if remote.Port() != ProxyHTTPPort && remote.Port() != ProxySOCKSPort {
				continue
			}
			f.Close()
			return fs[9]
		}
		f.Close()
	}
	return ""
}

// parseProcAddr parses /proc/net/tcp's ADDR:PORT (the address as the
// kernel's 32-bit words in host byte order, hex).
func parseProcAddr(s string) (netip.AddrPort, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	b, err := hex.DecodeString(a)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.AddrPort{}, false
	}
	// Each 32-bit word is little-endian on the hosts cordon runs on.
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr, uint16(port)), true
}

// socketHolders lists the processes below initPid with a descriptor on
// the socket named link ("socket:[INODE]").
func socketHolders(initPid int, link string) []int {
	var out []int
	queue := proc.Children(initPid)
	for n := 0; len(queue) > 0 && n < 65536; n++ {
		pid := queue[0]
		queue = append(queue[1:], proc.Children(pid)...)
		dir := "/proc/" + strconv.Itoa(pid) + "/fd"
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == link {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// startProxy serves the proxy listeners the init sent (HTTP, SOCKS) and
// keeps its sock_diag socket for attribution.
func (s *Sandbox) startProxy(fds []int, sp *startSpec) error {
	s.diag = &sockDiag{fd: fds[2]}
	fds = fds[:2]
	var ls []net.Listener
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "proxy-listener")
		l, err := net.FileListener(f)
		f.Close()
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return fmt.Errorf("proxy listener: %w", err)
		}
		ls = append(ls, l)
	}
	var np *policy.NetPolicy
	if sp.policy != nil {
		np = sp.policy.Network()
	}
	initPid, execs, diag := s.initPid, s.execs, s.diag
	s.proxy = netproxy.New(netproxy.Options{
		Policy:   np,
		Owner:    func(peer netip.AddrPort) netproxy.Owner { return netOwner(initPid, diag, execs, peer) },
		Ask:      sp.askNet,
		OnRecord: sp.onNet,
	})
	go func() { _ = s.proxy.ServeHTTP(ls[0]) }()
	go func() { _ = s.proxy.ServeSOCKS(ls[1]) }()
	return nil
}

// NetDenialLine is the line cordon prints for a refused connection:
// cordon: denied: connect HOST:PORT by ARGV (rule: ...).
func NetDenialLine(r *netproxy.Record) string {
	by := "an unidentified process"
	if len(r.Owner.Argv) > 0 {
		by = supervisor.FormatArgv(r.Owner.Argv)
	} else if r.Owner.Pid > 0 {
		by = "pid " + strconv.Itoa(r.Owner.Pid)
	}
	return fmt.Sprintf("cordon: denied: connect %s by %s (rule: %s)",
		net.JoinHostPort(r.Host, strconv.Itoa(int(r.Port))), by, r.RuleText())
}

// sockDiag asks the kernel, through a NETLINK_SOCK_DIAG socket made in the
// sandbox's network namespace, for the inode of one TCP socket: an exact
// lookup, where reading /proc/PID/net/tcp walks every socket of the host
// (milliseconds per connection on a busy host).
type sockDiag struct {
	mu  sync.Mutex // one request at a time on fd
	fd  int        // guarded by mu; -1 once closed
	seq uint32     // guarded by mu
}

// inode returns the inode of the sandbox's TCP socket whose local address
// is peer and whose remote is one of the proxy's ports, or "".
func (d *sockDiag) inode(peer netip.AddrPort) string {
	if d == nil {
		return ""
	}
	for _, port := range []uint16{ProxyHTTPPort, ProxySOCKSPort} {
		if ino, ok := d.lookup(peer, port); ok {
			return strconv.FormatUint(uint64(ino), 10)
		}
	}
	return ""
}

// lookup sends one SOCK_DIAG_BY_FAMILY request (inet_diag_req_v2 with the
// exact socket id, no cookie) and reads the answer's idiag_inode.
func (d *sockDiag) lookup(peer netip.AddrPort, proxyPort uint16) (uint32, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		return 0, false
	}
	d.seq++
	src := peer.Addr().Unmap()
	family, dst := byte(unix.AF_INET), netip.AddrFrom4([4]byte{127, 0, 0, 1})
	if src.Is6() {
		family, dst = unix.AF_INET6, netip.IPv6Loopback()
	}
	const hdr, reqLen = 16, 56
	b := make([]byte, hdr+reqLen)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(b[8:], d.seq)
	r := b[hdr:]
	r[0], r[1] = family, unix.IPPROTO_TCP
	ne.PutUint32(r[4:], 0xffffffff) // every state
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], peer.Port())
	binary.BigEndian.PutUint16(id[2:], proxyPort)
	if family == unix.AF_INET {
		a4, d4 := src.As4(), dst.As4()
		copy(id[4:], a4[:])
		copy(id[20:], d4[:])
	} else {
		a16, d16 := src.As16(), dst.As16()
		copy(id[4:], a16[:])
		copy(id[20:], d16[:])
	}
	ne.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(d.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, false
	}
	buf := make([]byte, 8192)
	for {
		// Bounded: a kernel that does not answer must not hold a
		// connection's decision (the fd has no timeout of its own).
		fds := []unix.PollFd{{Fd: int32(d.fd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, 1000); err != nil || n == 0 {
			return 0, false
		}
		n, _, err := unix.Recvfrom(d.fd, buf, 0)
		if err != nil || n < hdr {
			return 0, false
		}
		msg := buf[:n]
		if ne.Uint32(msg[8:]) != d.seq {
			continue // an answer to an earlier request that timed out
		}
		if ne.Uint16(msg[4:]) != unix.SOCK_DIAG_BY_FAMILY || n < hdr+72 {
			return 0, false // NLMSG_ERROR: no such socket
		}
		return ne.Uint32(msg[hdr+68:]), true
	}
}

func (d *sockDiag) close() {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd >= 0 {
		unix.Close(d.fd)
		d.fd = -1
	}
}
