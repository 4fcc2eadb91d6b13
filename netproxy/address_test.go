package netproxy

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGlobal(t *testing.T) {
	tests := []struct {
		addr   string
		global bool
	}{
		{"1.1.1.1", true},
		{"93.184.216.34", true},
		{"2606:4700:4700::1111", true},
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"172.32.0.1", true},
		{"192.168.1.1", false},
		{"169.254.169.254", false}, // cloud metadata
		{"100.64.0.1", false},      // CGNAT
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"192.0.2.1", false},    // documentation
		{"198.18.0.1", false},   // benchmarking
		{"198.51.100.7", false}, // documentation
		{"203.0.113.9", false},  // documentation
		{"224.0.0.1", false},    // multicast
		{"255.255.255.255", false},
		{"::", false},
		{"::1", false},
		{"::ffff:127.0.0.1", false}, // v4-mapped loopback
		{"::ffff:8.8.8.8", true},
		{"fc00::1", false}, // ULA
		{"fd12:3456::1", false},
		{"fe80::1", false},
		{"ff02::1", false},
		{"2001:db8::1", false},
		{"2002:a00:1::1", false},   // 6to4 (embeds 10.0.0.1)
		{"2001:0:4136::1", false},  // Teredo
		{"64:ff9b::a00:1", false},  // NAT64 of 10.0.0.1
		{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8
		{"64:ff9b:1::1", false},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			assert.Equal(t, tc.global, Global(netip.MustParseAddr(tc.addr)))
		})
	}
	assert.False(t, Global(netip.Addr{}))
}
