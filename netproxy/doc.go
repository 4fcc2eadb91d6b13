// Package netproxy is the host side of --net filter: the HTTP proxy (plain
// HTTP and CONNECT) and the SOCKS5 server that serve the listeners the
// sandbox's init opened on the sandbox's loopback. Every connection is
// decided against the policy's network rules (policy.NetPolicy), the name
// is resolved here on the host, every address that is not globally
// reachable is refused unless a rule names that exact host, and the proxy
// dials the very address it checked. It never resolves a name again after
// the check, never relays to a port the rules did not allow, and never
// falls back to an unfiltered path: whatever it cannot decide is refused.
package netproxy
