package tests

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/internal/testchild"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The sandbox's no_proxy names its own loopback; the tests' servers are on
// the host's loopback, which is not the sandbox's, so scripts drop it.
const noNoProxy = "unset no_proxy NO_PROXY; "

// netServers are the host-side servers a network test talks to: plain
// HTTP and HTTPS (its certificate, also the test CA, in ca), both on the
// host's loopback, each answering with the Host it was asked for.
type netServers struct {
	http, https *httptest.Server
	httpPort    int
	httpsPort   int
	ca          string
}

func startNetServers(t *testing.T, dir string) *netServers {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello host=%s path=%s\n", r.Host, r.URL.Path)
	})
	s := &netServers{http: httptest.NewServer(h), https: httptest.NewTLSServer(h)}
	t.Cleanup(s.http.Close)
	t.Cleanup(s.https.Close)
	s.httpPort = int(netip.MustParseAddrPort(s.http.Listener.Addr().String()).Port())
	s.httpsPort = int(netip.MustParseAddrPort(s.https.Listener.Addr().String()).Port())
	s.ca = filepath.Join(dir, "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.https.Certificate().Raw})
	require.NoError(t, os.WriteFile(s.ca, pemBytes, 0o644))
	return s
}

// netLines returns the "kind":"net" records of an audit file.
func netLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m["kind"] == "net" {
			out = append(out, m)
		}
	}
	return out
}

// TestNetFilterClients: real clients inside the sandbox reach the servers
// the rules name, through cordon's proxy, with nothing but the proxy
// variables cordon sets: curl (HTTP, HTTPS through CONNECT, SOCKS5 with
// remote resolution), Python's urllib, git over smart HTTP, a Go program
// with the default transport. Every connection is an audit line naming
// the process that opened it.
func TestNetFilterClients(t *testing.T) {
	requireSeccompNotify(t)
	requireTool(t, "curl")
	py := requireTool(t, "python3")
	gitBin := requireTool(t, "git")
	dir := t.TempDir()
	s := startNetServers(t, dir)

	// A bare repository served by git http-backend (smart HTTP).
	repos := t.TempDir()
	src := filepath.Join(repos, "src")
	for _, args := range [][]string{
		{"init", "-q", src},
		{"-C", src, "-c", "user.email=t@example.invalid", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "first"},
		{"clone", "-q", "--bare", src, filepath.Join(repos, "repo.git")},
	} {
		out, err := exec.Command(gitBin, args...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	gitSrv := httptest.NewServer(&cgi.Handler{
		Path: gitBin, Args: []string{"http-backend"},
		Env: []string{"GIT_PROJECT_ROOT=" + repos, "GIT_HTTP_EXPORT_ALL=1"},
	})
	defer gitSrv.Close()
	gitPort := netip.MustParseAddrPort(gitSrv.Listener.Addr().String()).Port()

	// A Go program with the default transport. Go never proxies requests
	// to "localhost" or loopback addresses, so it asks for "localhost."
	// (the same name to cordon, which needs an exact rule for it: it
	// resolves to a loopback address).
	goSrc := filepath.Join(t.TempDir(), "main.go")
	require.NoError(t, os.WriteFile(goSrc, []byte(`package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
)

func main() {
	resp, err := http.Get(os.Args[1])
	if err != nil {
		fmt.Println("go-error:", err)
		os.Exit(1)
	}
	b, _ := io.ReadAll(resp.Body)
	fmt.Printf("go-status=%d %s", resp.StatusCode, b)
}
`), 0o644))
	goProg := filepath.Join(dir, "goget")
	out, err := exec.Command("go", "build", "-o", goProg, goSrc).CombinedOutput()
	require.NoError(t, err, "%s", out)

	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	script := noNoProxy + fmt.Sprintf(`
curl -sS -m 10 http://127.0.0.1:%[1]d/plain
curl -sS -m 10 --cacert %[3]s https://127.0.0.1:%[2]d/tls
curl -sS -m 10 --socks5-hostname 127.0.0.1:1080 http://127.0.0.1:%[1]d/socks
%[4]s -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:%[1]d/python").read().decode().strip())'
%[4]s -c 'import ssl, urllib.request; print(urllib.request.urlopen("https://127.0.0.1:%[2]d/pytls", context=ssl.create_default_context(cafile="%[3]s")).read().decode().strip())'
git clone -q http://127.0.0.1:%[5]d/repo.git cloned && git -C cloned log --format=git-log=%%s
./goget http://localhost.:%[1]d/go
`, s.httpPort, s.httpsPort, s.ca, py, gitPort)
	r := runCordon(t, runOpts{dir: dir, timeout: 60 * time.Second},
		"--allow-net", fmt.Sprintf("127.0.0.1:%d", s.httpPort),
		"--allow-net", fmt.Sprintf("127.0.0.1:%d", s.httpsPort),
		"--allow-net", fmt.Sprintf("127.0.0.1:%d", gitPort),
		"--allow-net", fmt.Sprintf("localhost:%d", s.httpPort),
		// git clone makes a new .git: allowed for this run (the name is
		// refused by default, see TestRedTeamNestedRepoAndGitLinks).
		"--deny-write", "!.git",
		"--audit", audit, "--", "sh", "-c", script)
	hostPort := fmt.Sprintf("127.0.0.1:%d", s.httpPort)
	assert.Contains(t, r.stdout, "hello host="+hostPort+" path=/plain", r.stderr)
	assert.Contains(t, r.stdout, fmt.Sprintf("hello host=127.0.0.1:%d path=/tls", s.httpsPort))
	assert.Contains(t, r.stdout, "hello host="+hostPort+" path=/socks")
	assert.Contains(t, r.stdout, "hello host="+hostPort+" path=/python")
	assert.Contains(t, r.stdout, fmt.Sprintf("hello host=127.0.0.1:%d path=/pytls", s.httpsPort))
	assert.Contains(t, r.stdout, "git-log=first")
	assert.Contains(t, r.stdout, fmt.Sprintf("go-status=200 hello host=localhost:%d path=/go", s.httpPort))
	assert.NotContains(t, r.stderr, "cordon: denied")
	assert.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)

	lines := netLines(t, audit)
	byProto := map[string]int{}
	for _, l := range lines {
		assert.Equal(t, "allow", l["decision"])
		byProto[l["proto"].(string)]++
		argv, _ := l["argv"].([]any)
		require.NotEmpty(t, argv, "the audit line names the process: %v", l)
		assert.NotZero(t, l["pid"])
		assert.NotEmpty(t, l["addr"])
	}
	assert.Positive(t, byProto["http"])
	assert.Positive(t, byProto["connect"])
	assert.Positive(t, byProto["socks"])
	found := false
	for _, l := range lines {
		argv := fmt.Sprint(l["argv"])
		if strings.Contains(argv, "/socks") && l["proto"] == "socks" {
			found = true
			assert.Positive(t, l["bytes_down"].(float64))
			assert.Positive(t, l["bytes_up"].(float64))
		}
	}
	assert.True(t, found, "the SOCKS connection is attributed to the curl that made it: %v", lines)
}

// TestNetFilterBypasses: the attacks on proxy-based allowlists, each from
// inside a filtered sandbox.
func TestNetFilterBypasses(t *testing.T) {
	requireSeccompNotify(t)
	requireTool(t, "curl")
	py := requireTool(t, "python3")
	dir := t.TempDir()
	s := startNetServers(t, dir)
	allowed := fmt.Sprintf("127.0.0.1:%d", s.httpPort)
	other := fmt.Sprintf("127.0.0.1:%d", s.httpsPort) // a listening port the rules do not allow

	run := func(args ...string) result {
		t.Helper()
		script := args[len(args)-1]
		argv := append(append([]string{}, args[:len(args)-1]...), "--", "sh", "-c", noNoProxy+script)
		return runCordon(t, runOpts{dir: dir}, argv...)
	}
	tests := []struct {
		name    string
		rules   []string
		script  string
		stdout  []string
		notOut  []string
		stderr  []string
		wantErr bool
	}{
		{
			name:   "unlisted port refused with 403 and a denial line",
			rules:  []string{"--allow-net", allowed},
			script: fmt.Sprintf("curl -sS -m 10 -w ' code=%%{http_code}' http://%s/", other),
			stdout: []string{"cordon: denied: connect " + other, "code=403"},
			stderr: []string{fmt.Sprintf(`cordon: denied: connect %s by curl -sS -m 10 -w " code=%%{http_code}" http://%s/ (rule: no network rule allows it (default deny))`, other, other)},
		},
		{
			name:   "direct connection bypassing the proxy",
			rules:  []string{"--allow-net", allowed},
			script: fmt.Sprintf("curl -sS -m 10 --noproxy '*' http://%s/; echo rc=$?", allowed),
			stdout: []string{"rc=7"},
			notOut: []string{"hello"},
		},
		{
			name:   "CONNECT relay to a port the rules do not allow",
			rules:  []string{"--allow-net", allowed},
			script: fmt.Sprintf("curl -sS -m 10 -p --cacert %s https://%s/; echo rc=$?", s.ca, other),
			stdout: []string{"rc=56"},
			stderr: []string{"cordon: denied: connect " + other + " by curl"},
		},
		{
			name:   "the wildcard * never reaches a loopback address or a name that resolves to one",
			rules:  []string{"--allow-net", "*:*"},
			script: fmt.Sprintf("curl -sS -m 10 http://%s/; curl -sS -m 10 http://localhost:%d/", allowed, s.httpPort),
			notOut: []string{"hello"},
			stderr: []string{"cordon: denied: connect " + allowed + " by curl", "which is not globally reachable",
				fmt.Sprintf("cordon: denied: connect localhost:%d by curl", s.httpPort)},
		},
		{
			name:   "a subdomain wildcard does not reach a name resolving to loopback",
			rules:  []string{"--allow-net", "*.localhost:*", "--allow-net", "*.localhost"},
			script: fmt.Sprintf("curl -sS -m 10 http://a.localhost:%d/ ; echo", s.httpPort),
			notOut: []string{"hello"},
			stderr: []string{"cordon: denied: connect a.localhost:"},
		},
		{
			name:   "upper case and a trailing dot are the same name (allow)",
			rules:  []string{"--allow-net", fmt.Sprintf("localhost:%d", s.httpPort)},
			script: fmt.Sprintf("curl -sS -m 10 http://LocalHost.:%d/x", s.httpPort),
			stdout: []string{fmt.Sprintf("hello host=localhost:%d path=/x", s.httpPort)},
		},
		{
			name:   "upper case and a trailing dot are the same name (deny wins)",
			rules:  []string{"--allow-net", "localhost:*", "--deny-net", fmt.Sprintf("localhost:%d", s.httpPort)},
			script: fmt.Sprintf("curl -sS -m 10 http://LOCALHOST.:%d/ ; curl -sS -m 10 --socks5-hostname 127.0.0.1:1080 http://LocalHost:%d/", s.httpPort, s.httpPort),
			notOut: []string{"hello"},
			stderr: []string{fmt.Sprintf("cordon: denied: connect localhost:%d by curl", s.httpPort), "(rule: deny"},
		},
		{
			name:   "an IPv6 literal is decided as itself",
			rules:  []string{"--allow-net", allowed},
			script: fmt.Sprintf("curl -sS -m 10 http://[::1]:%d/; curl -sS -m 10 http://[::ffff:127.0.0.1]:%d/", s.httpPort, s.httpsPort),
			notOut: []string{"hello"},
			stderr: []string{fmt.Sprintf("cordon: denied: connect [::1]:%d by curl", s.httpPort),
				// An IPv4-mapped address is its IPv4 address.
				fmt.Sprintf("cordon: denied: connect 127.0.0.1:%d by curl", s.httpsPort)},
		},
		{
			name:   "a Host header naming another site is not relayed",
			rules:  []string{"--allow-net", allowed},
			script: fmt.Sprintf("curl -sS -m 10 -H 'Host: evil.example' http://%s/h; curl -sS -m 10 -w ' code=%%{http_code}' -H 'Host: %s' http://%s/", allowed, allowed, other),
			stdout: []string{"hello host=" + allowed + " path=/h", "code=403"},
			notOut: []string{"evil.example path"},
		},
		{
			name:   "SOCKS refusal",
			rules:  []string{"--allow-net", allowed},
			script: fmt.Sprintf("curl -sS -m 10 --socks5-hostname 127.0.0.1:1080 http://%s/; echo rc=$?", other),
			stdout: []string{"rc=97"},
			stderr: []string{"cordon: denied: connect " + other + " by curl"},
		},
		{
			name:  "raw sockets, UDP DNS to a public resolver and to the host's resolver",
			rules: []string{"--allow-net", allowed},
			script: py + ` -c '
import socket
for target in [("8.8.8.8", 53)] + [(l.split()[1], 53) for l in open("/etc/resolv.conf") if l.startswith("nameserver")]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
    try:
        s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01", target)
        s.recvfrom(512); print("dns-answered", target)
    except OSError as e: print("dns-failed", type(e).__name__)
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print("raw-opened")
except OSError as e: print("raw-failed", e.errno)
try:
    socket.getaddrinfo("example.com", 443); print("resolved")
except OSError as e: print("resolve-failed")
'`,
			stdout: []string{"dns-failed", "raw-failed", "resolve-failed"},
			notOut: []string{"dns-answered", "raw-opened", "resolved\n"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(append(append([]string{}, tc.rules...), tc.script)...)
			for _, want := range tc.stdout {
				assert.Contains(t, r.stdout, want, "stderr: %s", r.stderr)
			}
			for _, not := range tc.notOut {
				assert.NotContains(t, r.stdout, not)
			}
			for _, want := range tc.stderr {
				assert.Contains(t, r.stderr, want, "stdout: %s", r.stdout)
			}
		})
	}
}

// TestNetFilterUnixSockets: a pathname Unix socket on the read-only root
// (a D-Bus, nscd or docker socket: DNS or root through the back door) is
// out of reach in a filtered sandbox, and reachable without the filter
// (so the test can tell).
func TestNetFilterUnixSockets(t *testing.T) {
	requireSeccompNotify(t)
	script := hostUnixSocket(t, "svc.sock")
	r := runCordon(t, runOpts{}, "--net", "host", "--", "sh", "-c", script)
	require.Contains(t, r.stdout, "got secret", "control: without the filter the socket is reachable: %s", r.stderr)
	r = runCordon(t, runOpts{}, "--net", "filter", "--", "sh", "-c", script)
	assert.Contains(t, r.stdout, "unix-failed")
	assert.NotContains(t, r.stdout, "secret")
	r = runCordon(t, runOpts{}, "--net", "filter", "--", "sh", "-c", "ls -A /run | wc -l")
	assert.Equal(t, "0", strings.TrimSpace(r.stdout), "/run is empty in a filtered sandbox")
}

// TestNetFilterForProgram: a rule limited with for: matches only the
// processes (and their descendants) exec'd as that program, decided by what
// the supervisor saw at exec, not by a name the workload chose.
func TestNetFilterForProgram(t *testing.T) {
	requireSeccompNotify(t)
	curl := requireTool(t, "curl")
	py := requireTool(t, "python3")
	dir := t.TempDir()
	s := startNetServers(t, dir)
	allowed := fmt.Sprintf("127.0.0.1:%d", s.httpPort)
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte(fmt.Sprintf(`version: 1
network:
  rules:
    - allow: "%s"
      for: curl
  examples:
    - allow: "%s"
      for: curl
    - deny: "%s"
      for: python3
`, allowed, allowed, allowed)), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	script := noNoProxy + fmt.Sprintf(`
curl -sS -m 10 http://%[1]s/curl
sh -c 'curl -sS -m 10 http://%[1]s/child'
%[2]s -c 'import urllib.request
try: print(urllib.request.urlopen("http://%[1]s/python").read().decode().strip())
except Exception as e: print("python-refused", e)'
cp %[3]s bin/curl && bin/curl -sS -m 10 http://%[1]s/copy
`, allowed, py, curl)
	r := runCordon(t, runOpts{dir: dir}, "--policy", pol, "--", "sh", "-c", script)
	assert.Contains(t, r.stdout, "path=/curl", r.stderr)
	assert.Contains(t, r.stdout, "path=/child")
	assert.Contains(t, r.stdout, "python-refused")
	assert.NotContains(t, r.stdout, "path=/python")
	assert.NotContains(t, r.stdout, "path=/copy", "a copy of curl the sandbox wrote is not curl")
	assert.Regexp(t, `cordon: denied: connect `+allowed+` by \S*python3\S* -c`, r.stderr)
	assert.Contains(t, r.stderr, "cordon: denied: connect "+allowed+" by bin/curl")
}

// TestNetFilterForScript: for: names a program as exec rules do, by
// identity: npm is a symlink to a node script run through env, and its
// connections are npm's; a symlink named npm to curl is not npm.
func TestNetFilterForScript(t *testing.T) {
	requireSeccompNotify(t)
	requireTool(t, "npm")
	curl := requireTool(t, "curl")
	dir := t.TempDir()
	s := startNetServers(t, dir)
	allowed := fmt.Sprintf("127.0.0.1:%d", s.httpPort)
	script := noNoProxy + fmt.Sprintf(`
unset npm_config_noproxy
npm ping --fetch-retries=0 --cache "$PWD/.npm" --registry http://%[1]s/ >/dev/null 2>&1; echo npm-rc=$?
ln -s %[2]s npm && ./npm -sS -m 10 http://%[1]s/fake-npm
`, allowed, curl)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(pol, []byte(fmt.Sprintf("network:\n  rules:\n    - allow: \"%s\"\n      for: npm\n", allowed)), 0o644))
	r := runCordon(t, runOpts{dir: dir, timeout: 60 * time.Second}, "--policy", pol, "--audit", audit, "--", "sh", "-c", script)
	assert.NotContains(t, r.stdout, "path=/fake-npm", r.stderr)
	assert.Contains(t, r.stderr, "cordon: denied: connect "+allowed+" by ./npm")
	var npmAllowed bool
	for _, l := range netLines(t, audit) {
		if strings.Contains(fmt.Sprint(l["argv"]), "ping") {
			assert.Equal(t, "allow", l["decision"], "npm's connection: %v", l)
			npmAllowed = true
		}
	}
	assert.True(t, npmAllowed, "npm connected through the proxy: %s", r.stderr)
}

// TestNetFilterProxyLoad: a slowloris and a burst of 10,000 connections from
// inside the sandbox neither stop the proxy nor leave descriptors open in
// cordon.
func TestNetFilterProxyLoad(t *testing.T) {
	requireSeccompNotify(t)
	py := requireTool(t, "python3")
	dir := t.TempDir()
	s := startNetServers(t, dir)
	allowed := fmt.Sprintf("127.0.0.1:%d", s.httpPort)
	script := noNoProxy + fmt.Sprintf(`
wait_for() { while [ ! -e "$1" ]; do sleep 0.05; done; }
curl -sS -m 10 http://%[1]s/before; touch ready1; wait_for go1
%[2]s -c '
import socket
slow = []
for i in range(100):
    s = socket.create_connection(("127.0.0.1", 3128)); s.send(b"GET http://x/ HTTP/1.1\r\nHo"); slow.append(s)
    s = socket.create_connection(("127.0.0.1", 1080)); s.send(b"\x05"); slow.append(s)
n = 0
for batch in range(20):
    conns = []
    for i in range(500):
        try:
            conns.append(socket.create_connection(("127.0.0.1", 3128 if i %% 2 else 1080), timeout=30)); n += 1
        except OSError as e:
            print("connect-failed", e)
    for c in conns: c.close()
print("burst", n)
for s in slow: s.close()
'
curl -sS -m 30 http://%[1]s/after; touch ready2; wait_for go2
`, allowed, py)
	cmd := exec.Command(cordonBin, "--allow-net", allowed, "--", "sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), raceEnv)
	// Read while cordon writes: locked buffers.
	stdout, stderr := &testchild.LockedBuffer{}, &testchild.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-done
	}()
	waitFile := func(name string) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s; stdout: %s\nstderr: %s", name, stdout.String(), stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	fds := func() int {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
		require.NoError(t, err)
		return len(ents)
	}
	waitFile("ready1")
	before := fds()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go1"), nil, 0o644))
	waitFile("ready2")
	// Connections end asynchronously in the proxy; give them a bound.
	after := fds()
	for deadline := time.Now().Add(15 * time.Second); after > before && time.Now().Before(deadline); after = fds() {
		time.Sleep(50 * time.Millisecond)
	}
	assert.LessOrEqual(t, after, before, "cordon's descriptors before and after the burst")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go2"), nil, 0o644))
	require.NoError(t, <-done, "stdout: %s\nstderr: %s", stdout.String(), stderr.String())
	done <- nil
	assert.Contains(t, stdout.String(), "path=/before")
	assert.Contains(t, stdout.String(), "burst 10000")
	assert.Contains(t, stdout.String(), "path=/after")
}

// TestNetFilterSession: a daemon session with a network policy filters its
// processes' connections and reports them on its decisions.
func TestNetFilterSession(t *testing.T) {
	d := newDaemonEnv(t)
	requireTool(t, "curl")
	dir := t.TempDir()
	s := startNetServers(t, dir)
	allowed := fmt.Sprintf("127.0.0.1:%d", s.httpPort)
	other := fmt.Sprintf("127.0.0.1:%d", s.httpsPort)
	r := d.cordonOpts(runOpts{dir: dir}, "session", "create", "--name", "net", "--allow-net", allowed)
	require.Equal(t, 0, r.code, "%s%s", r.stdout, r.stderr)
	r = d.cordonOpts(runOpts{dir: dir}, "exec", "--session", "net", "--", "sh", "-c",
		noNoProxy+fmt.Sprintf("env | grep -c '^https_proxy=http://127.0.0.1:3128$'; curl -sS -m 10 http://%s/in-session; curl -sS -m 10 -p http://%s/", allowed, other))
	assert.Contains(t, r.stdout, "1\n")
	assert.Contains(t, r.stdout, "path=/in-session")
	assert.Contains(t, r.stderr, "cordon: denied: connect "+other+" by curl -sS -m 10 -p")

	// --json carries the records with their fields.
	r = d.cordonOpts(runOpts{dir: dir}, "exec", "--json", "--session", "net", "--", "sh", "-c",
		noNoProxy+fmt.Sprintf("curl -sS -m 10 -p http://%s/", other))
	var res struct {
		Decisions []map[string]any `json:"decisions"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res), r.stdout)
	var found bool
	for _, dec := range res.Decisions {
		if dec["kind"] == "net" {
			found = true
			assert.Equal(t, "deny", dec["decision"])
			assert.Equal(t, "127.0.0.1", dec["host"])
			assert.EqualValues(t, s.httpsPort, dec["port"])
		}
	}
	assert.True(t, found, "a net decision in %s", r.stdout)

	// A session with --net filter and no rule has no way out.
	r = d.cordonOpts(runOpts{dir: dir}, "exec", "--net", "filter", "--", "sh", "-c",
		noNoProxy+fmt.Sprintf("curl -sS -m 10 http://%s/; echo rc=$?", allowed))
	assert.NotContains(t, r.stdout, "hello")
	assert.Contains(t, r.stderr, "cordon: denied: connect "+allowed)
}

// TestNetFilterFenceAndFlags: a fence config without a network section
// means no network (with a notice); --net host with network rules is an
// error; policy show lists the rules.
func TestNetFilterFenceAndFlags(t *testing.T) {
	requireSeccompNotify(t)
	dir := t.TempDir()
	s := startNetServers(t, dir)
	allowed := fmt.Sprintf("127.0.0.1:%d", s.httpPort)
	fence := filepath.Join(t.TempDir(), "fence.json")
	require.NoError(t, os.WriteFile(fence, []byte(`{"command": {"deny": ["git push"]}}`), 0o644))
	r := runCordon(t, runOpts{dir: dir}, "--policy", fence, "--", "sh", "-c", noNoProxy+"curl -sS -m 10 http://"+allowed+"/")
	assert.Contains(t, r.stderr, "cordon: notice: "+fence+": this fence config has no network section")
	assert.Contains(t, r.stderr, "cordon: denied: connect "+allowed)
	assert.NotContains(t, r.stdout, "hello")

	require.NoError(t, os.WriteFile(fence, []byte(`{"network": {"allowedDomains": ["`+allowed+`"], "deniedDomains": ["*.evil.example"]}}`), 0o644))
	r = runCordon(t, runOpts{dir: dir}, "--policy", fence, "--", "sh", "-c", noNoProxy+"curl -sS -m 10 http://"+allowed+"/fence")
	assert.Contains(t, r.stdout, "path=/fence", r.stderr)

	r = runCordon(t, runOpts{dir: dir}, "--net", "host", "--allow-net", "example.com", "--", "true")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "--net host: the policy has network rules (--allow-net)")

	r = runCordon(t, runOpts{dir: dir}, "policy", "show", "--policy", fence, "--deny-net", "*.example.org:*")
	assert.Contains(t, r.stdout, "network:  filter")
	assert.Contains(t, r.stdout, "allow  127.0.0.1")
	assert.Contains(t, r.stdout, "--deny-net")

	// ask rules: denied unless --ask says otherwise, with the rule's message.
	askPol := filepath.Join(t.TempDir(), "ask.yaml")
	require.NoError(t, os.WriteFile(askPol, []byte("network:\n  rules:\n    - ask: \""+allowed+"\"\n      message: ask me\n"), 0o644))
	script := noNoProxy + "curl -sS -m 10 http://" + allowed + "/asked"
	r = runCordon(t, runOpts{dir: dir}, "--policy", askPol, "--", "sh", "-c", script)
	assert.NotContains(t, r.stdout, "path=/asked")
	assert.Contains(t, r.stderr, `(rule: ask "`+allowed+`": ask me)`)
	r = runCordon(t, runOpts{dir: dir}, "--policy", askPol, "--ask", "allow", "--", "sh", "-c", script)
	assert.Contains(t, r.stdout, "path=/asked", r.stderr)

	r = runCordon(t, runOpts{dir: dir}, "--allow-net", "ex*ample.com", "--", "true")
	assert.Equal(t, 125, r.code)
	assert.Contains(t, r.stderr, "--allow-net")
}

// TestNetFilterSSHProxyCommand: git over ssh goes through the proxy with
// cordon's own binary as ssh's ProxyCommand (GIT_SSH_COMMAND), decided like
// any connection.
func TestNetFilterSSHProxyCommand(t *testing.T) {
	requireSeccompNotify(t)
	checkSSHProxyCommand(t)
}

// checkSSHProxyCommand runs TestNetFilterSSHProxyCommand's checks in a
// sandbox made with args (the tier).
func checkSSHProxyCommand(t *testing.T, args ...string) {
	t.Helper()
	requireTool(t, "git")
	requireTool(t, "ssh")
	dir := t.TempDir()
	s := startNetServers(t, dir)
	allowed := fmt.Sprintf("127.0.0.1:%d", s.httpPort)
	other := fmt.Sprintf("%d", s.httpsPort)
	script := noNoProxy + fmt.Sprintf(`
case "$GIT_SSH_COMMAND" in *"__cordon-connect %%h %%p'"*) echo ssh-command-set;; esac
helper=$(echo "$GIT_SSH_COMMAND" | sed "s/.*ProxyCommand='\([^ ]*\) .*/\1/")
printf 'GET /tunnel HTTP/1.0\r\n\r\n' | "$helper" __cordon-connect 127.0.0.1 %d
GIT_TERMINAL_PROMPT=0 git ls-remote ssh://git@127.0.0.1:%s/x.git; echo git-rc=$?
`, s.httpPort, other)
	r := runCordon(t, runOpts{dir: dir}, append(args, "--allow-net", allowed, "--", "sh", "-c", script)...)
	assert.Contains(t, r.stdout, "ssh-command-set", r.stderr)
	assert.Contains(t, r.stdout, "hello host= path=/tunnel")
	assert.Contains(t, r.stdout, "git-rc=128")
	assert.Contains(t, r.stderr, "cordon: denied: connect 127.0.0.1:"+other+" by ")
	assert.Contains(t, r.stderr, "__cordon-connect 127.0.0.1 "+other)
}

// hostUnixSocket serves "secret" on a Unix socket named name in a fresh
// directory under /var/tmp (outside the sandbox's private /tmp), and
// returns the shell command that connects to it from a sandbox and prints
// "got secret" or "unix-failed ERRNO".
func hostUnixSocket(t *testing.T, name string) (script string) {
	t.Helper()
	py := requireTool(t, "python3")
	base, err := os.MkdirTemp("/var/tmp", "cnu")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	sock := filepath.Join(base, name)
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("secret\n"))
			c.Close()
		}
	}()
	return py + ` -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1]); print("got", s.recv(16).decode().strip())
except OSError as e: print("unix-failed", e.errno)
' "` + sock + `"`
}
