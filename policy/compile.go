package policy

import (
	"errors"
	"fmt"
	"strings"
)

// rank orders matched rules: strictest wins, and a fence override allow
// wins over everything.
type rank int8

const (
	rankNone rank = iota - 1
	rankAllow
	rankAsk
	rankDeny
	rankOverride
	// rankFinal is a deny that no override lifts: fence's ssh deniedHosts
	// and deniedCommands, which fence checks before its allowed lists.
	rankFinal
)

func rankOf(r *Rule) rank {
	switch {
	case r.Final && r.Decision == Deny:
		return rankFinal
	case r.Override && r.Decision == Allow:
		return rankOverride
	case r.Decision == Deny:
		return rankDeny
	case r.Decision == Ask:
		return rankAsk
	}
	return rankAllow
}

// matcher is a rule's argument pattern compiled for one option table.
type matcher struct {
	rule int32
	rank rank
	// liberal is set for deny and ask rules: they match every spelling a
	// program would accept (abbreviated long options, clustered short
	// options, abbreviated subcommands, extra words between positional
	// words). Allow rules match only what is written.
	liberal bool
	// strict is set for allow rules that name arguments, and for any rule
	// ending in "$": every option and positional word of the exec must be
	// one the rule names (see widen, anyOpts, rest).
	strict bool
	// rest is set when the rule ends in "...": positional words may follow
	// the last one it names.
	rest bool
	// anyOpts is set by the [options] placeholder: a strict rule then
	// accepts options it does not name, anywhere.
	anyOpts bool
	// widen, when not -1, is the number of positional patterns before the
	// rule's first "...": a strict rule accepts options it does not name
	// that come after that many positional words ("allow: git status ..."
	// takes "git status -s" but not "git -c x=y status").
	widen int
	// end is set by a trailing "$": no words beyond those the rule names,
	// whatever the decision.
	end  bool
	tool *tool
	// meaning, when set, replaces the patterns: the rule names a meaning
	// (@git-force-push), checked for program mprog.
	meaning *meaning
	mprog   string
	// remote, for ssh rules, matches the remote command.
	remote *remoteRule
	pos    []posPat
	segs   []segment // pos split at the places words may be skipped
	opts   []optPat
	keys   []keyPat
}

// segment is a run of positional patterns [from, to) that must match
// consecutive positional words; gap says words may be skipped before it.
type segment struct {
	from, to int
	gap      bool
}

// subKey returns the literal subcommands m requires, or nil when m can match
// whatever the subcommand is (or is not indexable: an abbreviable or glob
// subcommand, a leading "...", no positional word).
func (m *matcher) subKey() []string {
	if m.meaning != nil {
		return nil
	}
	if !m.tool.sub || m.tool.host || len(m.pos) == 0 || len(m.segs) == 0 || m.segs[0].gap || (m.liberal && m.tool.abbrevSub) {
		return nil
	}
	var out []string
	for i := range m.pos[0].alts {
		g := &m.pos[0].alts[i]
		if !g.isLit() {
			return nil
		}
		out = append(out, g.lit)
	}
	return out
}

// segment computes m.segs. Allow rules skip words only where "..." is
// written. Deny and ask rules may skip words anywhere except before the
// subcommand of a program with subcommands.
func (m *matcher) segment() {
	m.segs = nil
	for i := range m.pos {
		gap := m.pos[i].gap || (m.liberal && (i > 0 || !m.tool.sub))
		if i == 0 || gap {
			m.segs = append(m.segs, segment{from: i, to: i + 1, gap: gap})
			continue
		}
		m.segs[len(m.segs)-1].to = i + 1
	}
}

// posPat is one positional word of a pattern.
type posPat struct {
	alts []glob
	gap  bool // preceded by "...": any number of positional words may come first
}

// optPat is one option word of a pattern; any alternative may match.
type optPat struct {
	alts []optAlt
}

type optAlt struct {
	name glob // including leading dashes: "--force", "-f"
	// short is set for "-x": one dash and one character.
	short bool
	// letters holds the letters of a single-dash word of several letters
	// ("-rf") for programs whose short options cluster.
	letters string
	hasVal  bool   // written as --opt=value, or with a table-known value
	vals    []glob // value alternatives; empty with hasVal means any value
}

// keyPat is a KEY=VALUE test: some word KEY=... with a matching value.
type keyPat struct {
	key  string // including the '='
	vals []glob // empty means any value
}

// progRef is one program alternative of a rule.
type progRef struct {
	g       glob
	path    bool // absolute path or path glob
	matcher int  // index into the rule's matchers
}

// compileRule compiles r (rule index i in the policy) into its program
// alternatives and one matcher per distinct option table.
func compileRule(r *Rule, i int32, ts toolSet) ([]progRef, []matcher, error) {
	words, err := splitWords(r.Pattern)
	if err != nil {
		return nil, nil, err
	}
	if len(words) == 0 {
		return nil, nil, ErrEmptyRule
	}
	if w := words[0]; len(w.text) > 1 && w.meta(0, '@') {
		return compileMeaning(r, i, words, ts)
	}
	progWords, err := expand(words[0])
	if err != nil {
		return nil, nil, fmt.Errorf("program: %w", err)
	}
	var (
		refs []progRef
		ms   []matcher
		byT  = map[*tool]int{}
	)
	for _, pw := range progWords {
		ref, t, err := compileProgram(pw, ts)
		if err != nil {
			return nil, nil, err
		}
		j, ok := byT[t]
		if !ok {
			m, err := compileMatcher(words[1:], t, rankOf(r), i, ts, false)
			if err != nil {
				return nil, nil, err
			}
			j = len(ms)
			byT[t] = j
			ms = append(ms, m)
		}
		ref.matcher = j
		refs = append(refs, ref)
	}
	return refs, ms, nil
}

// compileMatcher compiles a rule's words after the program for option
// table t.
//
// remote says the words are an ssh rule's remote command: a remote command
// of an allow rule is exact even with no arguments ("ssh h uptime" allows
// uptime alone), and is not split again at a nested ssh's destination.
func compileMatcher(words []word, t *tool, rk rank, i int32, ts toolSet, remote bool) (matcher, error) {
	argWords, rwords := words, []word(nil)
	if t.host && !remote {
		argWords, rwords = splitRemote(words, t)
	}
	m, err := compileArgs(argWords, t)
	if err != nil {
		return m, err
	}
	m.rule = i
	m.rank = rk
	// Deny and ask rules match loosely, so that no spelling evades them;
	// allow rules match strictly, so that an exception never lets through
	// more than it names. A bare program allow rule ("allow: ls") allows
	// the program with any arguments; "$" makes any rule exact.
	m.liberal = (rk == rankDeny || rk == rankAsk || rk == rankFinal) && !m.end
	m.strict = m.end || (!m.liberal && (len(words) > 0 || remote))
	if remote := rwords; len(remote) > 0 {
		// The remote command of an ssh rule is a rule of its own, for the
		// program it names, matched against the command ssh runs there.
		ref, rt, err := compileProgram(remote[0], ts)
		if err != nil {
			return m, fmt.Errorf("remote command: %w", err)
		}
		rm, err := compileMatcher(remote[1:], rt, rk, i, ts, true)
		if err != nil {
			return m, fmt.Errorf("remote command: %w", err)
		}
		m.remote = &remoteRule{prog: ref.g, m: rm}
		m.rest = true
	}
	m.segment()
	return m, nil
}

// splitRemote splits an ssh rule's words at the end of the destination:
// options and the host, then the remote command. A remote part that is
// only "..." or "$" stays with the host part.
func splitRemote(words []word, t *tool) (head, remote []word) {
	for i := 0; i < len(words); i++ {
		w := words[i]
		if w.bare("...") || w.bare("$") || w.bare(optionsPlaceholder) || w.bare("--") {
			continue
		}
		if len(w.text) > 1 && w.text[0] == '-' {
			if !strings.Contains(w.text, "=") && t.takesValue(w.text, true) {
				i++
			}
			continue
		}
		rest := words[i+1:]
		if len(rest) == 0 || (len(rest) == 1 && (rest[0].bare("...") || rest[0].bare("$"))) {
			return words, nil
		}
		return words[:i+1], rest
	}
	return words, nil
}

// remoteRule is the remote command part of an ssh rule.
type remoteRule struct {
	prog glob
	m    matcher
}

// compileMeaning compiles a rule naming a meaning: one matcher per program
// the meaning applies to.
func compileMeaning(r *Rule, i int32, words []word, ts toolSet) ([]progRef, []matcher, error) {
	name := words[0].text[1:]
	mn := meanings[name]
	if mn == nil {
		names := make([]string, 0, len(meanings))
		for _, m := range Meanings() {
			names = append(names, "@"+m[0])
		}
		return nil, nil, fmt.Errorf("unknown meaning %q (want one of %s)", words[0].text, strings.Join(names, ", "))
	}
	if len(words) > 1 {
		return nil, nil, fmt.Errorf("a meaning (%s) stands alone: it takes no further words", words[0].text)
	}
	var refs []progRef
	var ms []matcher
	for j, prog := range mn.progs {
		m := matcher{rule: i, rank: rankOf(r), tool: ts.get(prog), meaning: mn, mprog: prog}
		ms = append(ms, m)
		refs = append(refs, progRef{g: glob{lit: prog}, matcher: j})
	}
	return refs, ms, nil
}

func compileProgram(w word, ts toolSet) (progRef, *tool, error) {
	switch {
	case w.text == "":
		return progRef{}, nil, errors.New("empty program name")
	case w.bare("..."):
		return progRef{}, nil, errors.New(`"..." cannot name a program`)
	case strings.HasPrefix(w.text, "-"):
		return progRef{}, nil, fmt.Errorf("program %q starts with '-' (the first word names a program)", w.text)
	}
	g := compileGlob(w, 0, len(w.text))
	if strings.Contains(w.text, "/") {
		if !strings.HasPrefix(w.text, "/") {
			return progRef{}, nil, fmt.Errorf("program path %q is not absolute", w.text)
		}
		t := heuristicTool
		if i := strings.LastIndexByte(w.text, '/'); g.isLit() || noMeta(w, i+1) {
			t = ts.get(w.text[i+1:])
		}
		return progRef{g: g, path: true}, t, nil
	}
	t := heuristicTool
	if g.isLit() {
		t = ts.get(g.lit)
	}
	return progRef{g: g}, t, nil
}

// noMeta reports whether w has no unquoted * or ? from byte from on.
func noMeta(w word, from int) bool {
	for i := from; i < len(w.text); i++ {
		if w.meta(i, '*') || w.meta(i, '?') {
			return false
		}
	}
	return true
}

// optionsPlaceholder, written in a rule, accepts any options: "allow: ls
// [options] src" allows "ls -la src" but not "ls src other".
const optionsPlaceholder = "[options]"

type wordClass uint8

const (
	classPos wordClass = iota
	classOpt
	classKey
)

func classify(w word, endOpts bool) wordClass {
	if endOpts {
		return classPos
	}
	if len(w.text) > 1 && w.text[0] == '-' {
		return classOpt
	}
	if isKeyWord(w.text) {
		return classKey
	}
	return classPos
}

// isKeyWord reports whether s is KEY=... with KEY a plain name: letters,
// digits, '_', '.', '-', not starting with '-'.
func isKeyWord(s string) bool {
	e := strings.IndexByte(s, '=')
	if e <= 0 || s[0] == '-' {
		return false
	}
	for i := 0; i < e; i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// compileArgs compiles the words after the program for option table t.
func compileArgs(words []word, t *tool) (matcher, error) {
	m := matcher{tool: t, widen: -1}
	endOpts := false
	gap := false
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !endOpts && w.bare("--") {
			endOpts = true
			continue
		}
		if w.bare("...") {
			gap = true
			if m.widen < 0 {
				m.widen = len(m.pos)
			}
			if i == len(words)-1 || (i == len(words)-2 && words[i+1].bare("$")) {
				m.rest = true
			}
			continue
		}
		if w.bare("$") {
			if i != len(words)-1 {
				return m, errors.New(`"$" ends a rule: it must be the last word (quote it to match a literal $)`)
			}
			if m.rest {
				return m, errors.New(`"... $" contradicts itself: "..." allows further words, "$" forbids them`)
			}
			m.end = true
			continue
		}
		if !endOpts && w.bare(optionsPlaceholder) {
			m.anyOpts = true
			continue
		}
		alts, err := expand(w)
		if err != nil {
			return m, err
		}
		class := classify(alts[0], endOpts)
		for _, a := range alts[1:] {
			if classify(a, endOpts) != class {
				return m, fmt.Errorf("%q mixes options and words in its alternatives", w.text)
			}
		}
		switch class {
		case classOpt:
			var valWord *word
			// An option the table says takes a value takes the next word
			// as its value pattern, as the program would; written last,
			// it only tests presence.
			if len(alts) == 1 && !strings.Contains(alts[0].text, "=") && t.takesValue(alts[0].text, len(m.pos) == 0) &&
				i+1 < len(words) && !words[i+1].bare("...") && !words[i+1].bare("--") {
				i++
				valWord = &words[i]
			}
			op, err := compileOpt(alts, valWord, t)
			if err != nil {
				return m, err
			}
			m.opts = append(m.opts, op)
		case classKey:
			kp := keyPat{key: alts[0].text[:strings.IndexByte(alts[0].text, '=')+1]}
			for _, a := range alts {
				e := strings.IndexByte(a.text, '=')
				if a.text[:e+1] != kp.key {
					return m, fmt.Errorf("%q: alternatives of a KEY= test must share the key", w.text)
				}
				if e+1 < len(a.text) {
					kp.vals = append(kp.vals, compileGlob(a, e+1, len(a.text)))
				} else if len(alts) > 1 {
					return m, fmt.Errorf("%q: a bare KEY= test cannot be an alternative", w.text)
				}
			}
			m.keys = append(m.keys, kp)
		default:
			pp := posPat{gap: gap}
			gap = false
			for _, a := range alts {
				g := compileGlob(a, 0, len(a.text))
				if len(m.pos) == 0 && t.sub && g.isLit() && !t.host {
					g.lit = t.canonical(g.lit)
				}
				pp.alts = append(pp.alts, g)
			}
			m.pos = append(m.pos, pp)
			if t.stopAfter > 0 && len(m.pos) >= t.stopAfter {
				endOpts = true
			}
		}
	}
	return m, nil
}

func compileOpt(alts []word, valWord *word, t *tool) (optPat, error) {
	var op optPat
	var vals []glob
	if valWord != nil {
		vws, err := expand(*valWord)
		if err != nil {
			return op, err
		}
		for _, v := range vws {
			vals = append(vals, compileGlob(v, 0, len(v.text)))
		}
	}
	for _, a := range alts {
		if t.dashes && strings.HasPrefix(a.text, "--") {
			a = word{text: a.text[1:], lit: a.lit[1:]}
		}
		oa := optAlt{}
		end := len(a.text)
		if e := strings.IndexByte(a.text, '='); e >= 0 {
			end = e
			oa.hasVal = true
			if e+1 < len(a.text) {
				oa.vals = []glob{compileGlob(a, e+1, len(a.text))}
			}
		} else if valWord != nil {
			oa.hasVal = true
			oa.vals = vals
		}
		if end < 2 {
			return op, fmt.Errorf("option %q has no name", a.text)
		}
		oa.name = compileGlob(a, 0, end)
		if oa.name.isLit() && a.text[1] != '-' && !t.dashes {
			switch {
			case end == 2:
				oa.short = true
			case t.cluster && !oa.hasVal:
				oa.letters = a.text[1:end]
			}
		}
		op.alts = append(op.alts, oa)
	}
	return op, nil
}
