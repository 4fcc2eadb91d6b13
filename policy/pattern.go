package policy

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxAlternatives bounds brace expansion per word, so that a hostile or
// mistaken pattern such as {a,b}{a,b}{a,b}... cannot blow up compile time.
const maxAlternatives = 256

// word is one word of a rule pattern with quoting removed. lit marks, per
// byte of text, whether that byte was quoted or backslash-escaped and so is
// never a metacharacter (* ? { } ,).
type word struct {
	text string
	lit  []bool
}

// bare reports whether w is exactly s, written without any quoting.
func (w word) bare(s string) bool {
	if w.text != s {
		return false
	}
	for _, l := range w.lit {
		if l {
			return false
		}
	}
	return true
}

// meta reports whether byte i of w is an unquoted metacharacter c.
func (w word) meta(i int, c byte) bool {
	return w.text[i] == c && !w.lit[i]
}

// splitWords splits a rule pattern into words the way a POSIX shell would,
// minus expansions: blanks separate words, '...' quotes verbatim, "..."
// quotes with \" and \\ as the only escapes, and a backslash outside quotes
// makes the next character literal.
func splitWords(s string) ([]word, error) {
	var (
		words []word
		text  []byte
		lit   []bool
		in    bool // inside a word (possibly an empty quoted one)
	)
	flush := func() {
		if in {
			words = append(words, word{text: string(text), lit: lit})
		}
		text, lit, in = nil, nil, false
	}
	add := func(c byte, l bool) {
		text = append(text, c)
		lit = append(lit, l)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			flush()
		case '\\':
			if i+1 == len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			add(s[i], true)
			in = true
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			for k := i + 1; k <= i+j; k++ {
				add(s[k], true)
			}
			i += j + 1
			in = true
		case '"':
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
				}
				add(s[i], true)
			}
			if !closed {
				return nil, errors.New(`unterminated " quote`)
			}
			in = true
		default:
			add(c, false)
			in = true
		}
	}
	flush()
	return words, nil
}

// quoteWord renders one argv element or list-form rule word so that
// splitWords reads it back as a single word. Backslashes are kept as they
// are (they escape metacharacters in both forms); blanks and quotes are
// escaped; an empty word becomes ”.
func quoteWord(s string) string {
	if s == "" {
		return "''"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\r', '\'', '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// expand performs brace expansion on w: "pre{a,b}post" becomes "preapost"
// and "prebpost". Several groups multiply. Braces do not nest; a group needs
// at least one comma. Quoted braces and commas are literal.
func expand(w word) ([]word, error) {
	open := -1
	for i := range w.text {
		switch {
		case w.meta(i, '{'):
			if open >= 0 {
				return nil, errors.New(`nested "{" (braces do not nest)`)
			}
			open = i
		case w.meta(i, '}'):
			if open < 0 {
				return nil, errors.New(`unmatched "}"`)
			}
			return expandGroup(w, open, i)
		}
	}
	if open >= 0 {
		return nil, errors.New(`unclosed "{"`)
	}
	return []word{w}, nil
}

func expandGroup(w word, open, close int) ([]word, error) {
	var alts []word
	start := open + 1
	for i := open + 1; i <= close; i++ {
		if i == close || w.meta(i, ',') {
			alts = append(alts, word{text: w.text[start:i], lit: w.lit[start:i]})
			start = i + 1
		}
	}
	if len(alts) < 2 {
		return nil, fmt.Errorf("%q has no alternatives (want {a,b}; quote braces meant literally)", w.text[open:close+1])
	}
	pre := word{text: w.text[:open], lit: w.lit[:open]}
	rest, err := expand(word{text: w.text[close+1:], lit: w.lit[close+1:]})
	if err != nil {
		return nil, err
	}
	if len(alts)*len(rest) > maxAlternatives {
		return nil, fmt.Errorf("more than %d alternatives", maxAlternatives)
	}
	out := make([]word, 0, len(alts)*len(rest))
	for _, a := range alts {
		for _, r := range rest {
			out = append(out, concat(pre, a, r))
		}
	}
	return out, nil
}

func concat(ws ...word) word {
	var text strings.Builder
	var lit []bool
	for _, w := range ws {
		text.WriteString(w.text)
		lit = append(lit, w.lit...)
	}
	return word{text: text.String(), lit: lit}
}

// glob is a compiled token pattern: '*' matches any run of characters
// (including '/'), '?' matches one character, everything else itself.
type glob struct {
	lit  string // the whole pattern when it has no metacharacters
	toks []gtok // nil when the pattern is literal
}

type gtokKind uint8

const (
	gLit gtokKind = iota
	gStar
	gAny
)

type gtok struct {
	kind gtokKind
	s    string
}

// compileGlob compiles w[from:to] (byte offsets) into a glob.
func compileGlob(w word, from, to int) glob {
	var toks []gtok
	var run strings.Builder
	special := false
	for i := from; i < to; i++ {
		c := w.text[i]
		if !w.lit[i] && (c == '*' || c == '?') {
			special = true
			if run.Len() > 0 {
				toks = append(toks, gtok{kind: gLit, s: run.String()})
				run.Reset()
			}
			if c == '*' {
				if len(toks) > 0 && toks[len(toks)-1].kind == gStar {
					continue
				}
				toks = append(toks, gtok{kind: gStar})
			} else {
				toks = append(toks, gtok{kind: gAny})
			}
			continue
		}
		run.WriteByte(c)
	}
	if !special {
		return glob{lit: run.String()}
	}
	if run.Len() > 0 {
		toks = append(toks, gtok{kind: gLit, s: run.String()})
	}
	return glob{toks: toks}
}

// isLit reports whether g has no metacharacters.
func (g *glob) isLit() bool { return g.toks == nil }

// String renders g for diagnostics, with metacharacters unescaped.
func (g *glob) String() string {
	if g.isLit() {
		return g.lit
	}
	var b strings.Builder
	for _, t := range g.toks {
		switch t.kind {
		case gStar:
			b.WriteByte('*')
		case gAny:
			b.WriteByte('?')
		default:
			b.WriteString(t.s)
		}
	}
	return b.String()
}

// match reports whether s matches g. It does not allocate. Only the most
// recent '*' is ever backtracked, which is sufficient for patterns made of
// literals, '*' and '?'; the cost is O(len(s) * len(pattern)) at worst.
func (g *glob) match(s string) bool {
	if g.toks == nil {
		return s == g.lit
	}
	toks := g.toks
	ti, si := 0, 0
	starTi, starSi := -1, 0
	for {
		if ti < len(toks) {
			t := toks[ti]
			switch t.kind {
			case gStar:
				starTi, starSi = ti, si
				ti++
				continue
			case gAny:
				if si < len(s) {
					_, n := utf8.DecodeRuneInString(s[si:])
					si += n
					ti++
					continue
				}
			case gLit:
				if strings.HasPrefix(s[si:], t.s) {
					si += len(t.s)
					ti++
					continue
				}
			}
		} else if si == len(s) {
			return true
		}
		if starTi < 0 || starSi >= len(s) {
			return false
		}
		_, n := utf8.DecodeRuneInString(s[starSi:])
		starSi += n
		si = starSi
		ti = starTi + 1
	}
}
