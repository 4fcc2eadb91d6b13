package tests

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/isolation"
	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The landlock tier's --net filter and --net none (issue 15): no network
// namespace, so the proxy listens on the host's loopback, Landlock refuses
// the sandbox's own TCP connects and binds, the supervisor makes the
// connects to the proxy, and the seccomp filter refuses every other kind
// of socket. Each attack runs against real servers on the host.

func requireLandlockNet(t *testing.T) {
	t.Helper()
	requireLandlock(t)
	if isolation.LandlockABI() < 4 {
		testcap.SkipOrFail(t, "Landlock ABI 4 (TCP rules) is not available on this kernel")
	}
	requireTool(t, "curl")
}

// llnetProbe tries every way out it knows from inside a landlock-tier
// sandbox and prints NAME=ok or NAME=ERRNO for each. argv[1] is the port
// of a host server the rules allow (reachable through the proxy only),
// argv[2] a host UDP server's.
const llnetProbe = `
import errno, os, socket, sys
port, udp = int(sys.argv[1]), int(sys.argv[2])
proxy = int(os.environ.get("http_proxy", "http://127.0.0.1:1").rsplit(":", 1)[1])
def t(name, f):
    try:
        f()
        print(name + "=ok")
    except OSError as e:
        print(name + "=" + errno.errorcode.get(e.errno, str(e.errno)))
def conn(fam, addr):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(addr)
    finally:
        s.close()
def nonblocking():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    rc = s.connect_ex(("127.0.0.1", proxy))
    if rc not in (0, errno.EINPROGRESS):
        raise OSError(rc, "connect")
    print("nonblocking_rc=" + errno.errorcode.get(rc, str(rc)))
def udp_send(fam, addr):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.sendto(b"cordon-udp", addr)
def fastopen():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.sendto(b"GET / HTTP/1.0\r\n\r\n", socket.MSG_FASTOPEN, ("127.0.0.1", port))
def bind_listen():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
t("proxy", lambda: conn(socket.AF_INET, ("127.0.0.1", proxy)))
t("proxy_v4mapped", lambda: conn(socket.AF_INET6, ("::ffff:127.0.0.1", proxy)))
t("nonblocking", nonblocking)
t("direct", lambda: conn(socket.AF_INET, ("127.0.0.1", port)))
t("direct_v4mapped", lambda: conn(socket.AF_INET6, ("::ffff:127.0.0.1", port)))
t("other_addr_proxy_port", lambda: conn(socket.AF_INET, ("127.0.0.2", proxy)))
t("v6_loopback_proxy_port", lambda: conn(socket.AF_INET6, ("::1", proxy)))
t("remote_proxy_port", lambda: conn(socket.AF_INET, ("192.0.2.1", proxy)))
t("udp", lambda: udp_send(socket.AF_INET, ("127.0.0.1", udp)))
t("udp6", lambda: udp_send(socket.AF_INET6, ("::1", udp)))
t("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
t("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0))
t("vsock", lambda: socket.socket(40, socket.SOCK_STREAM, 0))
t("sctp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132))
t("mptcp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262))
t("fastopen", fastopen)
t("bind", bind_listen)
def listen_unbound():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.listen(5)
    print("listening_on=%s:%d" % s.getsockname())
def unix_server():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("llnet.sock")
    s.listen(5)
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.connect("llnet.sock")
    a, _ = s.accept()
    c.sendall(b"x")
    assert a.recv(1) == b"x"
t("listen_unbound", listen_unbound)
t("unix_server", unix_server)
t("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close())
t("socketpair", lambda: socket.socketpair())
`

// llnetProbeWant is what the probe must print under --net filter.
var llnetProbeWant = map[string]string{
	"proxy": "ok", "proxy_v4mapped": "ok", "nonblocking": "ok",
	"direct": "EACCES", "direct_v4mapped": "EACCES", "other_addr_proxy_port": "EACCES",
	"v6_loopback_proxy_port": "EACCES", "remote_proxy_port": "EACCES",
	"udp": "EAFNOSUPPORT", "udp6": "EAFNOSUPPORT", "raw": "EAFNOSUPPORT", "packet": "EAFNOSUPPORT",
	"vsock": "EAFNOSUPPORT", "sctp": "EAFNOSUPPORT", "mptcp": "EAFNOSUPPORT",
	"fastopen": "ENOTSUP", "bind": "EACCES", "listen_unbound": "EACCES", "unix_server": "ok",
	"unix": "ok", "socketpair": "ok",
}

// udpServer listens on the host's loopback and counts the datagrams it
// gets.
func udpServer(t *testing.T) (port int, got *atomic.Int32) {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	got = &atomic.Int32{}
	go func() {
		buf := make([]byte, 512)
		for {
			if _, _, err := c.ReadFrom(buf); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).Port, got
}

func probeResults(stdout string) map[string]string {
	got := map[string]string{}
	for _, line := range strings.Split(stdout, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	return got
}

// llnetRig is what the landlock tier's network tests share: python3, a
// working directory holding the probe script, the host's servers and a
// host UDP server counting what reaches it.
func llnetRig(t *testing.T) (py, dir string, s *netServers, udpPort int, udpGot *atomic.Int32, probe string) {
	t.Helper()
	py = requireTool(t, "python3")
	dir = t.TempDir()
	s = startNetServers(t, dir)
	udpPort, udpGot = udpServer(t)
	probe = filepath.Join(dir, "probe.py")
	require.NoError(t, os.WriteFile(probe, []byte(llnetProbe), 0o644))
	return py, dir, s, udpPort, udpGot, probe
}

// TestLandlockNetFilter: real clients reach an allowed host server through
// the proxy (HTTP, HTTPS through CONNECT, SOCKS5 with remote resolution)
// with nothing but the variables cordon sets, a denied one gets the
// denial line, and every other way out fails: direct connects, the
// proxy's port at another address, UDP to a host server (which receives
// nothing), raw, packet, vsock, SCTP and MPTCP sockets, TCP Fast Open,
// binding a TCP port, and listening on one without a bind (the kernel
// would pick a port of the host's network); a Unix socket server works.
func TestLandlockNetFilter(t *testing.T) {
	requireLandlockNet(t)
	py, dir, s, udpPort, udpGot, probe := llnetRig(t)
	allowed := fmt.Sprintf("127.0.0.1:%d", s.httpPort)
	denied := "127.0.0.1:9"
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	script := fmt.Sprintf(`
curl -sS -m 10 http://%[1]s/plain
curl -sS -m 10 --cacert %[3]s https://127.0.0.1:%[4]d/tls
curl -sS -m 10 -x "$ALL_PROXY" http://%[1]s/socks
curl -sS -m 10 -w ' code=%%{http_code}\n' http://%[2]s/denied
curl -sS -m 10 --noproxy '*' http://%[1]s/direct; echo direct_rc=$?
%[5]s %[6]s %[7]d %[8]d
`, allowed, denied, s.ca, s.httpsPort, py, probe, s.httpPort, udpPort)
	r := runCordon(t, runOpts{dir: dir, timeout: 60 * time.Second}, "--isolation", "landlock",
		"--allow-net", allowed, "--allow-net", fmt.Sprintf("127.0.0.1:%d", s.httpsPort),
		"--audit", audit, "--", "sh", "-c", script)
	assert.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "hello host="+allowed+" path=/plain", r.stderr)
	assert.Contains(t, r.stdout, fmt.Sprintf("hello host=127.0.0.1:%d path=/tls", s.httpsPort))
	assert.Contains(t, r.stdout, "hello host="+allowed+" path=/socks")
	assert.Contains(t, r.stdout, "code=403")
	assert.Contains(t, r.stderr, "cordon: denied: connect "+denied+" by curl")
	assert.NotContains(t, r.stdout, "path=/direct")
	assert.Contains(t, r.stdout, "direct_rc=7")
	assert.Contains(t, r.stderr, "cordon: denied: connect "+allowed+" by curl -sS -m 10 --noproxy * http://"+allowed+"/direct (rule: only cordon's proxy on 127.0.0.1 is reachable)")

	got := probeResults(r.stdout)
	for k, want := range llnetProbeWant {
		assert.Equal(t, want, got[k], "%s; stdout: %s\nstderr: %s", k, r.stdout, r.stderr)
	}
	assert.Contains(t, []string{"EINPROGRESS", "0"}, got["nonblocking_rc"], "a non-blocking connect gets connect's own answer")
	assert.Contains(t, r.stderr, "cordon: denied: connect 127.0.0.2:")
	assert.Contains(t, r.stderr, "cordon: denied: connect [::1]:")
	assert.Contains(t, r.stderr, "cordon: denied: connect 192.0.2.1:")
	assert.Zero(t, udpGot.Load(), "no datagram reached the host's UDP server")
	assert.Contains(t, r.stderr, "cordon: denied: listen by ")
	assert.Contains(t, r.stderr, "probe.py "+fmt.Sprint(s.httpPort)+" "+fmt.Sprint(udpPort)+" (rule: listening on a TCP port of the host's network)")

	// The proxy's and the supervisor's refusals are both audit records
	// of kind net, naming the process.
	var proxyDeny, gateDeny bool
	for _, l := range netLines(t, audit) {
		if l["decision"] != "deny" {
			continue
		}
		argv := fmt.Sprint(l["argv"])
		if strings.Contains(argv, "/denied") {
			proxyDeny = true
		}
		if strings.Contains(argv, "/direct") {
			gateDeny = true
		}
	}
	assert.True(t, proxyDeny, "the proxy's refusal is audited")
	assert.True(t, gateDeny, "the refused direct connect is audited")
}

// TestLandlockNetFilterConnectRace: a thread rewrites connect's address in
// memory while the call waits for the supervisor, flipping between the
// proxy's port and an allowed server's real port. The supervisor connects
// its own copy of the address it checked: no connection ever reaches the
// server directly (by the client's getpeername and by the server's count
// of connections), and the connects that were let through reached the
// proxy.
func TestLandlockNetFilterConnectRace(t *testing.T) {
	requireLandlockNet(t)
	dir := t.TempDir()
	var direct atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			direct.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	port := netip.MustParseAddrPort(srv.Listener.Addr().String()).Port()
	bin := buildC(t, dir, "llnet_race.c", "llnet_race")
	r := runCordon(t, runOpts{dir: dir, timeout: 120 * time.Second}, "--isolation", "landlock",
		"--allow-net", fmt.Sprintf("127.0.0.1:%d", port), "--", bin, fmt.Sprint(port), "400")
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	var toProxy, toTarget, failed int
	_, err := fmt.Sscanf(strings.TrimSpace(r.stdout), "race proxy=%d target=%d failed=%d", &toProxy, &toTarget, &failed)
	require.NoError(t, err, r.stdout)
	assert.Zero(t, toTarget, "a connect reached the server directly: %s", r.stdout)
	assert.Zero(t, direct.Load(), "the server saw a direct connection")
	assert.Positive(t, toProxy, "connects with the proxy's port went through (the race ran): %s", r.stdout)
	assert.Equal(t, 400, toProxy+failed)
}

// TestLandlockNetFilterI386: i386's calls from an x86-64 program. The
// direct connect is gated like x86-64's (to the proxy: made, and the
// proxy refuses the URL; elsewhere: refused), socketcall is refused whole
// (ENOSYS: its arguments are in memory), and a UDP socket by the direct
// call is refused.
func TestLandlockNetFilterI386(t *testing.T) {
	requireLandlockNet(t)
	dir := t.TempDir()
	s := startNetServers(t, dir)
	bin := buildC(t, dir, "llnet_i386.c", "llnet_i386", "-static", "-no-pie", "-O0")
	r := runCordon(t, runOpts{dir: dir}, "--isolation", "landlock",
		"--allow-net", fmt.Sprintf("127.0.0.1:%d", s.httpPort), "--", bin, fmt.Sprint(s.httpPort))
	assert.Contains(t, r.stdout, "i386 connect proxy=0\n  HTTP/1.0 403", r.stderr)
	assert.Contains(t, r.stdout, "i386 connect direct=-13\n", r.stderr)
	assert.Contains(t, r.stdout, "i386 socketcall connect=-38\n", r.stderr)
	assert.Contains(t, r.stdout, "i386 socket udp=-97\n", r.stderr)
	assert.Contains(t, r.stderr, "cordon: denied: connect 127.0.0.1:9 by "+bin)
	assert.Contains(t, r.stderr, fmt.Sprintf("cordon: denied: connect 127.0.0.1:%d by %s", s.httpPort, bin))
}

// TestLandlockNetFilterUnattributed: the proxy's ports are on the host's
// loopback, where every program of the host can reach them. A connection
// the supervisor did not make for the sandbox has no owner and is
// refused, even to a host the rules allow.
func TestLandlockNetFilterUnattributed(t *testing.T) {
	requireLandlockNet(t)
	dir := t.TempDir()
	s := startNetServers(t, dir)
	allowed := fmt.Sprintf("127.0.0.1:%d", s.httpPort)
	cmd := exec.Command(cordonBin, "--isolation", "landlock", "--allow-net", allowed, "--", "sh", "-c",
		`curl -sS -m 10 http://`+allowed+`/inside; echo "$http_proxy" > proxy.url; while [ ! -e done ]; do sleep 0.05; done`)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), raceEnv)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	var proxyURL string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(dir, "proxy.url")); err == nil && strings.HasSuffix(string(b), "\n") {
			proxyURL = strings.TrimSpace(string(b))
			break
		}
	}
	if proxyURL == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // stderr is whole, and no longer written
		require.FailNow(t, "the sandbox did not say where its proxy is", "stderr: %s", stderr.String())
	}
	pu, err := url.Parse(proxyURL)
	require.NoError(t, err)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}, Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + allowed + "/from-host")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "done"), nil, 0o644))
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s", body)
	assert.NotContains(t, string(body), "hello")
	assert.Contains(t, stdout.String(), "hello host="+allowed+" path=/inside", "the sandbox's own request went through")
	assert.Contains(t, stderr.String(), "cordon: denied: connect "+allowed+" by an unidentified process (rule: the connection is not from the sandbox)")
}

// TestLandlockNetNone: --net none in the landlock tier: no TCP connect
// (not even to loopback), no UDP, no listening.
func TestLandlockNetNone(t *testing.T) {
	requireLandlockNet(t)
	py, dir, s, udpPort, udpGot, probe := llnetRig(t)
	r := runCordon(t, runOpts{dir: dir}, "--isolation", "landlock", "--net", "none", "--", "sh", "-c",
		fmt.Sprintf("env | grep -ci proxy; curl -sS -m 10 http://127.0.0.1:%d/none; echo curl_rc=$?; %s %s %d %d", s.httpPort, py, probe, s.httpPort, udpPort))
	assert.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "hello")
	assert.Contains(t, r.stdout, "curl_rc=7")
	assert.True(t, strings.HasPrefix(r.stdout, "0\n"), "no proxy variables: %s", r.stdout)
	got := probeResults(r.stdout)
	for _, k := range []string{"direct", "direct_v4mapped", "other_addr_proxy_port", "remote_proxy_port", "bind", "listen_unbound"} {
		assert.Equal(t, "EACCES", got[k], "%s; stdout: %s", k, r.stdout)
	}
	for _, k := range []string{"udp", "udp6", "raw", "packet", "vsock", "sctp", "mptcp"} {
		assert.Equal(t, "EAFNOSUPPORT", got[k], "%s; stdout: %s", k, r.stdout)
	}
	assert.Equal(t, "ENOTSUP", got["fastopen"], "EOPNOTSUPP, which Python names ENOTSUP (the same number on Linux)")
	assert.Equal(t, "ok", got["unix"])
	assert.Contains(t, r.stderr, fmt.Sprintf("cordon: denied: connect 127.0.0.1:%d by curl", s.httpPort))
	assert.Contains(t, r.stderr, "(rule: --net none)")
	assert.Zero(t, udpGot.Load())
}

// TestLandlockNetFilterUnprivileged: the tier is for users without
// privileges (where bubblewrap's user namespaces are refused): the same
// through a non-root cordon.
func TestLandlockNetFilterUnprivileged(t *testing.T) {
	requireLandlockNet(t)
	if os.Getuid() != 0 {
		// Already unprivileged: the tests above are this case.
		return
	}
	setpriv, dir, bin, work := unprivilegedWorkspace(t)
	s := startNetServers(t, dir)
	allowed := fmt.Sprintf("127.0.0.1:%d", s.httpPort)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin,
		"--isolation", "landlock", "--allow-net", allowed, "--", "sh", "-c",
		"id -u; curl -sS -m 10 http://"+allowed+"/proxied; curl -sS -m 10 --noproxy '*' http://"+allowed+"/direct; echo direct_rc=$?; "+
			// A process that made itself non-dumpable cannot have its
			// socket taken by a supervisor without privileges: its
			// connects fail closed.
			`python3 -c '
import ctypes, errno, os, socket
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
s = socket.socket()
try:
    s.connect(("127.0.0.1", int(os.environ["http_proxy"].rsplit(":", 1)[1]))); print("nondumpable=ok")
except OSError as e:
    print("nondumpable=" + errno.errorcode[e.errno])
'`)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), raceEnv, "HOME="+work)
	var errBuf strings.Builder
	cmd.Stderr = &errBuf
	out, err := cmd.Output()
	require.NoError(t, err, "stderr: %s", errBuf.String())
	assert.Equal(t, "65534\nhello host="+allowed+" path=/proxied\ndirect_rc=7\nnondumpable=EACCES\n", string(out), "stderr: %s", errBuf.String())
	assert.Contains(t, errBuf.String(), "(rule: cordon cannot take the socket to check it")
	assert.Contains(t, errBuf.String(), "cordon: denied: connect "+allowed+" by curl")
}

// TestLandlockNetFilterSession: a daemon session in the landlock tier gets
// the same network filter: each exec has the proxy's variables, reaches
// an allowed server through it, and cannot connect directly.
func TestLandlockNetFilterSession(t *testing.T) {
	requireLandlockNet(t)
	d := newDaemonEnv(t)
	d.start()
	work := t.TempDir()
	s := startNetServers(t, work)
	allowed := fmt.Sprintf("127.0.0.1:%d", s.httpPort)
	r := d.cordonOpts(runOpts{dir: work}, "session", "create", "--name", "llnet", "--isolation", "landlock", "--allow-net", allowed)
	require.Equal(t, 0, r.code, r.stderr)
	for i := range 2 {
		r = d.cordonOpts(runOpts{dir: work}, "exec", "--session", "llnet", "-c",
			fmt.Sprintf("curl -sS -m 10 http://%s/s%d; curl -sS -m 10 --noproxy '*' http://%s/direct; echo direct_rc=$?", allowed, i, allowed))
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, fmt.Sprintf("hello host=%s path=/s%d", allowed, i), r.stderr)
		assert.NotContains(t, r.stdout, "path=/direct")
		assert.Contains(t, r.stdout, "direct_rc=7")
	}
	r = d.cordonOpts(runOpts{dir: work}, "session", "rm", "llnet")
	require.Equal(t, 0, r.code, r.stderr)
}

// TestLandlockNetFilterSSHProxyCommand: git over ssh through cordon's own
// CONNECT client, which finds the landlock tier's proxy port in
// http_proxy.
func TestLandlockNetFilterSSHProxyCommand(t *testing.T) {
	requireLandlockNet(t)
	checkSSHProxyCommand(t, "--isolation", "landlock")
}
