package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corpusCase is one peer-style case: rules as a peer would write them
// (translated to cordon), a command line, cordon's decision, and why,
// where a peer could choose otherwise.
type corpusCase struct {
	rules []Rule
	def   Decision
	argv  string
	want  Decision
	why   string
}

func deny(p string) Rule  { return Rule{Decision: Deny, Pattern: p} }
func ask(p string) Rule   { return Rule{Decision: Ask, Pattern: p} }
func allow(p string) Rule { return Rule{Decision: Allow, Pattern: p} }
func except(p string) Rule {
	return Rule{Decision: Allow, Pattern: p, Override: true}
}

// TestCorpus pins every semantic choice of the second edition with cases
// written in the style of the peers' suites (prefix deny lists with
// exceptions, allowlists of exact prefixes), each saying what it pins.
func TestCorpus(t *testing.T) {
	cases := []corpusCase{
		// Deny lists: a denied prefix catches every spelling.
		{[]Rule{deny("git push")}, Allow, "git push", Deny, "the prefix itself"},
		{[]Rule{deny("git push")}, Allow, "git push origin main", Deny, "words after the prefix"},
		{[]Rule{deny("git push")}, Allow, "git -C repo push", Deny, "global options before the subcommand"},
		{[]Rule{deny("git push")}, Allow, "git --no-pager push", Deny, "flags before the subcommand"},
		{[]Rule{deny("git push")}, Allow, "git log --grep push", Allow, "push as an argument is not the subcommand"},
		{[]Rule{deny("rm -rf")}, Allow, "rm -fr /tmp/x", Deny, "clustered letters in any order"},
		{[]Rule{deny("rm -rf")}, Allow, "rm -r -f /tmp/x", Deny, "separate letters"},
		{[]Rule{deny("rm -rf")}, Allow, "rm -r /tmp/x", Allow, "one letter is not the rule"},
		{[]Rule{deny("npm publish")}, Allow, "npm publ", Deny, "npm's abbreviated subcommand"},
		{[]Rule{deny("git push --force")}, Allow, "git push --forc", Deny, "abbreviated long option"},
		{[]Rule{deny("dd if=")}, Allow, "dd bs=1 if=/dev/zero of=x", Deny, "KEY= anywhere"},
		{[]Rule{deny("git status $")}, Allow, "git status -s", Allow, "$ makes even a deny exact"},

		// Exceptions (fence's command.allow): exact, never widening.
		{[]Rule{deny("git push"), except("git push origin docs")}, Allow, "git push origin docs", Allow, "the exception as written"},
		{[]Rule{deny("git push"), except("git push origin docs")}, Allow, "git push origin docs --force", Deny, "an option it does not name"},
		{[]Rule{deny("git push"), except("git push origin docs")}, Allow, "git push origin docs main", Deny, "a word it does not name"},
		{[]Rule{deny("git push"), except("git push origin docs")}, Allow, "git -c core.sshCommand=x push origin docs", Deny, "a global option it does not name"},
		{[]Rule{deny("git push"), except("git push origin docs ...")}, Allow, "git push origin docs -v", Allow, "... widens after its words"},
		{[]Rule{deny("git push"), except("git push origin docs ...")}, Allow, "git push -v origin docs", Deny, "... does not widen before them"},
		{[]Rule{deny("@git-force-push"), except("git push origin docs ...")}, Allow, "git push origin docs --force", Allow, "an override wins over a meaning too, as over any deny (fence's semantics)"},

		// Allowlists (codex-style exact prefixes, cordon allowlist mode).
		{[]Rule{allow("ls")}, Deny, "ls -la /etc", Allow, "a bare program takes any arguments"},
		{[]Rule{allow("pwd $")}, Deny, "pwd -P", Deny, "$ takes nothing more"},
		{[]Rule{allow("gh pr view ...")}, Deny, "gh pr view 12 --json title", Allow, "codex's prefix: anything after"},
		{[]Rule{allow("gh pr view ...")}, Deny, "gh pr --repo x view 12", Deny, "codex's prefix: nothing between"},
		{[]Rule{allow("cargo test")}, Deny, "cargo test --release", Deny, "without ... an allow rule is the whole command"},
		{[]Rule{allow("git status"), deny("git status --porcelain")}, Deny, "git status --porcelain", Deny, "deny wins over allow"},
		{[]Rule{allow("npm install lodash")}, Deny, "npm i lodash", Allow, "subcommand aliases are the same command"},
		{[]Rule{allow("npm install lodash")}, Deny, "npm inst lodash", Allow, "npm's own alias inst"},
		{[]Rule{allow("npm install lodash")}, Deny, "npm instal lodash", Allow, "an alias npm lists"},
		{[]Rule{allow("npm install lodash")}, Deny, "npm insta lodash x", Deny, "an extra word"},
		{[]Rule{ask("npm publish"), allow("npm ...")}, Deny, "npm publish --tag x", Ask, "ask wins over allow"},

		// Meanings instead of spellings.
		{[]Rule{deny("@git-force-push")}, Allow, "git push origin +main", Deny, "a forcing refspec"},
		{[]Rule{deny("@git-force-push")}, Allow, "git push origin :main", Deny, "a deleting refspec"},
		{[]Rule{deny("@git-force-push")}, Allow, "git pusj -f", Deny, "git's autocorrect"},
		{[]Rule{deny("@block-device-write")}, Allow, "dd of=/dev/./sda", Deny, "a device path, cleaned"},
		{[]Rule{deny("@privileged-container")}, Allow, "podman container create --privileged x", Deny, "every verb that starts a container"},
		{[]Rule{deny("@power-off")}, Allow, "systemctl isolate runlevel6.target", Deny, "a target that reboots"},

		// ssh.
		{[]Rule{deny("ssh prod-*")}, Allow, "ssh -l root prod-db", Deny, "the host after ssh's options"},
		{[]Rule{deny("ssh prod-*")}, Allow, "ssh dev-1 ssh prod-db", Allow, "a remote ssh is the remote host's exec, decided there if at all"},
		{[]Rule{deny("ssh * rm -rf ...")}, Allow, "ssh dev-1 rm -fr /", Deny, "the remote command as a rule for rm"},
		{[]Rule{allow("ssh dev-1 uptime")}, Deny, "ssh dev-1 uptime -p", Deny, "an allowed remote command is exact"},
	}
	for _, tc := range cases {
		t.Run(tc.argv+" ("+tc.why+")", func(t *testing.T) {
			p, err := Compile(Config{Default: tc.def, Rules: tc.rules})
			require.NoError(t, err)
			got := decideArgv(p, fields(tc.argv)...)
			assert.Equal(t, tc.want, got.Decision, "%s: %s", tc.why, got.RuleText())
		})
	}
}
