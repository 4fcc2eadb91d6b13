package policy

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStrictAllow pins the asymmetry of the second edition: deny and ask
// rules match loosely, allow rules strictly, "..." and [options] widen an
// allow rule, "$" makes any rule exact, and a bare program allow rule
// allows any arguments.
func TestStrictAllow(t *testing.T) {
	runMatchCases(t, []matchCase{
		{"exact words", []string{"allow printenv PATH"}, "printenv PATH", Allow},
		{"extra word", []string{"allow printenv PATH"}, "printenv PATH HOME", Deny},
		{"extra option", []string{"allow printenv PATH"}, "printenv -0 PATH", Deny},
		{"missing word", []string{"allow printenv PATH"}, "printenv", Deny},
		{"bare allows anything", []string{"allow ls"}, "ls -la /etc", Allow},
		{"bare $ allows nothing more", []string{"allow pwd $"}, "pwd foo", Deny},
		{"bare $ alone", []string{"allow pwd $"}, "pwd", Allow},
		{"$ after words", []string{"allow printenv PATH $"}, "printenv PATH", Allow},
		{"$ after words extra", []string{"allow printenv PATH $"}, "printenv PATH X", Deny},
		{"named option in any place", []string{"allow ls -l src"}, "ls src -l", Allow},
		{"option value glob", []string{"allow git log --format=*"}, "git log --format=%H", Allow},
		{"separate value is an unnamed word", []string{"allow git log --format=*"}, "git log --format %H", Deny},
		{"cluster is not its letters", []string{"allow ls -la"}, "ls -al", Deny},
		{"trailing ... takes options after", []string{"allow git push origin docs ..."}, "git push origin docs --force", Allow},
		{"trailing ... not options before", []string{"allow git push origin docs ..."}, "git push --force origin docs", Deny},
		{"trailing ... not global options", []string{"allow git status ..."}, "git -c alias.status=push status", Deny},
		{"trailing ... takes options after sub", []string{"allow git status ..."}, "git status -s", Allow},
		{"trailing ... takes words", []string{"allow make test ..."}, "make test V=1", Allow},
		{"middle ... gap", []string{"allow cp ... /tmp/out"}, "cp a b /tmp/out", Allow},
		{"middle ... end anchored", []string{"allow cp ... /tmp/out"}, "cp a /tmp/out b", Deny},
		{"middle ... then two words", []string{"allow tool a ... b c"}, "tool a x b c", Allow},
		{"middle ... repeated word", []string{"allow tool a ... b"}, "tool a b x b", Allow},
		{"placeholder options only", []string{"allow ls [options] src"}, "ls -la --color=auto src", Allow},
		{"placeholder no extra word", []string{"allow ls [options] src"}, "ls -la src etc", Deny},
		{"-- ends options in the exec", []string{"allow rm -- -x"}, "rm -- -x", Allow},
		{"key test counts its word", []string{"allow dd if=* of=out.img"}, "dd if=a of=out.img", Allow},
		{"key test extra word", []string{"allow dd if=* of=out.img"}, "dd if=a of=out.img bs=1M", Deny},
		{"subcommand global option", []string{"allow git status"}, "git -C x status", Deny},
		{"subcommand global option named", []string{"allow git -C * status"}, "git -C x status", Allow},
		{"subcommand alias kept", []string{"allow npm install lodash"}, "npm i lodash", Allow},

		{"deny stays loose", []string{"deny git push origin docs"}, "git push --force -v origin x docs", Deny},
		{"deny $ is exact", []string{"deny git status $"}, "git status", Deny},
		{"deny $ lets more through", []string{"deny git status $"}, "git status -s", Allow},
		{"ask stays loose", []string{"ask npm publish"}, "npm publ --tag x", Ask},
	})
}

// TestFenceExceptionIsExact is the case: an imported fence
// exception (an override allow) no longer widens to options it does not
// name.
func TestFenceExceptionIsExact(t *testing.T) {
	p, err := Compile(Config{Default: Allow, Rules: []Rule{
		{Decision: Deny, Pattern: "git push"},
		{Decision: Allow, Pattern: "git push origin docs", Override: true},
	}})
	require.NoError(t, err)
	for argv, want := range map[string]Decision{
		"git push origin docs":         Allow,
		"git push --force origin docs": Deny,
		"git push origin docs --force": Deny,
		"git push origin +docs":        Deny,
		"git push origin docs main":    Deny,
		"git -c x=y push origin docs":  Deny,
		"git push --force-with-lease":  Deny,
		"git push origin docs:docs":    Deny,
		"git status":                   Allow,
	} {
		assert.Equal(t, want, decideArgv(p, fields(argv)...).Decision, argv)
	}
}

func TestRuleEndErrors(t *testing.T) {
	for _, pat := range []string{"ls $ x", "ls ... $"} {
		_, err := Compile(Config{Rules: []Rule{{Decision: Allow, Pattern: pat}}})
		assert.Error(t, err, pat)
	}
	// Quoted, $ and [options] are literal words.
	p := compileRules(t, Deny, `allow echo '$'`, `allow echo '[options]'`)
	assert.Equal(t, Allow, decideArgv(p, "echo", "$").Decision)
	assert.Equal(t, Allow, decideArgv(p, "echo", "[options]").Decision)
	assert.Equal(t, Deny, decideArgv(p, "echo", "-n", "[options]").Decision)
}

// TestChangedMeaningIsExplained: an example that held under the first
// edition's prefix allow rules fails with a hint naming the rule and the
// "..." that restores the old meaning.
func TestChangedMeaningIsExplained(t *testing.T) {
	_, err := Compile(Config{Default: Deny, Rules: []Rule{{Decision: Allow, Pattern: "git log", Source: "c.yaml:3"}},
		Examples: []Example{{Decision: Allow, Argv: fields("git log --oneline"), Source: "c.yaml:5"}}})
	require.Error(t, err)
	var ee *ExampleError
	require.True(t, errors.As(err, &ee))
	require.NotNil(t, ee.FirstEdition)
	assert.Equal(t, "git log", ee.FirstEdition.Pattern)
	assert.Contains(t, err.Error(), `write "git log ..."`)

	// A failure with another cause gets no hint.
	_, err = Compile(Config{Default: Deny, Rules: []Rule{{Decision: Allow, Pattern: "git log"}},
		Examples: []Example{{Decision: Allow, Argv: fields("git push")}}})
	require.True(t, errors.As(err, &ee))
	assert.Nil(t, ee.FirstEdition)
	assert.Empty(t, ee.Hint())
}

// TestProgramTables: a policy's option table makes rules for its own tools
// as precise as the built-in ones.
func TestProgramTables(t *testing.T) {
	tables := map[string]ToolOptions{
		"rg":     {Values: []string{"-g", "--glob"}},
		"mytool": {Global: []string{"--profile", "-p"}, Values: []string{"-o"}},
		"git":    {Global: []string{"--my-global"}},
	}
	compileT := func(def Decision, rules ...string) *Policy {
		cfg := Config{Default: def, Tools: tables}
		for _, r := range rules {
			d, pat, _ := cutRule(r)
			cfg.Rules = append(cfg.Rules, Rule{Decision: d, Pattern: pat})
		}
		p, err := Compile(cfg)
		require.NoError(t, err)
		return p
	}
	p := compileT(Deny, "allow rg -g *.go TODO")
	assert.Equal(t, Allow, decideArgv(p, fields("rg -g x.go TODO")...).Decision)
	assert.Equal(t, Deny, decideArgv(p, fields("rg --glob x.go TODO")...).Decision, "--glob is not -g")
	assert.Equal(t, Deny, decideArgv(p, fields("rg -g x.go TODO other")...).Decision)
	p = compileT(Allow, "deny rg secret")
	assert.Equal(t, Allow, decideArgv(p, fields("rg -g secret x")...).Decision, "the glob value is not the pattern")
	assert.Equal(t, Deny, decideArgv(p, fields("rg -g x secret")...).Decision)

	p = compileT(Allow, "deny mytool deploy")
	assert.Equal(t, Deny, decideArgv(p, fields("mytool --profile prod deploy")...).Decision)
	assert.Equal(t, Deny, decideArgv(p, fields("mytool -p prod -o x deploy")...).Decision)
	assert.Equal(t, Allow, decideArgv(p, fields("mytool build deploy")...).Decision, "a subcommand tool: deploy is not the subcommand")
	assert.Equal(t, Allow, decideArgv(p, fields("mytool --profile deploy build")...).Decision)

	p = compileT(Allow, "deny git push")
	assert.Equal(t, Deny, decideArgv(p, fields("git --my-global x push")...).Decision)
	assert.Equal(t, Deny, decideArgv(p, fields("git -C d push")...).Decision, "the built-in table still applies")

	for _, bad := range []map[string]ToolOptions{
		{"a/b": {}}, {"x*": {}}, {"x": {Values: []string{"g"}}}, {"x": {Global: []string{"--a=b"}}}, {"x": {Values: []string{"--"}}},
	} {
		_, err := Compile(Config{Tools: bad})
		assert.Error(t, err, "%v", bad)
	}
}

func cutRule(r string) (Decision, string, bool) {
	for i := 0; i < len(r); i++ {
		if r[i] == ' ' {
			d, err := ParseDecision(r[:i])
			return d, r[i+1:], err == nil
		}
	}
	return 0, "", false
}

func TestParsePrograms(t *testing.T) {
	f, err := Parse("c.yaml", []byte("programs:\n  rg:\n    value_options: [-g, --glob]\n  t:\n    global_options: [-p]\n    subcommands: true\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]ToolOptions{"rg": {Values: []string{"-g", "--glob"}}, "t": {Global: []string{"-p"}, Subcommands: true}}, f.Config.Tools)
	for _, bad := range []string{
		"programs: [rg]\n",
		"programs:\n  rg: -g\n",
		"programs:\n  rg:\n    values: [-g]\n",
		"programs:\n  rg:\n    value_options: -g\n",
		"programs:\n  rg:\n    value_options: [g]\n",
		"programs:\n  /bin/rg:\n    value_options: [-g]\n",
		"programs:\n  rg:\n    subcommands: maybe\n",
	} {
		_, err := Parse("c.yaml", []byte(bad))
		var pe *ParseError
		assert.True(t, errors.As(err, &pe), "%q: %v", bad, err)
	}
}
