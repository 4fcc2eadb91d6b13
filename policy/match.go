package policy

import "strings"

// maxStackArgs is how many arguments Decide classifies without allocating.
const maxStackArgs = 32

// Kinds of arguments, as classified by parseArgs.
const (
	kPos  uint8 = iota // a positional word (the subcommand, a file, a ref)
	kOpt               // an option: -f, --force, --git-dir=x
	kVal               // the separate value of the preceding option
	kSkip              // the "--" separator, or a +toolchain selector
)

// args is an argument list (argv without argv[0]) classified for one
// option table.
type args struct {
	v    []string
	kind []uint8
	pos  []int32 // indexes into v of the positional words, in order
	eq   []int16 // per option word: the index of its first '=', or -1
	sub  string  // the first positional word, as its canonical subcommand
}

// parseArgs classifies v for t, appending into the given buffers.
//
// Before the first positional word (the subcommand) an option listed in
// t.before or t.anywhere consumes the next argument as its value; after it,
// only options listed in t.anywhere do. "--" ends options: every later
// argument is positional. A word written --opt=value is always one option.
func parseArgs(t *tool, v []string, kind []uint8, pos []int32, eq []int16) args {
	beforeSub := true
	endOpts := false
	for i := 0; i < len(v); i++ {
		s := v[i]
		switch {
		case endOpts:
		case s == "--":
			kind = append(kind, kSkip)
			eq = append(eq, -1)
			endOpts = true
			continue
		case t.plus && beforeSub && len(s) > 1 && s[0] == '+':
			kind = append(kind, kSkip)
			eq = append(eq, -1)
			continue
		case len(s) > 1 && s[0] == '-':
			kind = append(kind, kOpt)
			e := strings.IndexByte(s, '=')
			eq = append(eq, int16(min(e, 1<<15-1)))
			if e < 0 && i+1 < len(v) && (t.takesValue(s, beforeSub) || t.clusterTakesValue(s, beforeSub)) {
				i++
				kind = append(kind, kVal)
				eq = append(eq, -1)
			}
			continue
		}
		kind = append(kind, kPos)
		eq = append(eq, -1)
		pos = append(pos, int32(i))
		beforeSub = false
		if t.stopAfter > 0 && len(pos) >= t.stopAfter {
			endOpts = true
		}
	}
	a := args{v: v, kind: kind, pos: pos, eq: eq}
	if len(pos) > 0 {
		a.sub = t.canonical(v[pos[0]])
	}
	return a
}

// match reports whether the classified arguments satisfy m.
func (m *matcher) match(a *args) bool {
	return m.matchArgs(a) && (m.remote == nil || m.matchRemote(a))
}

// matchArgs is match without an ssh rule's remote command (matchRemote
// calls it for that command, so it must not recurse).
func (m *matcher) matchArgs(a *args) bool {
	if m.meaning != nil {
		return m.meaning.match(m.mprog, a)
	}
	if m.strict && len(m.keys) > 0 {
		// A word a KEY= test names (dd if=x) is accounted for by the test,
		// not by the positional patterns.
		var pbuf [maxStackArgs]int32
		b := *a
		b.pos = pbuf[:0]
		for _, i := range a.pos {
			if !m.keyWord(a.v[i]) {
				b.pos = append(b.pos, i)
			}
		}
		b.sub = ""
		if len(b.pos) > 0 {
			b.sub = m.tool.canonical(b.v[b.pos[0]])
		}
		return m.matchAll(&b)
	}
	return m.matchAll(a)
}

func (m *matcher) matchAll(a *args) bool {
	if !m.matchPos(a) {
		return false
	}
	for i := range m.opts {
		if !m.opts[i].match(a, m.tool, m.liberal) {
			return false
		}
	}
	for i := range m.keys {
		if !m.keys[i].match(a) {
			return false
		}
	}
	if m.strict && m.tool.host && (!remoteIsPlain(a) || sshRedirects(a)) {
		return false
	}
	if m.strict && !m.anyOpts {
		// Every option of the exec must be one the rule names, or come
		// where a "..." accepts anything.
		seen := 0 // positional words before i
		for i, k := range a.kind {
			if seen < len(a.pos) && int(a.pos[seen]) < i {
				for seen < len(a.pos) && int(a.pos[seen]) < i {
					seen++
				}
			}
			if k == kOpt && !(m.widen >= 0 && seen >= m.widen) && !m.namesOpt(a, i) {
				return false
			}
		}
	}
	return true
}

// namesOpt reports whether one of m's option patterns matches option word i.
func (m *matcher) namesOpt(a *args, i int) bool {
	for j := range m.opts {
		for k := range m.opts[j].alts {
			if m.opts[j].alts[k].matchAt(a, m.tool, m.liberal, i) {
				return true
			}
		}
	}
	return false
}

// keyWord reports whether w is a word one of m's KEY= tests matches.
func (m *matcher) keyWord(w string) bool {
	for i := range m.keys {
		if m.keys[i].matchWord(w) {
			return true
		}
	}
	return false
}

// matchPos matches the positional patterns in order, segment by segment.
// Each segment is placed at its earliest possible position, which is
// optimal because segments do not interact.
func (m *matcher) matchPos(a *args) bool {
	cur := 0
	for _, sg := range m.segs {
		n := sg.to - sg.from
		if sg.gap {
			found := false
			for s := cur; s+n <= len(a.pos); s++ {
				if m.segAt(a, sg, s) {
					cur, found = s+n, true
					break
				}
			}
			if !found {
				return false
			}
			continue
		}
		if cur+n > len(a.pos) || !m.segAt(a, sg, cur) {
			return false
		}
		cur += n
	}
	if m.strict && !m.rest && cur != len(a.pos) {
		// A strict rule names every positional word. Its last segment
		// after a "..." may match later than its earliest place: try it
		// at the end.
		if len(m.segs) == 0 {
			return false
		}
		sg := m.segs[len(m.segs)-1]
		n := sg.to - sg.from
		s := len(a.pos) - n
		if !sg.gap || s < cur-n || !m.segAt(a, sg, s) {
			return false
		}
	}
	return true
}

// segAt reports whether segment sg matches positional words from s on.
func (m *matcher) segAt(a *args, sg segment, s int) bool {
	for k := sg.from; k < sg.to; k++ {
		i := s + k - sg.from
		if i == 0 && m.tool.sub {
			if m.tool.host {
				if !m.matchHost(a, &m.pos[k]) {
					return false
				}
				continue
			}
			if !m.pos[k].matchWord(a.sub, m.liberal && m.tool.abbrevSub) {
				return false
			}
			continue
		}
		if !m.pos[k].matchWord(a.v[a.pos[i]], false) {
			return false
		}
	}
	return true
}

// matchWord matches one word; abbrev also accepts a non-empty prefix of a
// literal alternative (an abbreviated subcommand).
func (p *posPat) matchWord(w string, abbrev bool) bool {
	for i := range p.alts {
		g := &p.alts[i]
		if g.match(w) {
			return true
		}
		if abbrev && g.isLit() && w != "" && strings.HasPrefix(g.lit, w) {
			return true
		}
	}
	return false
}

func (o *optPat) match(a *args, t *tool, liberal bool) bool {
	for i := range o.alts {
		if o.alts[i].match(a, t, liberal) {
			return true
		}
	}
	return false
}

// match looks for the option anywhere among the arguments.
func (o *optAlt) match(a *args, t *tool, liberal bool) bool {
	if o.letters != "" && liberal && o.clustered(a) {
		return true
	}
	for i := range a.kind {
		if o.matchAt(a, t, liberal, i) {
			return true
		}
	}
	return false
}

// matchAt reports whether argument i is the option o.
func (o *optAlt) matchAt(a *args, t *tool, liberal bool, i int) bool {
	if a.kind[i] != kOpt {
		return false
	}
	tok := a.v[i]
	name, val, hasEq := tok, "", false
	if e := int(a.eq[i]); e >= 0 {
		if e == 1<<15-1 {
			e = strings.IndexByte(tok, '=')
		}
		name, val, hasEq = tok[:e], tok[e+1:], true
	}
	if t.dashes && strings.HasPrefix(name, "--") {
		name = name[1:]
	}
	if !o.name.match(name) {
		switch {
		case o.short && isCluster(tok):
			// -nVALUE: a short option with its value attached; and, for
			// deny and ask rules of programs that cluster short options,
			// -xzf: a cluster containing the letter.
			cl := liberal && t.cluster
			j := strings.IndexByte(clusterLetters(tok), o.name.lit[1])
			if j < 0 || (j > 0 && !cl) {
				return false
			}
			if !o.hasVal {
				return cl
			}
			if rest := strings.TrimPrefix(tok[2+j:], "="); rest != "" {
				return o.valMatch(rest)
			}
			return o.nextMatches(a, i)
		case liberal && t.abbrev && o.name.isLit() && len(name) > 2 && name[1] == '-' && strings.HasPrefix(o.name.lit, name):
			// --forc for --force: an unambiguous abbreviation to the
			// program, and an ambiguous one fails there harmlessly.
		default:
			return false
		}
	}
	if !o.hasVal {
		return true
	}
	if hasEq {
		return o.valMatch(val)
	}
	return o.nextMatches(a, i)
}

// nextMatches reports whether the argument after option i is a value that
// matches o.
func (o *optAlt) nextMatches(a *args, i int) bool {
	return i+1 < len(a.v) && (a.kind[i+1] == kVal || a.kind[i+1] == kPos) && o.valMatch(a.v[i+1])
}

func (o *optAlt) valMatch(v string) bool {
	if len(o.vals) == 0 {
		return true
	}
	for i := range o.vals {
		if o.vals[i].match(v) {
			return true
		}
	}
	return false
}

// clustered reports whether every letter of a "-rf" pattern appears in some
// single-dash option word (-r -f, -fr, -rfv).
func (o *optAlt) clustered(a *args) bool {
	for j := 0; j < len(o.letters); j++ {
		found := false
		for i, k := range a.kind {
			if k == kOpt && isCluster(a.v[i]) && strings.IndexByte(clusterLetters(a.v[i]), o.letters[j]) >= 0 {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// isCluster reports whether s is a single-dash option word.
func isCluster(s string) bool {
	return len(s) > 1 && s[0] == '-' && s[1] != '-'
}

// clusterLetters returns the letters of a single-dash word, before any '='.
func clusterLetters(s string) string {
	s = s[1:]
	if e := strings.IndexByte(s, '='); e >= 0 {
		s = s[:e]
	}
	return s
}

func (k *keyPat) match(a *args) bool {
	for i, kd := range a.kind {
		if (kd == kPos || kd == kVal) && k.matchWord(a.v[i]) {
			return true
		}
	}
	return false
}

// matchWord reports whether s is KEY=value with a value k accepts.
func (k *keyPat) matchWord(s string) bool {
	if !strings.HasPrefix(s, k.key) {
		return false
	}
	if len(k.vals) == 0 {
		return true
	}
	for j := range k.vals {
		if k.vals[j].match(s[len(k.key):]) {
			return true
		}
	}
	return false
}

// matchHost matches a destination pattern: against the host alone and the
// word as written; for deny and ask rules, also against every host the
// connection may go through or to instead (-J, -o ProxyJump=, -o
// HostName=).
func (m *matcher) matchHost(a *args, p *posPat) bool {
	if p.matchWord(a.sub, false) || p.matchWord(a.v[a.pos[0]], false) {
		return true
	}
	if !m.liberal {
		return false
	}
	for i, k := range a.kind {
		if k != kOpt {
			continue
		}
		s := a.v[i]
		var val string
		switch {
		case s == "-J" || s == "-o":
			if i+1 >= len(a.v) {
				continue
			}
			val = a.v[i+1]
			if s == "-o" {
				val = sshOptionHosts(val)
			}
		case strings.HasPrefix(s, "-J"):
			val = s[2:]
		case strings.HasPrefix(s, "-o"):
			val = sshOptionHosts(s[2:])
		default:
			continue
		}
		for val != "" {
			h := val
			if j := strings.IndexAny(val, ", "); j >= 0 {
				h, val = val[:j], val[j+1:]
			} else {
				val = ""
			}
			if h != "" && (p.matchWord(hostOf(h), false) || p.matchWord(h, false)) {
				return true
			}
		}
	}
	return false
}

// sshRedirects reports whether ssh's options send the connection somewhere
// other than the destination as written: a jump host, or HostName,
// ProxyJump or ProxyCommand given with -o. An allow rule for a host does
// not match such a command line.
func sshRedirects(a *args) bool {
	for i, k := range a.kind {
		if k != kOpt {
			continue
		}
		s := a.v[i]
		o := ""
		switch {
		case strings.HasPrefix(s, "-J"):
			return true
		case s == "-o" && i+1 < len(a.v):
			o = a.v[i+1]
		case strings.HasPrefix(s, "-o"):
			o = s[2:]
		}
		if j := strings.IndexAny(o, "= \t"); j > 0 {
			switch strings.ToLower(o[:j]) {
			case "hostname", "proxyjump", "proxycommand":
				return true
			}
		}
	}
	return false
}

// sshOptionHosts returns the hosts an ssh -o option names when it is
// ProxyJump or HostName (KEY=VALUE or KEY VALUE, keys case-insensitive),
// or "".
func sshOptionHosts(o string) string {
	j := strings.IndexAny(o, "= \t")
	if j < 0 {
		return ""
	}
	k := o[:j]
	if !strings.EqualFold(k, "ProxyJump") && !strings.EqualFold(k, "HostName") {
		return ""
	}
	return strings.TrimLeft(o[j:], "= \t")
}

// matchRemote matches the remote command of an ssh exec (the words after
// the destination) against m.remote. A strict rule matches the whole
// command; a loose one matches it starting at any word, since the remote
// shell may run it after a separator ("cd / && rm -rf x").
func (m *matcher) matchRemote(a *args) bool {
	if len(a.pos) < 2 {
		return false
	}
	words := a.v[a.pos[1]:]
	for k := range words {
		if k > 0 && !m.liberal {
			break
		}
		w := strings.TrimLeft(words[k], "(`$")
		if !m.remote.prog.match(w) && !m.remote.prog.match(baseName(w)) {
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
