package netproxy

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHostLocal: the host's loopback addresses are its own (the kernel's
// routing says so), a documentation address routed nowhere is not.
func TestHostLocal(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "127.3.4.5", "::1"} {
		if !HostLocal(netip.MustParseAddr(a)) {
			t.Errorf("HostLocal(%s) = false, want true", a)
		}
	}
	for _, a := range []string{"198.51.100.7", "8.8.8.8"} {
		local, err := routedLocally(netip.MustParseAddr(a))
		if err != nil {
			t.Fatalf("routedLocally(%s): %v", a, err)
		}
		if local {
			t.Errorf("routedLocally(%s) = true, want false", a)
		}
	}
}

// TestDecideResolvedAddresses: each address a name resolves to is decided
// against the address rules (a deny on the address wins over the name's
// allow; the other addresses stay usable), and the host's own addresses
// are refused to a wildcard.
func TestDecideResolvedAddresses(t *testing.T) {
	resolve := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("93.184.0.1"), netip.MustParseAddr("93.184.0.2")}, nil
	}
	own := func(a netip.Addr) bool { return a == netip.MustParseAddr("93.184.0.2") }
	mk := func(rules ...string) *Proxy {
		nw := &policy.Network{}
		for _, s := range rules {
			d, text, _ := strings.Cut(s, " ")
			dec, err := policy.ParseDecision(d)
			require.NoError(t, err)
			r, err := policy.ParseNetRule(dec, text)
			require.NoError(t, err)
			nw.Rules = append(nw.Rules, r)
		}
		pol, err := policy.Compile(policy.Config{Network: nw})
		require.NoError(t, err)
		return New(Options{Policy: pol.Network(), Resolve: resolve, Local: own})
	}
	ctx := context.Background()
	// The first address is denied by an address rule: the second is used.
	got, rec := mk("allow svc.example:443", "deny 93.184.0.1:443").decide(ctx, "connect", "svc.example", 443, Endpoints{})
	assert.Equal(t, "93.184.0.2:443", got.String(), rec.RuleText())
	// Both denied (one by an ask rule, which also wins): refused.
	got, rec = mk("allow svc.example:443", "deny 93.184.0.1:443", "ask 93.184.0.2:443").decide(ctx, "connect", "svc.example", 443, Endpoints{})
	assert.False(t, got.IsValid())
	assert.True(t, rec.Refused())
	assert.Contains(t, rec.RuleText(), "resolves to 93.184.0.1, refused by deny")
	// A wildcard: the host's own address is skipped, the other used.
	got, _ = mk("allow *:443", "deny 93.184.0.1:443").decide(ctx, "connect", "svc.example", 443, Endpoints{})
	assert.False(t, got.IsValid(), "only the host's own address was left")
	got, _ = mk("allow *:443").decide(ctx, "connect", "svc.example", 443, Endpoints{})
	assert.Equal(t, "93.184.0.1:443", got.String())
	// The host's own address by literal: a wildcard refuses, an exact rule reaches.
	got, rec = mk("allow *:443").decide(ctx, "connect", "93.184.0.2", 443, Endpoints{})
	assert.False(t, got.IsValid())
	assert.Contains(t, rec.RuleText(), "the host's own")
	got, _ = mk("allow 93.184.0.2:443").decide(ctx, "connect", "93.184.0.2", 443, Endpoints{})
	assert.Equal(t, "93.184.0.2:443", got.String())
}
