package policy

import (
	"strconv"
	"strings"
)

// This file matches ssh command lines against destination patterns: the
// host and user a connection goes to however ssh is told them (options in
// clusters, -o lines as ssh's config parser reads them, hosts in any case,
// IPv4 addresses in any inet_aton spelling), and the options an allow rule
// refuses because they send the connection elsewhere or run something.

// sshOpts walks ssh's options in a, clusters included (-vJ h,
// -qoUser=x): each call of next returns one option letter and its value
// ("" for a flag). It is an iterator, not a callback, so that the words
// (on Decide's stack) do not escape.
type sshOpts struct {
	a    *args
	i, j int
}

func (it *sshOpts) next() (c byte, val string, ok bool) {
	a := it.a
	for ; it.i < len(a.kind); it.i, it.j = it.i+1, 0 {
		s := a.v[it.i]
		if a.kind[it.i] != kOpt || len(s) < 2 || s[0] != '-' || s[1] == '-' {
			continue
		}
		if it.j == 0 {
			it.j = 1
		}
		if it.j >= len(s) {
			continue
		}
		c = s[it.j]
		it.j++
		if !toolFor("ssh").anywhere[shortOpts()[c]] {
			return c, "", true
		}
		val = s[it.j:]
		if val == "" && it.i+1 < len(a.v) {
			val = a.v[it.i+1]
		}
		it.j = len(s)
		return c, val, true
	}
	return 0, "", false
}

// sshConfigLine splits an ssh -o value as ssh's config parser does: blanks
// before the key, the key (any case), then '=' or blanks, then the value,
// unquoted.
func sshConfigLine(o string) (key, val string) {
	o = strings.TrimLeft(o, " \t")
	j := strings.IndexAny(o, "= \t")
	if j < 0 {
		return strings.ToLower(o), ""
	}
	key = strings.ToLower(o[:j])
	val = strings.TrimLeft(o[j:], " \t")
	val = strings.TrimPrefix(val, "=")
	val = strings.Trim(val, " \t")
	if len(val) >= 2 && (val[0] == '"' && val[len(val)-1] == '"' || val[0] == '\'' && val[len(val)-1] == '\'') {
		val = val[1 : len(val)-1]
	}
	return key, val
}

// jumpHost returns the host of a jump or forward endpoint written
// [user@]host[:port] or ssh://[user@]host[:port].
func jumpHost(h string) string {
	h = hostOf(h)
	if strings.HasPrefix(h, "[") {
		return h
	}
	if i := strings.IndexByte(h, ':'); i >= 0 && strings.Count(h, ":") == 1 {
		h = h[:i]
	}
	return h
}

// nextField returns the part of v up to the first of seps, and the rest.
func nextField(v, seps string) (f, rest string) {
	if i := strings.IndexAny(v, seps); i >= 0 {
		return v[:i], v[i+1:]
	}
	return v, ""
}

// hostsMatch reports whether one of the hosts in v, split at seps, matches
// p (as hostWordMatch, and as jumpHost's host when jump is set).
func hostsMatch(p *posPat, v, seps string, jump bool) bool {
	for v != "" {
		var h string
		h, v = nextField(v, seps)
		h = strings.TrimSpace(h)
		if hostWordMatch(p, h) || (jump && hostWordMatch(p, jumpHost(h))) {
			return true
		}
	}
	return false
}

// otherHostMatches reports whether a host, other than the destination,
// that ssh's options make the connection go through or to matches p: -J,
// -W, -L, -R, -o HostName/ProxyJump/LocalForward/RemoteForward, and every
// word of a ProxyCommand.
func otherHostMatches(a *args, p *posPat) bool {
	it := sshOpts{a: a}
	for {
		c, val, ok := it.next()
		if !ok {
			return false
		}
		var hit bool
		switch c {
		case 'J':
			hit = hostsMatch(p, val, ",", true)
		case 'W', 'L', 'R':
			// host:port, or a forward [bind:]port:host:hostport: every
			// field is tried.
			hit = hostsMatch(p, val, ":[] ", false)
		case 'o':
			k, v := sshConfigLine(val)
			switch k {
			case "hostname":
				hit = hostWordMatch(p, v)
			case "proxyjump":
				hit = hostsMatch(p, v, ",", true)
			case "localforward", "remoteforward":
				hit = hostsMatch(p, v, ":[] ", false)
			case "proxycommand":
				hit = hostsMatch(p, v, " \t", true)
			}
		}
		if hit {
			return true
		}
	}
}

// sshUser returns the user the destination word names (user@host,
// ssh://user@host), or "".
func sshDestUser(dest string) string {
	if i := strings.Index(dest, "://"); i > 0 {
		dest = dest[i+3:]
	}
	if i := strings.LastIndexByte(dest, '@'); i > 0 {
		return dest[:i]
	}
	return ""
}

// userHostMatch reports whether u@host matches p, for a user u that -l or
// -o User= gives, or the destination's (want true), or whether any user
// given does not (want false).
func userHostMatch(a *args, p *posPat, dest, host string, want bool) bool {
	var buf [128]byte
	try := func(u string) bool {
		b := append(append(append(buf[:0], u...), '@'), host...)
		return p.matchWord(string(b), false) == want
	}
	if u := sshDestUser(dest); u != "" && try(u) {
		return true
	}
	it := sshOpts{a: a}
	for {
		c, val, ok := it.next()
		if !ok {
			return false
		}
		switch c {
		case 'l':
			if try(val) {
				return true
			}
		case 'o':
			if k, v := sshConfigLine(val); k == "user" && try(v) {
				return true
			}
		}
	}
}

// hostWordMatch matches host h against p as ssh would resolve it: as
// written, in lower case (ssh lowercases the host), without a trailing
// dot, and as the canonical dotted quad of an IPv4 address in any of
// inet_aton's spellings (127.9, 2130706441, 0x7f000009).
func hostWordMatch(p *posPat, h string) bool {
	if h == "" {
		return false
	}
	if p.matchWord(h, false) {
		return true
	}
	l := strings.TrimSuffix(strings.ToLower(h), ".")
	if l != h && p.matchWord(l, false) {
		return true
	}
	if ip, ok := inetAton(l); ok && ip != l && p.matchWord(ip, false) {
		return true
	}
	return false
}

// inetAton parses s as inet_aton does (one to four parts, each decimal,
// octal with a leading 0, or hex with 0x; the last part fills the bytes
// left) and returns the address as a dotted quad. It parses by hand so
// that s does not escape.
func inetAton(s string) (string, bool) {
	var vals [4]uint64
	n := 0
	for s != "" || n == 0 {
		if n == 4 {
			return "", false
		}
		p, rest, more := strings.Cut(s, ".")
		v, ok := atonPart(p)
		if !ok {
			return "", false
		}
		vals[n] = v
		n++
		s = rest
		if !more {
			break
		}
		if s == "" {
			return "", false
		}
	}
	var ip uint64
	for i := 0; i < n-1; i++ {
		if vals[i] > 255 {
			return "", false
		}
		ip |= vals[i] << (24 - 8*uint(i))
	}
	if vals[n-1] >= 1<<(8*uint(5-n)) {
		return "", false
	}
	ip |= vals[n-1]
	return strconv.Itoa(int(ip>>24)) + "." + strconv.Itoa(int(ip>>16&255)) + "." +
		strconv.Itoa(int(ip>>8&255)) + "." + strconv.Itoa(int(ip&255)), true
}

// atonPart parses one part of an inet_aton address.
func atonPart(p string) (uint64, bool) {
	base := uint64(10)
	switch {
	case len(p) > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, p = 16, p[2:]
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	if p == "" {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(p); i++ {
		c := p[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		v = v*base + d
		if v > 1<<32 {
			return 0, false
		}
	}
	return v, true
}

// matchHost matches a destination pattern: against the host alone and the
// word as written. Deny and ask rules also match the host in any case or
// IPv4 spelling, user@host for every user the options name, and every host
// the connection may go through or to instead (-J, -W, -L, -o HostName=,
// ...). An allow rule that names a user (deploy@dev-*) does not match when
// the options name another.
func (m *matcher) matchHost(a *args, p *posPat) bool {
	dest := a.v[a.pos[0]]
	host := a.sub
	if !m.liberal {
		if p.matchWord(host, false) {
			return true
		}
		return p.matchWord(dest, false) && !userHostMatch(a, p, dest, host, false)
	}
	if hostWordMatch(p, host) || p.matchWord(dest, false) {
		return true
	}
	if userHostMatch(a, p, dest, host, true) || userHostMatch(a, p, dest, strings.ToLower(host), true) {
		return true
	}
	return otherHostMatches(a, p)
}

// sshSafeLetters are the ssh options an allow rule's [options] accepts:
// flags and values that change how, not where, ssh connects, and nothing
// that runs or loads a program. -F (a config file can say anything), -J,
// -W, -L, -R, -D, -w (forwards and tunnels), -S, -O, -M (control sockets,
// which may carry another connection), -I (loads a library), -P (a Match
// tag) and any other letter are refused.
const sshSafeLetters = "46AaCfGgKkNnqsTtVvXxYybBceEilmpoQ"

// sshSafeConfig are the -o keys (lower case) an allow rule's [options]
// accepts; HostName, ProxyJump, ProxyCommand, RemoteCommand, LocalCommand,
// forwards, ControlPath, Include, SetEnv and the rest are refused.
var sshSafeConfig = lazySet(`port user identityfile identitiesonly connecttimeout
	serveraliveinterval serveralivecountmax stricthostkeychecking
	userknownhostsfile globalknownhostsfile batchmode loglevel compression
	connectionattempts addressfamily passwordauthentication
	pubkeyauthentication preferredauthentications kbdinteractiveauthentication
	gssapiauthentication checkhostip updatehostkeys exitonforwardfailure
	escapechar ipqos tcpkeepalive visualhostkey numberofpasswordprompts
	hashknownhosts ciphers macs kexalgorithms hostkeyalgorithms
	pubkeyacceptedalgorithms pubkeyacceptedkeytypes rekeylimit requesttty
	forwardagent forwardx11 forwardx11trusted fingerprinthash certificatefile
	casignaturealgorithms verifyhostkeydns hostkeyalias`)

// sshRedirects reports whether ssh's options do more than an allow rule
// for a host can vouch for: send the connection elsewhere, forward, run a
// command or load code (see sshSafeLetters and sshSafeConfig).
func sshRedirects(a *args) bool {
	it := sshOpts{a: a}
	for {
		c, val, ok := it.next()
		if !ok {
			return false
		}
		if strings.IndexByte(sshSafeLetters, c) < 0 {
			return true
		}
		if c == 'o' {
			if k, _ := sshConfigLine(val); !sshSafeConfig()[k] {
				return true
			}
		}
	}
}

// matchRemote matches the remote command of an ssh exec (the words after
// the destination) against m.remote. A strict rule matches the whole
// command; a loose one matches it starting at any word, since the remote
// shell may run it after a separator ("cd / && rm -rf x"), and also every
// simple command of the command as the remote shell parses it (r""m,
// \rm, a;b, sh -c '...'). A remote command that does not parse, or whose
// program word is only known at run time ($X), matches a loose rule:
// cordon cannot tell what it runs.
func (m *matcher) matchRemote(a *args) bool {
	if len(a.pos) < 2 {
		return false
	}
	words := a.v[a.pos[1]:]
	if m.matchRemoteWords(words) {
		return true
	}
	if !m.liberal {
		return false
	}
	// Copied, not strings.Join (which may return the word itself): the
	// parser keeps the script, and the words must not escape.
	var sb strings.Builder
	for i, w := range words {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(w)
	}
	script := sb.String()
	if !strings.ContainsAny(script, shellMeta) {
		return false
	}
	calls, ok := shellCalls(script, 0)
	if !ok {
		return true
	}
	for _, c := range calls {
		if m.matchRemoteWords(c) {
			return true
		}
	}
	return false
}

// matchRemoteWords matches one command's words against m.remote.
func (m *matcher) matchRemoteWords(words []string) bool {
	for k := range words {
		if k > 0 && !m.liberal {
			break
		}
		w := strings.TrimLeft(words[k], "(`$")
		if w != dynamicWord && !m.remote.prog.match(w) && !m.remote.prog.match(baseName(w)) {
			continue
		}
		var (
			kbuf [maxStackArgs]uint8
			pbuf [maxStackArgs]int32
			ebuf [maxStackArgs]int16
		)
		rt := m.remote.m.tool
		ra := parseArgs(rt, words[k+1:], kbuf[:0], pbuf[:0], ebuf[:0])
		if m.remote.m.matchArgs(&ra) {
			return true
		}
	}
	return false
}
