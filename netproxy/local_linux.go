package netproxy

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// routedLocally asks the kernel how it would route a packet to a
// (RTM_GETROUTE, as `ip route get` does) and reports whether the answer
// is a local route: delivered to the host itself.
func routedLocally(a netip.Addr) (bool, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return false, fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, fmt.Errorf("netlink bind: %w", err)
	}
	family, dst := byte(unix.AF_INET), a.AsSlice()
	if a.Is6() {
		family = unix.AF_INET6
	}
	// nlmsghdr, rtmsg, then one RTA_DST attribute.
	attrLen := unix.SizeofRtAttr + len(dst)
	n := unix.SizeofNlMsghdr + unix.SizeofRtMsg + (attrLen+3)&^3
	b := make([]byte, n)
	le := binary.NativeEndian
	le.PutUint32(b[0:], uint32(n))
	le.PutUint16(b[4:], unix.RTM_GETROUTE)
	le.PutUint16(b[6:], unix.NLM_F_REQUEST)
	le.PutUint32(b[8:], 1)
	rt := b[unix.SizeofNlMsghdr:]
	rt[0] = family
	rt[1] = byte(len(dst) * 8) // rtm_dst_len
	at := rt[unix.SizeofRtMsg:]
	le.PutUint16(at[0:], uint16(attrLen))
	le.PutUint16(at[2:], unix.RTA_DST)
	copy(at[unix.SizeofRtAttr:], dst)
	if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, fmt.Errorf("netlink send: %w", err)
	}
	buf := make([]byte, 8192)
	m, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return false, fmt.Errorf("netlink receive: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:m])
	if err != nil {
		return false, fmt.Errorf("netlink parse: %w", err)
	}
	for _, msg := range msgs {
		switch msg.Header.Type {
		case unix.NLMSG_ERROR:
			if len(msg.Data) >= 4 {
				if e := int32(le.Uint32(msg.Data)); e != 0 {
					// No route at all (ENETUNREACH): not local.
					if syscall.Errno(-e) == syscall.ENETUNREACH {
						return false, nil
					}
					return false, fmt.Errorf("route get %s: %w", a, syscall.Errno(-e))
				}
			}
		case unix.RTM_NEWROUTE:
			if len(msg.Data) < unix.SizeofRtMsg {
				return false, fmt.Errorf("route get %s: short answer", a)
			}
			// rtm_type is the rtmsg's 8th byte.
			return msg.Data[7] == unix.RTN_LOCAL, nil
		}
	}
	return false, fmt.Errorf("route get %s: no answer", a)
}
