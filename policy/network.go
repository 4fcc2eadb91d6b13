package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Network is the network section of a policy: which hosts the sandbox may
// connect to through cordon's proxy (--net filter). A nil *Network in a
// Config means the policy says nothing about the network; an empty one
// means no outbound connection at all.
type Network struct {
	Rules []NetRule
	// Examples are checked by Compile, like exec examples.
	Examples []NetExample
}

// NetRule is one network rule: allow, ask or deny connections to a host
// (and ports), optionally only for connections opened by some programs.
type NetRule struct {
	Decision Decision
	// Host is the normalised host: "*" (any host), "*.example.com"
	// (subdomains only, never example.com itself), a name, or an IP
	// address in its canonical form.
	Host string
	// Ports lists the ports the rule covers; empty means AnyPort when
	// AnyPort is set, else 80 and 443.
	Ports   []uint16
	AnyPort bool
	// For limits the rule to connections whose process (or an ancestor)
	// was started as one of these programs: a bare name matches the
	// program's file name, an absolute path the program's path.
	For []string
	// Pattern is the rule as written ("registry.npmjs.org:443").
	Pattern string
	Message string
	// Source says where the rule came from ("--allow-net", "cordon.yaml:9").
	Source string
}

// NetExample is a connection with the decision the network rules must
// reach for it.
type NetExample struct {
	Decision Decision
	Host     string
	Port     uint16
	// Program, when set, is the program that opens the connection.
	Program string
	Source  string
}

// String renders the rule as a denial line names it: allow
// "registry.npmjs.org" for npm.
func (r *NetRule) String() string {
	s := fmt.Sprintf("%s %q", r.Decision, r.Pattern)
	if len(r.For) > 0 {
		s += " for " + strings.Join(r.For, ",")
	}
	return s
}

// wildcard reports whether the rule names hosts by a pattern rather than
// one exact host or address.
func (r *NetRule) wildcard() bool { return strings.HasPrefix(r.Host, "*") }

// defaultPorts are the ports a rule without one covers.
var defaultPorts = []uint16{80, 443}

// ParseNetRule parses a rule's host part: HOST, HOST:PORT, HOST:* (any
// port), [IPv6]:PORT or a bare IPv6 address. HOST is a name, "*" or
// "*.suffix".
func ParseNetRule(d Decision, text string) (NetRule, error) {
	r := NetRule{Decision: d, Pattern: text}
	host, port, err := splitHostPort(strings.TrimSpace(text))
	if err != nil {
		return r, err
	}
	switch port {
	case "":
	case "*":
		r.AnyPort = true
	default:
		p, err := parsePort(port)
		if err != nil {
			return r, err
		}
		r.Ports = []uint16{p}
	}
	switch {
	case host == "*":
		r.Host = "*"
	case strings.HasPrefix(host, "*."):
		h, err := NormalizeHost(host[2:])
		if err != nil {
			return r, err
		}
		if _, ip := netip.ParseAddr(h); ip == nil {
			return r, fmt.Errorf("%q: a wildcard needs a domain name, not an address", text)
		}
		r.Host = "*." + h
	case strings.Contains(host, "*"):
		return r, fmt.Errorf("%q: a wildcard is * alone or a leading *. (subdomains of a name)", text)
	default:
		h, err := NormalizeHost(host)
		if err != nil {
			return r, err
		}
		r.Host = h
	}
	return r, nil
}

// splitHostPort splits HOST[:PORT]; an IPv6 address is bracketed when a
// port follows, and may stand bare without one.
func splitHostPort(s string) (host, port string, err error) {
	if s == "" {
		return "", "", errors.New("empty host")
	}
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", fmt.Errorf("%q: missing ]", s)
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return host, "", nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", "", fmt.Errorf("%q: want [ADDRESS]:PORT", s)
		}
		return host, rest[1:], nil
	}
	if strings.Count(s, ":") > 1 {
		return s, "", nil // a bare IPv6 address
	}
	if h, p, ok := strings.Cut(s, ":"); ok {
		return h, p, nil
	}
	return s, "", nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q: want a number from 1 to 65535, or *", s)
	}
	return uint16(n), nil
}

// NormalizeHost returns host as rules and requests are compared: lower
// case, one trailing dot removed, an IP address in its canonical form (an
// IPv4-mapped IPv6 address as IPv4). A name must be ASCII letters, digits,
// hyphens, underscores and dots: an internationalised name must be written
// in its ASCII (punycode, xn--) form, so two spellings of one name cannot
// be told apart differently by the rules and the resolver.
func NormalizeHost(host string) (string, error) {
	h := strings.TrimSuffix(strings.ToLower(host), ".")
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if h == "" {
		return "", errors.New("empty host")
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", fmt.Errorf("host %q: an address with a zone is not allowed", host)
		}
		return a.Unmap().String(), nil
	}
	if len(h) > 253 {
		return "", fmt.Errorf("host %q: longer than 253 characters", host)
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return "", fmt.Errorf("host %q: empty or over-long label", host)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("host %q: invalid character %q (write an internationalised name in its xn-- form)", host, c)
			}
		}
	}
	// All digits and dots, but not an address: 127.1, 0x7f.1 and the like
	// are addresses to some resolvers and names to others.
	if strings.Trim(h, "0123456789.") == "" || strings.HasPrefix(h, "0x") {
		return "", fmt.Errorf("host %q: not a valid address or name", host)
	}
	return h, nil
}

// NetQuery is one connection being decided.
type NetQuery struct {
	// Host is normalised (NormalizeHost); Port is the destination port.
	Host string
	Port uint16
	// Programs are the For entries the connecting process or one of its
	// ancestors was proven, at an exec, to be an instance of (see
	// supervisor.Recognize). Empty when the process could not be
	// identified: then no rule limited with For matches.
	Programs []string
}

// NetResult is a network decision and the rule behind it.
type NetResult struct {
	Decision Decision
	// Rule is the deciding rule; nil means no rule matched (deny).
	Rule *NetRule
	// Exact reports that an allow (or ask) rule matching the query names
	// this very host or address: only then may it reach an address that is
	// not globally reachable.
	Exact bool
}

// RuleText describes the deciding rule for humans.
func (r NetResult) RuleText() string {
	if r.Rule == nil {
		return "no network rule allows it (default deny)"
	}
	if r.Rule.Message != "" {
		return r.Rule.String() + ": " + r.Rule.Message
	}
	return r.Rule.String()
}

// NetPolicy is a compiled network section, safe for concurrent use.
type NetPolicy struct {
	rules []NetRule
}

// ForPrograms returns, once each, the programs rules are limited to (the
// names and paths of every rule's For), in order.
func (n *NetPolicy) ForPrograms() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range n.rules {
		for _, f := range r.For {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out
}

// Rules returns the network rules in order.
func (n *NetPolicy) Rules() []NetRule {
	return append([]NetRule(nil), n.rules...)
}

func (r *NetRule) matchHost(h string) bool {
	switch {
	case r.Host == "*":
		return true
	case strings.HasPrefix(r.Host, "*."):
		return strings.HasSuffix(h, r.Host[1:])
	}
	return r.Host == h
}

func (r *NetRule) matchPort(p uint16) bool {
	if r.AnyPort {
		return true
	}
	ports := r.Ports
	if len(ports) == 0 {
		ports = defaultPorts
	}
	for _, q := range ports {
		if q == p {
			return true
		}
	}
	return false
}

func (r *NetRule) matchFor(progs []string) bool {
	if len(r.For) == 0 {
		return true
	}
	for _, f := range r.For {
		for _, p := range progs {
			if p == f || (!strings.Contains(f, "/") && baseName(p) == f) {
				return true
			}
		}
	}
	return false
}

// Decide decides q: the strictest matching rule wins (deny over ask over
// allow), the earliest among equals; no matching rule denies.
func (n *NetPolicy) Decide(q NetQuery) NetResult {
	res := NetResult{Decision: Deny}
	best := -1
	for i := range n.rules {
		r := &n.rules[i]
		if !r.matchHost(q.Host) || !r.matchPort(q.Port) || !r.matchFor(q.Programs) {
			continue
		}
		if best < 0 || r.Decision > n.rules[best].Decision {
			best = i
		}
		if r.Decision != Deny && !r.wildcard() {
			res.Exact = true
		}
	}
	if best >= 0 {
		res.Decision, res.Rule = n.rules[best].Decision, &n.rules[best]
	}
	return res
}

// compileNetwork checks the rules and the examples of a network section.
func compileNetwork(nw *Network) (*NetPolicy, error) {
	np := &NetPolicy{rules: append([]NetRule(nil), nw.Rules...)}
	for i := range np.rules {
		r := &np.rules[i]
		if r.Decision > Deny {
			return nil, fmt.Errorf("%s: invalid decision %s", r.Source, r.Decision)
		}
		if r.Host == "" {
			return nil, fmt.Errorf("%s: network rule without a host", r.Source)
		}
		for _, f := range r.For {
			// A program is one word, as the first word of an exec rule.
			if f == "" || strings.ContainsAny(f, " \t\n\"'\\{}") {
				return nil, fmt.Errorf("%s: for: %q: want a program name or path, one word", r.Source, f)
			}
		}
	}
	var errs []error
	for _, ex := range nw.Examples {
		q := NetQuery{Host: ex.Host, Port: ex.Port}
		if ex.Program != "" {
			q.Programs = []string{ex.Program}
		}
		if got := np.Decide(q); got.Decision != ex.Decision {
			prog := ""
			if ex.Program != "" {
				prog = " by " + ex.Program
			}
			errs = append(errs, fmt.Errorf("%s: network example %s:%d%s: got %s (%s), want %s",
				ex.Source, ex.Host, ex.Port, prog, got.Decision, got.RuleText(), ex.Decision))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return np, nil
}

// ParseNetExample parses an example's connection: HOST[:PORT] (443 when no
// port is given).
func ParseNetExample(d Decision, text string) (NetExample, error) {
	host, port, err := splitHostPort(strings.TrimSpace(text))
	if err != nil {
		return NetExample{}, err
	}
	h, err := NormalizeHost(host)
	if err != nil {
		return NetExample{}, err
	}
	ex := NetExample{Decision: d, Host: h, Port: 443}
	if port != "" {
		if ex.Port, err = parsePort(port); err != nil {
			return NetExample{}, err
		}
	}
	return ex, nil
}
