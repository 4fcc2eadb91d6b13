package runner

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnixSocketPath(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"0000000000000000: 00000002 00000000 00010000 0001 01 12345 /run/a.sock", "/run/a.sock"},
		{"0000000000000000: 00000002 00000000 00010000 0001 01    77 /var/tmp/my svc.sock", "/var/tmp/my svc.sock"},
		{"0000000000000000: 00000002 00000000 00010000 0001 01 12345 /x/trailing ", "/x/trailing "},
		{"0000000000000000: 00000002 00000000 00010000 0001 01 12345 @abstract", "@abstract"},
		{"0000000000000000: 00000002 00000000 00010000 0001 01 12345", ""},
	} {
		got, ok := unixSocketPath(tc.line)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("unixSocketPath(%q) = %q, %v; want %q", tc.line, got, ok, tc.want)
		}
	}
}

func TestHideRaced(t *testing.T) {
	hidden := []string{"/var/tmp/a b.sock", "/srv/d.sock"}
	for _, tc := range []struct {
		detail string
		want   bool
	}{
		{"bwrap: Can't create file at /var/tmp/a b.sock: Read-only file system\n", true},
		{"bwrap: Can't create file at /srv/d.sock: No such device or address\n", true},
		{"bwrap: Can't bind mount /oldroot/dev/null on /newroot/srv/d.sock: Unable to mount source on destination: No such file or directory\n", true},
		{"bwrap: Can't mkdir parents for /srv/d.sock: Read-only file system\n", true},
		{"bwrap: Can't create file at /home/u/project/x: Read-only file system\n", false},
		{"bwrap: setting up uid map: Permission denied\n", false},
	} {
		_, got := hideRaced(&SetupError{Err: errNotReady, Detail: tc.detail}, hidden)
		if got != tc.want {
			t.Errorf("hideRaced(%q) = %v, want %v", tc.detail, got, tc.want)
		}
	}
	if _, got := hideRaced(nil, hidden); got {
		t.Error("hideRaced(nil) = true")
	}
}

// TestProxyEnvPorts: the variables name the proxy's ports, and no_proxy
// names the sandbox's own loopback only where it has one (bwrap's fixed
// ports); on the landlock tier's ephemeral ports the host's loopback is
// reached through the proxy.
func TestProxyEnvPorts(t *testing.T) {
	get := func(env []string, k string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, k+"="); ok {
				return v
			}
		}
		return "<unset>"
	}
	in := []string{"no_proxy=corp.example", "http_proxy=http://elsewhere:8080", "PATH=/bin"}
	env := ProxyEnv(in, "", bwrapProxyPorts)
	assert.Equal(t, "http://127.0.0.1:3128", get(env, "http_proxy"))
	assert.Equal(t, "socks5h://127.0.0.1:1080", get(env, "ALL_PROXY"))
	assert.Equal(t, "localhost,127.0.0.1,::1", get(env, "no_proxy"))
	env = ProxyEnv(in, "/usr/bin/cordon", ProxyPorts{HTTP: 40001, SOCKS: 40002})
	assert.Equal(t, "http://127.0.0.1:40001", get(env, "http_proxy"))
	assert.Equal(t, "http://127.0.0.1:40001", get(env, "HTTPS_PROXY"))
	assert.Equal(t, "socks5h://127.0.0.1:40002", get(env, "all_proxy"))
	assert.Equal(t, "", get(env, "no_proxy"))
	assert.Equal(t, "", get(env, "NO_PROXY"))
	assert.Contains(t, get(env, "JAVA_TOOL_OPTIONS"), "-Dhttp.proxyPort=40001")
	assert.Contains(t, get(env, "GIT_SSH_COMMAND"), "/usr/bin/cordon "+ConnectArg+" %h %p")
	assert.Equal(t, "/bin", get(env, "PATH"))
}
