package netproxy

import (
	"net"
	"net/netip"
)

// HostLocal reports whether a is one of the host's own addresses: one
// configured on any of its interfaces, or (on Linux) one the kernel's
// routing decides to deliver locally (the local table: a whole prefix
// routed to lo, "AnyIP"). Such an address reaches the host's own services
// however global it looks, so it is treated as not globally reachable.
// When the host's addresses cannot be read the answer is true: refuse.
func HostLocal(a netip.Addr) bool {
	a = a.Unmap()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true
	}
	for _, ia := range addrs {
		var ip net.IP
		switch v := ia.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if b, ok := netip.AddrFromSlice(ip); ok && b.Unmap() == a {
			return true
		}
	}
	local, err := routedLocally(a)
	return err != nil || local
}
