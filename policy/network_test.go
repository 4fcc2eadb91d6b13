package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalizeHost(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "GitHub.com.", want: "github.com"},
		{in: "registry.npmjs.org", want: "registry.npmjs.org"},
		{in: "[::1]", want: "::1"},
		{in: "::FFFF:10.0.0.1", want: "10.0.0.1"},
		{in: "2001:DB8::1", want: "2001:db8::1"},
		{in: "", err: "empty host"},
		{in: "bücher.example", err: "xn-- form"},
		{in: "a..b", err: "empty or over-long label"},
		{in: "127.1", err: "not a valid address or name"},
		{in: "0x7f.0.0.1", err: "not a valid address or name"},
		{in: "fe80::1%eth0", err: "zone"},
		{in: "evil.com\r\nX: y", err: "invalid character"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := NormalizeHost(tc.in)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseNetRule(t *testing.T) {
	tests := []struct {
		in      string
		host    string
		ports   []uint16
		anyPort bool
		err     string
	}{
		{in: "example.com", host: "example.com"},
		{in: "Example.COM.:8443", host: "example.com", ports: []uint16{8443}},
		{in: "*.example.com", host: "*.example.com"},
		{in: "*", host: "*"},
		{in: "*:*", host: "*", anyPort: true},
		{in: "[::1]:8080", host: "::1", ports: []uint16{8080}},
		{in: "2001:db8::5", host: "2001:db8::5"},
		{in: "10.0.0.5:8080", host: "10.0.0.5", ports: []uint16{8080}},
		{in: "ex*.com", err: "a wildcard is"},
		{in: "*.10.0.0.1", err: "needs a domain name"},
		{in: "example.com:0", err: "want a number"},
		{in: "example.com:70000", err: "want a number"},
		{in: "[::1", err: "missing ]"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			r, err := ParseNetRule(Allow, tc.in)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.host, r.Host)
			assert.Equal(t, tc.ports, r.Ports)
			assert.Equal(t, tc.anyPort, r.AnyPort)
		})
	}
}

func netPolicy(t *testing.T, rules ...NetRule) *NetPolicy {
	t.Helper()
	np, err := compileNetwork(&Network{Rules: rules})
	require.NoError(t, err)
	return np
}

func rule(t *testing.T, d Decision, text string, fors ...string) NetRule {
	t.Helper()
	r, err := ParseNetRule(d, text)
	require.NoError(t, err)
	r.For, r.Source = fors, "test"
	return r
}

func TestNetDecide(t *testing.T) {
	np := netPolicy(t,
		rule(t, Allow, "*.example.com"),
		rule(t, Allow, "api.example.org:8443"),
		rule(t, Deny, "evil.example.com"),
		rule(t, Ask, "ask.example.net"),
		rule(t, Allow, "10.0.0.5:8080"),
		rule(t, Allow, "registry.npmjs.org", "npm"),
		rule(t, Allow, "internal.example.com"),
	)
	tests := []struct {
		name  string
		q     NetQuery
		want  Decision
		exact bool
	}{
		{"subdomain", NetQuery{Host: "a.example.com", Port: 443}, Allow, false},
		{"deep subdomain", NetQuery{Host: "a.b.example.com", Port: 80}, Allow, false},
		{"wildcard is not the apex", NetQuery{Host: "example.com", Port: 443}, Deny, false},
		{"suffix trick", NetQuery{Host: "badexample.com", Port: 443}, Deny, false},
		{"no port means 80 and 443", NetQuery{Host: "a.example.com", Port: 22}, Deny, false},
		{"explicit port", NetQuery{Host: "api.example.org", Port: 8443}, Allow, true},
		{"explicit port only", NetQuery{Host: "api.example.org", Port: 443}, Deny, false},
		{"deny wins over wildcard allow", NetQuery{Host: "evil.example.com", Port: 443}, Deny, false},
		{"ask", NetQuery{Host: "ask.example.net", Port: 443}, Ask, true},
		{"exact address", NetQuery{Host: "10.0.0.5", Port: 8080}, Allow, true},
		{"unlisted", NetQuery{Host: "other.org", Port: 443}, Deny, false},
		{"for: matches the program", NetQuery{Host: "registry.npmjs.org", Port: 443, Programs: []string{"/usr/bin/npm"}}, Allow, true},
		{"for: other program", NetQuery{Host: "registry.npmjs.org", Port: 443, Programs: []string{"/usr/bin/curl"}}, Deny, false},
		{"for: unknown process", NetQuery{Host: "registry.npmjs.org", Port: 443}, Deny, false},
		{"exact among wildcards", NetQuery{Host: "internal.example.com", Port: 443}, Allow, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := np.Decide(tc.q)
			assert.Equal(t, tc.want, got.Decision, got.RuleText())
			assert.Equal(t, tc.exact, got.Exact)
		})
	}
}

func TestParseNetworkSection(t *testing.T) {
	src := `
network:
  rules:
    - allow: registry.npmjs.org
      for: npm
    - allow: "*.github.com"
    - deny: gist.github.com
      message: no gists
  examples:
    - allow: registry.npmjs.org
      for: npm
    - deny: registry.npmjs.org
    - deny: gist.github.com:443
    - allow: api.github.com:80
`
	f, err := Parse("cordon.yaml", []byte(src))
	require.NoError(t, err)
	require.NotNil(t, f.Config.Network)
	require.Len(t, f.Config.Network.Rules, 3)
	assert.Equal(t, []string{"npm"}, f.Config.Network.Rules[0].For)
	assert.Equal(t, "cordon.yaml:4", f.Config.Network.Rules[0].Source)
	p, err := Compile(f.Config)
	require.NoError(t, err)
	require.NotNil(t, p.Network())

	// An example that does not hold fails the load, naming its line.
	bad := src + "    - allow: gist.github.com\n"
	f, err = Parse("cordon.yaml", []byte(bad))
	require.NoError(t, err)
	_, err = Compile(f.Config)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cordon.yaml:15: network example gist.github.com:443: got deny")

	for _, tc := range []struct{ src, err string }{
		{"network:\n  rules:\n    - allow: \"ex*.com\"\n", "cordon.yaml:3: network rule 1"},
		{"network:\n  rules:\n    - allow: a.com\n      deny: b.com\n", "both allow and deny"},
		{"network:\n  rulez: []\n", `unknown key "rulez"`},
		{"network:\n  rules:\n    - allow: a.com\n      for: []\n", ""},
	} {
		_, err := Parse("cordon.yaml", []byte(tc.src))
		if tc.err == "" {
			assert.NoError(t, err)
			continue
		}
		require.Error(t, err, tc.src)
		assert.Contains(t, err.Error(), tc.err)
	}

	// No network section: nil, the host's network.
	f, err = Parse("cordon.yaml", []byte("rules: []\n"))
	require.NoError(t, err)
	assert.Nil(t, f.Config.Network)
}
