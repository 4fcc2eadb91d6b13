package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// matchCase decides one command line against a few rules. Deny and ask
// cases run with default allow, allow cases with default deny, so the
// expected decision says whether the rule matched.
type matchCase struct {
	name  string
	rules []string
	argv  string
	want  Decision
}

func runMatchCases(t *testing.T, tests []matchCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			def := Allow
			for _, r := range tc.rules {
				if r[:5] == "allow" {
					def = Deny
				}
			}
			p := compileRules(t, def, tc.rules...)
			got := decideArgv(p, fields(tc.argv)...)
			assert.Equal(t, tc.want, got.Decision, "%s against %q: %s", tc.argv, tc.rules, got.RuleText())
		})
	}
}

func TestGlobalOptions(t *testing.T) {
	push := []string{"deny git push"}
	runMatchCases(t, []matchCase{
		{"git plain", push, "git push origin main", Deny},
		{"git -C", push, "git -C dir push", Deny},
		{"git -c", push, "git -c k=v push", Deny},
		{"git --git-dir=", push, "git --git-dir=x push", Deny},
		{"git --git-dir value", push, "git --git-dir x push", Deny},
		{"git --work-tree value", push, "git --work-tree w --namespace n push", Deny},
		{"git --no-pager", push, "git --no-pager push", Deny},
		{"git -P -p --bare", push, "git -P -p --bare --literal-pathspecs push", Deny},
		{"git --config-env", push, "git --config-env a=B push", Deny},
		{"git several", push, "git -C a -c x=y --no-pager -C b push --tags", Deny},
		{"git log --grep push", push, "git log --grep push", Allow},
		{"git commit -m push", push, "git commit -m push", Allow},
		{"git help push", push, "git help push", Allow},
		{"git -C push status", push, "git -C push status", Allow},
		{"git no subcommand", push, "git --version", Allow},

		{"docker --debug", []string{"deny docker run --privileged"}, "docker --debug run --privileged alpine", Deny},
		{"docker -H", []string{"deny docker run --privileged"}, "docker -H tcp://h:2375 run --privileged alpine", Deny},
		{"docker --context later option", []string{"deny docker run --privileged"}, "docker --context c run --name n --privileged img", Deny},
		{"docker -l value", []string{"deny docker run"}, "docker -l run ps", Allow},
		{"docker other subcommand", []string{"deny docker run --privileged"}, "docker ps --privileged", Allow},

		{"podman --root", []string{"deny podman run --privileged"}, "podman --root /x run --privileged img", Deny},
		{"podman --root after", []string{"deny podman rm"}, "podman --log-level debug rm -f c", Deny},

		{"kubectl -n before", []string{"deny kubectl delete"}, "kubectl -n prod delete pod x", Deny},
		{"kubectl --context", []string{"deny kubectl delete"}, "kubectl --context c --kubeconfig k delete pod x", Deny},
		{"kubectl -v takes a value", []string{"deny kubectl delete"}, "kubectl -v 6 delete pod x", Deny},
		{"kubectl value is not subcommand", []string{"deny kubectl delete"}, "kubectl -n delete get pods", Allow},
		{"kubectl value after subcommand", []string{"deny kubectl delete namespace"}, "kubectl delete -n foo namespace bar", Deny},

		{"gh -R anywhere", []string{"deny gh repo delete"}, "gh repo -R o/r delete --yes", Deny},
		{"gh pr merge", []string{"deny gh pr merge"}, "gh pr merge 12 --squash", Deny},
		{"gh pr view", []string{"deny gh pr merge"}, "gh pr view 12", Allow},

		{"npm --registry", []string{"ask npm publish"}, "npm --registry https://r publish", Ask},
		{"npm -w", []string{"ask npm publish"}, "npm -w pkg publish", Ask},
		{"npm run publish is a script", []string{"ask npm publish"}, "npm run publish", Allow},
		{"pnpm -C", []string{"deny pnpm publish"}, "pnpm -C dir publish", Deny},
		{"pnpm --filter", []string{"deny pnpm publish"}, "pnpm --filter x publish", Deny},
		{"yarn --cwd", []string{"deny yarn publish"}, "yarn --cwd d publish", Deny},

		{"cargo +toolchain", []string{"deny cargo publish"}, "cargo +nightly publish", Deny},
		{"cargo --config", []string{"deny cargo publish"}, "cargo --config k=v -Z unstable publish", Deny},
		{"cargo --color", []string{"deny cargo publish"}, "cargo --color always publish --dry-run", Deny},

		{"go build flags", []string{"deny go run"}, "go run -tags x ./cmd", Deny},
		{"go value flag not positional", []string{"deny go test ./secret"}, "go test -run ./secret ./ok", Allow},
		{"go positional", []string{"deny go test ./secret"}, "go test -run X ./secret", Deny},

		{"pip --proxy", []string{"deny pip install"}, "pip --proxy p install x", Deny},
		{"pip --isolated", []string{"deny pip install"}, "pip --isolated install x", Deny},
		{"pip3 is pip", []string{"deny pip install"}, "pip3 install x", Deny},
		{"pip is pip3", []string{"deny pip3 install"}, "pip install x", Deny},
		{"pip3.12 table", []string{"deny pip3.12 install"}, "pip3.12 --cache-dir c install x", Deny},
		{"pip list", []string{"deny pip install"}, "pip list", Allow},
	})
}

func TestHeuristic(t *testing.T) {
	runMatchCases(t, []matchCase{
		{"options skipped", []string{"deny terraform destroy"}, "terraform -chdir=x destroy", Deny},
		{"unknown value option", []string{"deny make deploy"}, "make -C dir deploy", Deny},
		{"deny not anchored", []string{"deny make deploy"}, "make build deploy", Deny},
		{"deny positional absent", []string{"deny make deploy"}, "make build", Allow},
		{"allow anchored", []string{"allow make test"}, "make -C dir test", Deny},
		{"allow is not a prefix", []string{"allow make test"}, "make test -j4 extra", Deny},
		{"allow ... widens", []string{"allow make test ..."}, "make test -j4 extra", Allow},
		{"allow order", []string{"allow make test"}, "make build test", Deny},
	})
}

func TestPositional(t *testing.T) {
	runMatchCases(t, []matchCase{
		{"allow exact", []string{"allow git push origin feature/*"}, "git push origin feature/x", Allow},
		{"allow extra words", []string{"allow git push origin feature/*"}, "git push origin feature/x main", Deny},
		{"allow trailing ...", []string{"allow git push origin feature/* ..."}, "git push origin feature/x main", Allow},
		{"allow other branch", []string{"allow git push origin feature/*"}, "git push origin main", Deny},
		{"allow no gap", []string{"allow git push origin feature/*"}, "git push -o ci origin feature/x", Deny},
		{"allow too short", []string{"allow git push origin feature/*"}, "git push origin", Deny},
		{"deny gaps", []string{"deny git push origin main"}, "git push -o ci.skip origin main", Deny},
		{"deny extra refspec", []string{"deny git push origin main"}, "git push origin feature main", Deny},
		{"deny order", []string{"deny git push origin main"}, "git push main origin", Allow},
		{"ellipsis middle", []string{"allow tool a ... b"}, "tool a x y b", Allow},
		{"ellipsis empty", []string{"allow tool a ... b"}, "tool a b", Allow},
		{"ellipsis order", []string{"allow tool a ... b"}, "tool b a", Deny},
		{"ellipsis anchored first", []string{"allow tool a ... b"}, "tool x a b", Deny},
		{"leading ellipsis", []string{"allow tool ... b"}, "tool x y b", Allow},
		{"deny leading ellipsis unanchors", []string{"deny git ... push"}, "git log push", Deny},
		{"trailing ellipsis", []string{"allow git status ..."}, "git status -s", Allow},
		{"exec double dash", []string{"deny rm -rf /"}, "rm -- -rf /", Allow},
		{"rule double dash", []string{"deny rm -- -rf"}, "rm -- -rf", Deny},
		{"empty argv after program", []string{"deny git push"}, "git", Allow},
		{"program only", []string{"deny git"}, "git status", Deny},
	})
}

func TestOptions(t *testing.T) {
	runMatchCases(t, []matchCase{
		{"after positionals", []string{"deny git push --force"}, "git push origin main --force", Deny},
		{"before positionals", []string{"deny git push --force"}, "git push --force origin main", Deny},
		{"absent", []string{"deny git push --force"}, "git push origin main", Allow},
		{"other option", []string{"deny git push --force"}, "git push --force-with-lease", Allow},
		{"with value", []string{"deny git push --force"}, "git push --force=yes", Deny},
		{"abbreviated long", []string{"deny git push --force"}, "git push --forc", Deny},
		{"abbreviated too long", []string{"deny git push --force"}, "git push --forced", Allow},
		{"no abbreviation for cobra", []string{"deny docker run --privileged"}, "docker run --priv img", Allow},
		{"allow no abbreviation", []string{"allow git push --dry-run"}, "git push --dry", Deny},
		{"allow exact option", []string{"allow git push origin --dry-run"}, "git push origin --dry-run", Allow},
		{"allow option anywhere", []string{"allow git push origin --dry-run"}, "git push --dry-run origin", Allow},
		{"allow unnamed option", []string{"allow git push origin"}, "git push --force origin", Deny},
		{"allow options placeholder", []string{"allow git push [options] origin"}, "git push -v --dry-run origin", Allow},
		{"allow options placeholder not words", []string{"allow git push [options] origin"}, "git push -v origin main", Deny},
		{"short in cluster", []string{"deny git push -f"}, "git push -fu origin", Deny},
		{"short alone", []string{"deny git push -f"}, "git push -u origin", Allow},
		{"allow short exact", []string{"allow git push -f"}, "git push -fu", Deny},
		{"letters any order", []string{"deny rm -rf"}, "rm -fr x", Deny},
		{"letters split", []string{"deny rm -rf"}, "rm -r -f x", Deny},
		{"letters with others", []string{"deny rm -rf"}, "rm -vrfi x", Deny},
		{"letters missing", []string{"deny rm -rf"}, "rm -r x", Allow},
		{"allow letters exact", []string{"allow rm -rf"}, "rm -fr x", Deny},
		{"no clustering for go", []string{"deny go test -race"}, "go test -r", Allow},
		{"go single dash long", []string{"deny go test -race"}, "go test -race ./...", Deny},
		{"go double dash same", []string{"deny go test -race"}, "go test --race ./...", Deny},
		{"go rule double dash", []string{"deny go test --exec"}, "go test -exec=x ./...", Deny},
		{"alternatives", []string{"deny git push {--force,-f,--force-with-lease}"}, "git push --force-with-lease", Deny},
		{"alternatives short", []string{"deny git push {--force,-f,--force-with-lease}"}, "git push -f", Deny},
		{"alternatives none", []string{"deny git push {--force,-f,--force-with-lease}"}, "git push --tags", Allow},
		{"option glob", []string{"deny git push --force*"}, "git push --force-if-includes", Deny},
		{"global option in rule", []string{"deny git -C /etc status"}, "git -C /etc status", Deny},
		{"global option value differs", []string{"deny git -C /etc status"}, "git -C /tmp status", Allow},
	})
}

func TestOptionValues(t *testing.T) {
	runMatchCases(t, []matchCase{
		{"=value form", []string{"deny git push --repo=evil*"}, "git push --repo=evil1", Deny},
		{"separate value", []string{"deny git push --repo=evil*"}, "git push --repo evil2", Deny},
		{"value differs", []string{"deny git push --repo=evil*"}, "git push --repo=good", Allow},
		{"separate value differs", []string{"deny git push --repo=evil*"}, "git push --repo good", Allow},
		{"value abbreviated option", []string{"deny git push --repo=evil*"}, "git push --rep=evil", Deny},
		{"presence with =", []string{"deny curl --data="}, "curl --data x https://h", Deny},
		{"presence =value", []string{"deny curl --data="}, "curl --data=x https://h", Deny},
		{"presence without value", []string{"deny curl --data="}, "curl https://h --data", Allow},
		{"next is an option", []string{"deny curl --data=x"}, "curl --data --x", Allow},
		{"short attached value", []string{"deny kubectl get -n=kube-system"}, "kubectl get pods -nkube-system", Deny},
		{"short separate value", []string{"deny kubectl get -n=kube-system"}, "kubectl get pods -n kube-system", Deny},
		{"short = value", []string{"deny kubectl get -n=kube-system"}, "kubectl get pods -n=kube-system", Deny},
		{"short other value", []string{"deny kubectl get -n=kube-system"}, "kubectl get pods -n default", Allow},
		{"cluster value", []string{"deny tar -f=/dev/sd*"}, "tar -xzf /dev/sda", Deny},
		{"table value option in rule", []string{"deny kubectl -n prod delete"}, "kubectl delete pod x -n prod", Deny},
		{"table value option other", []string{"deny kubectl -n prod delete"}, "kubectl delete pod x -n dev", Allow},
	})
}

func TestKeyTests(t *testing.T) {
	runMatchCases(t, []matchCase{
		{"presence", []string{"deny dd if="}, "dd of=/tmp/out if=/dev/zero", Deny},
		{"absent", []string{"deny dd if="}, "dd of=/tmp/out", Allow},
		{"value glob", []string{"deny dd of=/dev/sd*"}, "dd if=/dev/zero of=/dev/sda bs=1M", Deny},
		{"value glob mismatch", []string{"deny dd of=/dev/sd*"}, "dd if=/dev/zero of=/dev/null", Allow},
		{"key is a prefix only", []string{"deny dd if="}, "dd iff=x", Allow},
		{"alternative values", []string{"deny dd of={/dev/sda,/dev/sdb}"}, "dd of=/dev/sdb", Deny},
		{"in an option value", []string{"deny git core.sshCommand="}, "git -c core.sshCommand=x fetch", Deny},
	})
}

func TestGlobsAndAlternatives(t *testing.T) {
	runMatchCases(t, []matchCase{
		{"star", []string{"deny git push origin release-*"}, "git push origin release-1.2", Deny},
		{"star crosses slash", []string{"deny git push origin feature/*"}, "git push origin feature/a/b", Deny},
		{"question mark", []string{"deny git tag v?"}, "git tag v1", Deny},
		{"question mark one char", []string{"deny git tag v?"}, "git tag v10", Allow},
		{"escaped star", []string{`deny echo \*`}, "echo *", Deny},
		{"escaped star literal", []string{`deny echo \*`}, "echo x", Allow},
		{"quoted glob literal", []string{`deny echo '*'`}, "echo x", Allow},
		{"quoted words", []string{`deny git commit -m "a b"`}, "git commit -m a", Allow},
		{"program alternatives", []string{"deny {shutdown,reboot}"}, "reboot now", Deny},
		{"program glob", []string{"deny mkfs.*"}, "mkfs.ext4 /dev/sda", Deny},
		{"program glob other", []string{"deny mkfs.*"}, "mkfs /dev/sda", Allow},
		{"subcommand alternatives", []string{"deny git {push,pull}"}, "git pull", Deny},
		{"prefix and suffix", []string{"deny tool x-{a,b}-y"}, "tool x-b-y", Deny},
		{"several groups", []string{"deny tool {a,b}{1,2}"}, "tool b2", Deny},
		{"path", []string{"deny /usr/bin/git push"}, "/usr/bin/git push", Deny},
		{"path other", []string{"deny /usr/bin/git push"}, "/opt/git push", Allow},
		{"path glob", []string{"deny /opt/*/bin/* push"}, "/opt/x/bin/tool push", Deny},
		{"path uses table", []string{"deny /usr/bin/git push"}, "/usr/bin/git -C d push", Deny},
	})
}

func TestSubcommandAliases(t *testing.T) {
	runMatchCases(t, []matchCase{
		{"npm alias", []string{"deny npm install"}, "npm i lodash", Deny},
		{"npm alias add", []string{"deny npm install"}, "npm add lodash", Deny},
		{"npm typo alias", []string{"deny npm install"}, "npm isntall lodash", Deny},
		{"npm rule alias", []string{"deny npm i"}, "npm install lodash", Deny},
		{"npm abbreviation", []string{"ask npm publish"}, "npm publ", Ask},
		{"npm allow alias", []string{"allow npm install lodash"}, "npm i lodash", Allow},
		{"npm allow no abbreviation", []string{"allow npm publish"}, "npm publ", Deny},
		{"npm run-script", []string{"deny npm run deploy"}, "npm run-script deploy", Deny},
		{"cargo alias", []string{"deny cargo build"}, "cargo b --release", Deny},
		{"pnpm alias", []string{"deny pnpm remove"}, "pnpm rm x", Deny},
		{"git autocorrects a prefix of a common command", []string{"deny git push"}, "git pus", Deny},
		{"git autocorrect off", []string{"deny git push"}, "git -c help.autocorrect=never pus", Allow},
	})
}
