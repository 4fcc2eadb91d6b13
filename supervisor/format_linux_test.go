package supervisor

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/stretchr/testify/assert"
)

func TestFormatArgv(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		want string
	}{
		{name: "nil", argv: nil, want: ""},
		{name: "plain words", argv: []string{"git", "push", "origin", "main"}, want: "git push origin main"},
		{name: "space", argv: []string{"echo", "a b"}, want: `echo "a b"`},
		{name: "tab", argv: []string{"echo", "a\tb"}, want: `echo "a\tb"`},
		{name: "double quotes", argv: []string{"echo", `say "hi"`}, want: `echo "say \"hi\""`},
		{name: "single quote", argv: []string{"echo", "it's"}, want: `echo "it's"`},
		{name: "newline", argv: []string{"printf", "a\nb"}, want: `printf "a\nb"`},
		{name: "carriage return", argv: []string{"printf", "a\rb"}, want: `printf "a\rb"`},
		{name: "empty word", argv: []string{"touch", ""}, want: `touch ""`},
		{name: "only an empty word", argv: []string{""}, want: `""`},
		{name: "dollar", argv: []string{"echo", "$HOME"}, want: `echo "$HOME"`},
		{name: "backslash", argv: []string{"echo", `a\b`}, want: `echo "a\\b"`},
		{name: "backtick", argv: []string{"echo", "`id`"}, want: "echo \"`id`\""},
		{name: "invalid UTF-8", argv: []string{"cat", "\xff\xfe"}, want: `cat "\xff\xfe"`},
		{name: "printable non-ASCII stays bare", argv: []string{"echo", "héllo", "日本"}, want: "echo héllo 日本"},
		{name: "bidi override is escaped", argv: []string{"cat", "txt.\u202eexe"}, want: `cat "txt.\u202eexe"`},
		{name: "line separator is escaped", argv: []string{"echo", "a\u2028b"}, want: `echo "a\u2028b"`},
		{name: "escape sequence", argv: []string{"echo", "\x1b[2J"}, want: `echo "\x1b[2J"`},
		{name: "exactly the limit is not cut", argv: []string{strings.Repeat("a", maxLineArgv)}, want: strings.Repeat("a", maxLineArgv)},
		{name: "one byte over the limit is cut", argv: []string{strings.Repeat("a", maxLineArgv+1)}, want: strings.Repeat("a", maxLineArgv) + "..."},
		{name: "a word crossing the limit is cut", argv: []string{"x", strings.Repeat("b", maxLineArgv)}, want: "x " + strings.Repeat("b", maxLineArgv-2) + "..."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, FormatArgv(tc.argv))
		})
	}
}

// TestFormatArgvProperties checks what a denial line must be for any argv:
// one line, bounded, and valid UTF-8 so a terminal shows it as written.
func TestFormatArgvProperties(t *testing.T) {
	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprint("arg", i)
	}
	tests := []struct {
		name string
		argv []string
	}{
		{name: "10,000 words", argv: many},
		{name: "one 1 MiB word", argv: []string{"echo", strings.Repeat("x", 1<<20)}},
		{name: "newlines everywhere", argv: []string{"a\nb", "\n", "c\r\nd"}},
		{name: "two-byte runes cut at an odd offset", argv: []string{"xy", strings.Repeat("é", 300)}},
		{name: "three-byte runes cut mid-rune", argv: []string{"xy", strings.Repeat("日", 300)}},
		{name: "four-byte runes cut mid-rune", argv: []string{"a", strings.Repeat("🙂", 200)}},
		{name: "quoted word with multi-byte runes cut mid-rune", argv: []string{"echo", "ab " + strings.Repeat("é", 300)}},
		{name: "multi-byte runes cut on a rune boundary", argv: []string{"x", strings.Repeat("é", 300)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := FormatArgv(tc.argv)
			assert.NotContains(t, got, "\n")
			assert.NotContains(t, got, "\r")
			assert.LessOrEqual(t, len(got), maxLineArgv+len("..."))
			assert.True(t, utf8.ValidString(got), "FormatArgv cut a multi-byte rune: it ends in %q", got[max(0, len(got)-8):])
		})
	}
}

func TestDenialLine(t *testing.T) {
	tests := []struct {
		name   string
		argv   []string
		result policy.Result
		want   string
	}{
		{
			name:   "rule",
			argv:   []string{"git", "push", "origin", "main"},
			result: policy.Result{Decision: policy.Deny, Rule: &policy.Rule{Decision: policy.Deny, Pattern: "git push"}},
			want:   `cordon: denied: git push origin main (rule: deny "git push")`,
		},
		{
			name:   "rule with a message",
			argv:   []string{"git", "push", "--force"},
			result: policy.Result{Decision: policy.Deny, Rule: &policy.Rule{Decision: policy.Deny, Pattern: "git push", Message: "open a pull request instead"}},
			want:   `cordon: denied: git push --force (rule: deny "git push": open a pull request instead)`,
		},
		{
			name:   "default deny",
			argv:   []string{"curl", "https://example.com"},
			result: policy.Result{Decision: policy.Deny},
			want:   `cordon: denied: curl https://example.com (rule: default deny)`,
		},
		{
			name:   "argv with a newline stays on one line",
			argv:   []string{"sh", "-c", "rm -rf /\necho done"},
			result: policy.Result{Decision: policy.Deny, Rule: &policy.Rule{Decision: policy.Deny, Pattern: "sh"}},
			want:   `cordon: denied: sh -c "rm -rf /\necho done" (rule: deny "sh")`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &Verdict{Exec: policy.Exec{Argv: tc.argv}, Result: tc.result}
			assert.Equal(t, tc.want, d.DenialLine())
		})
	}
}

func TestDenialLineShowsSpoofedArgv0(t *testing.T) {
	d := &Verdict{
		Exec:   policy.Exec{Argv: []string{"ls", "push"}, Path: "/usr/bin/git", Resolved: "/usr/bin/git"},
		Result: policy.Result{Decision: policy.Deny, Rule: &policy.Rule{Decision: policy.Deny, Pattern: "git push"}},
	}
	assert.Equal(t, `cordon: denied: /usr/bin/git push (argv[0] "ls") (rule: deny "git push")`, d.DenialLine())
	// A symlink's name as argv[0] is what the user typed: shown as is.
	d.Exec = policy.Exec{Argv: []string{"./g", "push"}, Path: "./g", Resolved: "/usr/bin/git"}
	assert.Equal(t, `cordon: denied: ./g push (rule: deny "git push")`, d.DenialLine())
}
