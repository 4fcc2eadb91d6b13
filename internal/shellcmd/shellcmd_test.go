package shellcmd

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"mvdan.cc/sh/v3/syntax"
)

func TestShellScript(t *testing.T) {
	for _, tc := range []struct {
		argv   []string
		script string
		ok     bool
	}{
		{[]string{"bash", "-c", "ls"}, "ls", true},
		{[]string{"/bin/sh", "-ec", "ls"}, "ls", true},
		{[]string{"bash", "-o", "pipefail", "-c", "ls"}, "ls", true},
		{[]string{"bash", "--norc", "-lc", "ls", "arg0"}, "ls", true},
		{[]string{"-bash", "-c", "ls"}, "ls", true},
		{[]string{"bash", "script.sh"}, "", false},
		{[]string{"bash", "-c"}, "", false},
		{[]string{"python3", "-c", "print()"}, "", false},
	} {
		s, _, ok := Script(tc.argv)
		assert.Equal(t, tc.ok, ok, "%q", tc.argv)
		assert.Equal(t, tc.script, s, "%q", tc.argv)
	}
}

func TestCommandsRefusesWhatIsTooComplex(t *testing.T) {
	deep := strings.Repeat("$(", MaxNesting+1) + "ls" + strings.Repeat(")", MaxNesting+1)
	_, err := Commands(deep, syntax.LangBash)
	assert.ErrorIs(t, err, ErrTooComplex)
	_, err = Commands(strings.Repeat("a;", MaxNodes), syntax.LangBash)
	assert.ErrorIs(t, err, ErrTooComplex)

	// Nested shells pass the refusal on, not as "does not parse".
	in := Nested([]string{"bash", "-c", "ls; " + deep})
	if assert.Len(t, in, 1) {
		assert.ErrorIs(t, in[0].Err, ErrTooComplex)
	}

	ok := strings.Repeat("$(", MaxNesting/2) + "ls" + strings.Repeat(")", MaxNesting/2)
	cmds, err := Commands(ok, syntax.LangBash)
	assert.NoError(t, err)
	assert.NotEmpty(t, cmds)

	// A dynamic command's text is cut for messages.
	cmds, err = Commands("$x "+strings.Repeat("a", 10*maxDynamic), syntax.LangBash)
	if assert.NoError(t, err) && assert.Len(t, cmds, 1) {
		assert.LessOrEqual(t, len(cmds[0].Dynamic), maxDynamic+3)
	}
}

// TestStaticWordsAsTheShellReadsThem: quotes and the backslashes the shell
// removes are gone from a static word (\git push is git push), and what the
// shell computes is dynamic.
func TestStaticWordsAsTheShellReadsThem(t *testing.T) {
	for script, want := range map[string][]string{
		`\git push`:         {"git", "push"},
		`g\it pu\sh`:        {"git", "push"},
		`"g"'i't push`:      {"git", "push"},
		`"g\it" "\$x"`:      {`g\it`, "$x"},
		"gi\\\nt push":      {"git", "push"},
		`r""m -rf x`:        {"rm", "-rf", "x"},
		`git $(echo push)`:  nil,
		`git pu?h`:          nil,
		`~/bin/git push`:    nil,
		`git {push,status}`: nil,
	} {
		cmds, err := Commands(script, syntax.LangBash)
		assert.NoError(t, err, script)
		if assert.Len(t, cmds, 1+strings.Count(script, "$("), script) {
			if want == nil {
				assert.NotEmpty(t, cmds[0].Dynamic, script)
				continue
			}
			assert.Equal(t, want, cmds[0].Argv, script)
		}
		calls, err := Calls(script, syntax.LangBash)
		assert.NoError(t, err, script)
		var words []string
		for _, w := range calls[0] {
			words = append(words, w.Value)
		}
		assert.Equal(t, want, words, script)
	}
}
