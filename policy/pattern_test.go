package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func wordTexts(ws []word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.text
	}
	return out
}

func TestSplitWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{"git push", []string{"git", "push"}, ""},
		{"  git \t push\n", []string{"git", "push"}, ""},
		{`git commit -m 'a b'`, []string{"git", "commit", "-m", "a b"}, ""},
		{`echo "a \"b\" \\ c"`, []string{"echo", `a "b" \ c`}, ""},
		{`echo a\ b`, []string{"echo", "a b"}, ""},
		{`echo '' x`, []string{"echo", "", "x"}, ""},
		{`echo a'b'"c"`, []string{"echo", "abc"}, ""},
		{"", []string{}, ""},
		{`echo 'x`, nil, "unterminated ' quote"},
		{`echo "x`, nil, `unterminated " quote`},
		{`echo x\`, nil, "trailing backslash"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := splitWords(tc.in)
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, wordTexts(got))
		})
	}
}

func TestQuoteWordRoundTrip(t *testing.T) {
	for _, s := range []string{"a", "a b", "", `it's`, `say "hi"`, "tab\there", `back\slash`} {
		ws, err := splitWords(quoteWord(s))
		require.NoError(t, err, s)
		require.Len(t, ws, 1, s)
		want := strings.ReplaceAll(s, `\s`, "s") // a kept backslash escapes the next byte
		assert.Equal(t, want, ws[0].text)
	}
}

func TestExpand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{"plain", []string{"plain"}, ""},
		{"{a,b}", []string{"a", "b"}, ""},
		{"x{a,b}y", []string{"xay", "xby"}, ""},
		{"{a,b}{1,2}", []string{"a1", "a2", "b1", "b2"}, ""},
		{"{,-f}", []string{"", "-f"}, ""},
		{`\{a,b\}`, []string{"{a,b}"}, ""},
		{`'{a,b}'`, []string{"{a,b}"}, ""},
		{"{a,'b,c'}", []string{"a", "b,c"}, ""},
		{"{a", nil, `unclosed "{"`},
		{"a}", nil, `unmatched "}"`},
		{"{a,{b,c}}", nil, `nested "{" (braces do not nest)`},
		{"{a}", nil, `"{a}" has no alternatives (want {a,b}; quote braces meant literally)`},
		{strings.Repeat("{a,b,c}", 6), nil, "more than 256 alternatives"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			ws, err := splitWords(tc.in)
			require.NoError(t, err)
			require.Len(t, ws, 1)
			got, err := expand(ws[0])
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, wordTexts(got))
		})
	}
}

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern string
		s       string
		want    bool
	}{
		{"abc", "abc", true},
		{"abc", "abd", false},
		{"*", "", true},
		{"*", "anything/at/all", true},
		{"a*", "a", true},
		{"a*c", "abbbc", true},
		{"a*c", "abbbd", false},
		{"*.so*", "ld-linux.so.2", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"?", "é", true},
		{"??", "é", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"*?", "", false},
		{`\*`, "*", true},
		{`\*`, "x", false},
		{`a\?`, "a?", true},
		{"feature/*", "feature/a/b", true},
		{"**", "x", true},
	}
	for _, tc := range tests {
		t.Run(tc.pattern+" "+tc.s, func(t *testing.T) {
			ws, err := splitWords(tc.pattern)
			require.NoError(t, err)
			g := compileGlob(ws[0], 0, len(ws[0].text))
			assert.Equal(t, tc.want, g.match(tc.s))
		})
	}
}
