//go:build !linux

package netproxy

import "net/netip"

// routedLocally: only Linux is asked for its routing; elsewhere the
// interface addresses are the whole answer.
func routedLocally(netip.Addr) (bool, error) { return false, nil }
