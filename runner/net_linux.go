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
	"time"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/internal/isolation"
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
		// Without a network namespace the supervisor makes every TCP
		// connect (to the proxy only) and Landlock refuses the
		// sandbox's own (ABI 4); the seccomp filter refuses the other
		// kinds of socket. Never an unfiltered fallback.
		if abi := isolation.LandlockABI(); abi < 4 {
			return "", &SetupError{Err: fmt.Errorf("--net %s (or a policy with network rules) in the landlock tier needs Landlock ABI 4 (Linux 6.7) to refuse the sandbox's own TCP connects; this kernel has ABI %d", mode, abi),
				Hint: "make bubblewrap work here (cordon doctor says how), or drop --net and the network rules"}
		}
	}
	return mode, nil
}

// ProxyPorts are the proxy's ports: ProxyHTTPPort and ProxySOCKSPort on a
// bwrap sandbox's own loopback, ephemeral ones on the host's loopback in
// the landlock tier.
type ProxyPorts struct{ HTTP, SOCKS uint16 }

// bwrapProxyPorts are the ports of the sandbox's own loopback.
var bwrapProxyPorts = ProxyPorts{HTTP: ProxyHTTPPort, SOCKS: ProxySOCKSPort}

func (p ProxyPorts) list() []uint16 { return []uint16{p.HTTP, p.SOCKS} }

// ProxyEnv returns env with the variables that point proxy-aware clients
// at cordon's proxy on the sandbox's loopback (--net filter). Values the
// caller had for them are replaced: no other proxy is reachable. exe, when
// set, is cordon's binary as the sandbox sees it: git over ssh gets it as
// ssh's ProxyCommand (unless GIT_SSH_COMMAND is set already).
func ProxyEnv(env []string, exe string, ports ProxyPorts) []string {
	httpURL := fmt.Sprintf("http://127.0.0.1:%d", ports.HTTP)
	socksURL := fmt.Sprintf("socks5h://127.0.0.1:%d", ports.SOCKS)
	noProxy, javaNoProxy := "localhost,127.0.0.1,::1", "localhost|127.0.0.1"
	if ports != bwrapProxyPorts {
		// The landlock tier's loopback is the host's, which only the
		// proxy reaches (under the rules): nothing goes direct.
		noProxy, javaNoProxy = "", ""
	}
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
	java := fmt.Sprintf("-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=%d -Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=%d -Dhttp.nonProxyHosts=%s",
		ports.HTTP, ports.HTTP, javaNoProxy)
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
	relative := map[string]string{} // socket inode -> name bound relative to a working directory
	var paths []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p, ok := unixSocketPath(sc.Text())
		if !ok || p == "" || p[0] == '@' {
			continue
		}
		if p[0] != '/' {
			if fs := strings.Fields(sc.Text()); len(fs) >= 7 {
				relative[fs[6]] = p
			}
			continue
		}
		paths = append(paths, p)
	}
	paths = append(paths, locateRelativeSockets(relative)...)
	for _, p := range paths {
		p = filepath.Clean(p)
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

// locateRelativeSockets finds where sockets bound by a relative name
// (/proc/net/unix shows the name as passed to bind) are: each name joined
// to the working directory of a process holding that socket, kept when a
// socket file is there. A binder that changed directory since, or whose
// /proc cordon cannot read (another user's), leaves its socket unlocated:
// see the README's limits. The scan of every process's descriptors runs
// only when there are such sockets.
func locateRelativeSockets(names map[string]string) []string {
	if len(names) == 0 {
		return nil
	}
	var out []string
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	for _, e := range ents {
		if len(names) == 0 {
			break
		}
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		dir := "/proc/" + e.Name()
		fds, err := os.ReadDir(dir + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			l, err := os.Readlink(dir + "/fd/" + fd.Name())
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			ino := strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")
			name, ok := names[ino]
			if !ok {
				continue
			}
			cwd, err := os.Readlink(dir + "/cwd")
			if err != nil || !strings.HasPrefix(cwd, "/") {
				continue
			}
			p := filepath.Join(cwd, name)
			if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
				out = append(out, p)
				delete(names, ino)
			}
		}
	}
	return out
}

// unixSocketPath returns the path of a /proc/net/unix line: everything
// after the seventh field (the inode) and the one space that follows it, so
// a path with spaces is whole. A path with a newline cannot be told from
// the next line; see the README's limits.
func unixSocketPath(line string) (string, bool) {
	rest := line
	for i := 0; i < 7; i++ {
		rest = strings.TrimLeft(rest, " ")
		end := strings.IndexByte(rest, ' ')
		if end < 0 {
			return "", false
		}
		rest = rest[end:]
	}
	if len(rest) < 2 {
		return "", false
	}
	return rest[1:], true
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

// note records an exec the kernel performed (supervisor.Options.OnExec:
// verified at its exec event), never a decision alone: an allowed exec the
// kernel then fails must not leave its program behind.
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

// connTable records, for each socket of the sandbox connected to the
// proxy, the process that called connect and what it had been exec'd as
// (the supervisor sees the connect before the kernel makes it, so the
// record exists when the proxy accepts). The owner of a connection is who
// connected it, not who holds the socket when the proxy decides: a socket
// passed to (or inherited by) another process stays its connector's.
type connTable struct {
	execs   *execTable
	initPid int // set before the supervisor runs

	mu    sync.Mutex
	m     map[uint64]connRecord // guarded by mu; keyed by socket inode
	order []uint64              // guarded by mu: oldest first
}

// maxConnRecords bounds the table: the oldest records go first (their
// connections, if still open, are then of an unknown owner: rules limited
// to programs no longer match them, which fails closed).
const maxConnRecords = 8192

func newConnTable(execs *execTable) *connTable {
	return &connTable{execs: execs, m: map[uint64]connRecord{}}
}

// connRecord is who connected a socket, and to which port.
type connRecord struct {
	owner netproxy.Owner
	port  uint16
}

// note records a connect the supervisor saw (supervisor.Options.OnConnect).
func (c *connTable) note(ev supervisor.ConnectEvent) {
	progs, argv, known := chainPrograms(c.initPid, c.execs, ev.Pid)
	o := netproxy.Owner{Pid: ev.Pid, Argv: argv}
	if known {
		seen := map[string]bool{}
		for _, p := range progs {
			if !seen[p] {
				seen[p] = true
				o.Programs = append(o.Programs, p)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[ev.Inode]; !ok {
		c.order = append(c.order, ev.Inode)
	}
	c.m[ev.Inode] = connRecord{owner: o, port: ev.Addr.Port()}
	for len(c.order) > maxConnRecords {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

// lookup returns the owner recorded for the socket inode, if it was
// recorded connecting to port (the listener that accepted it): a record
// of a connect elsewhere is not this connection's.
func (c *connTable) lookup(inode uint64, port uint16) (netproxy.Owner, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[inode]
	if !ok || r.port != port {
		return netproxy.Owner{}, false
	}
	return r.owner, true
}

// netOwner finds who connected the client end of a proxy connection: the
// socket's inode from the sandbox's TCP table (read through its init,
// which is in its network namespace), then the connTable's record of it.
// The socket is looked up by both ends, never by the client's address
// alone: the kernel lets one ephemeral port of the sandbox's serve a
// connection to each of the proxy's listeners, so the client's address can
// name another process's socket (a workload colliding with git's port to
// borrow git's for: rules).
// No record (a connect the supervisor did not see, e.g. TCP Fast Open's
// sendto, i386's socketcall, or a sandbox supervised with ptrace only):
// the owner is unknown, and rules limited to programs do not match.
func netOwner(initPid int, diag *sockDiag, conns *connTable, ends netproxy.Endpoints) netproxy.Owner {
	inode := diag.inode(ends)
	if inode == "" {
		// Slower (the kernel walks its whole TCP table), same answer.
		inode = socketInode(initPid, ends)
	}
	n, err := strconv.ParseUint(inode, 10, 64)
	if err != nil || conns == nil {
		return netproxy.Owner{}
	}
	o, _ := conns.lookup(n, ends.Local.Port())
	return o
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
// address is ends.Peer and whose remote address is ends.Local.
func socketInode(initPid int, ends netproxy.Endpoints) string {
	peer := ends.Peer
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
			if remote.Addr().Unmap() != ends.Local.Addr().Unmap() || remote.Port() != ends.Local.Port() {
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
	initPid, conns, diag := s.initPid, s.conns, s.diag
	s.proxy = netproxy.New(netproxy.Options{
		Policy: np,
		Owner: func(ends netproxy.Endpoints) netproxy.Owner {
			return netOwner(initPid, diag, conns, ends)
		},
		RequireOwner: s.gated,
		Ask:          sp.askNet,
		OnRecord:     sp.onNet,
	})
	go func() { _ = s.proxy.ServeHTTP(ls[0]) }()
	go func() { _ = s.proxy.ServeSOCKS(ls[1]) }()
	return nil
}

// NetDenialLine is the line cordon prints for a refused connection:
// cordon: denied: connect HOST:PORT by ARGV (rule: ...), or for a listen
// the landlock tier refused: cordon: denied: listen by ARGV (rule: ...).
func NetDenialLine(r *netproxy.Record) string {
	by := "an unidentified process"
	if len(r.Owner.Argv) > 0 {
		by = supervisor.FormatArgv(r.Owner.Argv)
	} else if r.Owner.Pid > 0 {
		by = "pid " + strconv.Itoa(r.Owner.Pid)
	}
	if r.Proto == "listen" {
		return fmt.Sprintf("cordon: denied: listen by %s (rule: %s)", by, r.RuleText())
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
// is ends.Peer and whose remote is ends.Local (the listener that accepted
// it), or "".
func (d *sockDiag) inode(ends netproxy.Endpoints) string {
	if d == nil {
		return ""
	}
	if ino, ok := d.lookup(ends); ok {
		return strconv.FormatUint(uint64(ino), 10)
	}
	return ""
}

// lookup sends one SOCK_DIAG_BY_FAMILY request (inet_diag_req_v2 with the
// exact socket id, no cookie) and reads the answer's idiag_inode.
func (d *sockDiag) lookup(ends netproxy.Endpoints) (uint32, bool) {
	peer, proxyPort := ends.Peer, ends.Local.Port()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		return 0, false
	}
	d.seq++
	src, dst := peer.Addr().Unmap(), ends.Local.Addr().Unmap()
	family := byte(unix.AF_INET)
	if src.Is6() != dst.Is6() {
		return 0, false
	}
	if src.Is6() {
		family = unix.AF_INET6
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

// hostProxyListeners makes the landlock tier's proxy descriptors on the
// host, where the sandbox's network is: listeners on 127.0.0.1 at ports
// the kernel picks (concurrent runs never collide), then a sock_diag
// socket, as the bwrap tier's init sends them (proxyListeners). It
// returns the ports.
func hostProxyListeners() ([]int, ProxyPorts, error) {
	var fds []int
	var ports [2]uint16
	for i := range ports {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			closeAll(fds)
			return nil, ProxyPorts{}, os.NewSyscallError("socket", err)
		}
		fds = append(fds, fd)
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			closeAll(fds)
			return nil, ProxyPorts{}, fmt.Errorf("proxy listener on 127.0.0.1: %w", os.NewSyscallError("bind", err))
		}
		if err := unix.Listen(fd, 4096); err != nil {
			closeAll(fds)
			return nil, ProxyPorts{}, os.NewSyscallError("listen", err)
		}
		sa, err := unix.Getsockname(fd)
		in4, ok := sa.(*unix.SockaddrInet4)
		if err != nil || !ok {
			closeAll(fds)
			return nil, ProxyPorts{}, fmt.Errorf("proxy listener's port: %v", err)
		}
		ports[i] = uint16(in4.Port)
	}
	diag, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		closeAll(fds)
		return nil, ProxyPorts{}, os.NewSyscallError("socket(NETLINK_SOCK_DIAG)", err)
	}
	return append(fds, diag), ProxyPorts{HTTP: ports[0], SOCKS: ports[1]}, nil
}

// connectDenied reports a connect the supervisor refused (ConnectGate) the
// way the proxy reports its refusals: a record of kind "connect", whose
// denial line names the address, the caller and the reason.
func connectDenied(execs *execTable, initPid int, onNet func(*netproxy.Record)) func(supervisor.ConnectDenial) {
	return func(d supervisor.ConnectDenial) {
		if onNet == nil {
			return
		}
		rec := &netproxy.Record{Time: time.Now(), Proto: "connect", Decision: policy.Deny, Reason: d.Reason,
			Owner: netproxy.Owner{Pid: d.Pid}}
		switch {
		case d.Listen:
			rec.Proto = "listen"
		case d.Addr.IsValid():
			rec.Host, rec.Port = d.Addr.Addr().String(), d.Addr.Port()
		default:
			rec.Host = "?"
		}
		if _, argv, ok := chainPrograms(initPid, execs, d.Pid); ok {
			rec.Owner.Argv = argv
		}
		onNet(rec)
	}
}
