package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trustWorld is a repository with its own HOME, XDG_STATE_HOME and
// XDG_CONFIG_HOME, so no test reads or writes the real user's trust store.
type trustWorld struct {
	home, repo, state string
	env               []string
}

func newTrustWorld(t *testing.T) trustWorld {
	t.Helper()
	// Not under /tmp: the sandbox has a private /tmp, and these tests need
	// the sandbox to see (and try to write) the files.
	base := ""
	if fi, err := os.Stat("/var/tmp"); err == nil && fi.IsDir() {
		base = "/var/tmp"
	}
	root, err := os.MkdirTemp(base, "cordon-trust-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(root) })
	w := trustWorld{home: filepath.Join(root, "home"), state: filepath.Join(root, "home", ".local", "state")}
	w.repo = filepath.Join(w.home, "repo")
	require.NoError(t, os.MkdirAll(filepath.Join(w.repo, ".git"), 0o755))
	w.env = []string{"HOME=" + w.home, "XDG_STATE_HOME=" + w.state, "XDG_CONFIG_HOME=" + filepath.Join(w.home, ".config")}
	return w
}

func (w trustWorld) cordon(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return runCordon(t, runOpts{dir: dir, env: w.env}, args...)
}

const denyLs = "rules:\n  - deny: ls\n    message: no listing here\n"

// TestUntrustedPolicyFile: a discovered policy file decides a run only
// once trusted, and only as it was trusted.
func TestUntrustedPolicyFile(t *testing.T) {
	requireSeccompNotify(t)
	w := newTrustWorld(t)
	p := writeFile(t, w.repo, "cordon.yaml", denyLs)

	r := w.cordon(t, w.repo, "--", "sh", "-c", "echo ran > marker")
	assert.Equal(t, 125, r.code, "a new file is refused without a terminal")
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line: %s", r.stderr)
	assert.Contains(t, r.stderr, "cordon.yaml ("+p+") is new or changed since you last trusted it")
	assert.Contains(t, r.stderr, "cordon policy trust "+p)
	assert.Contains(t, r.stderr, "--policy "+p)
	assert.NoFileExists(t, filepath.Join(w.repo, "marker"), "nothing ran")

	r = w.cordon(t, w.repo, "policy", "show")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "NOT trusted")

	r = w.cordon(t, w.repo, "policy", "trust")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "trusted "+p)
	st, err := os.Stat(filepath.Join(w.state, "cordon", "trusted.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	r = w.cordon(t, w.repo, "policy", "show")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "trust:    trusted\n")
	r = w.cordon(t, w.repo, "--debug", "--", "true")
	assert.Contains(t, r.stderr, "trust=trusted")

	r = w.cordon(t, w.repo, "--", "ls")
	assert.Equal(t, 126, r.code, "the trusted file loads: %s", r.stderr)
	assert.Contains(t, r.stderr, "no listing here")

	// Changed after it was trusted (by anyone): refused again.
	require.NoError(t, os.WriteFile(p, []byte("rules: []\n"), 0o644))
	r = w.cordon(t, w.repo, "--", "ls")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "is new or changed since you last trusted it")

	// --policy is explicit trust.
	r = w.cordon(t, w.repo, "--policy", p, "--", "ls")
	assert.Equal(t, 0, r.code, r.stderr)

	// The user-level file is held to the same rule.
	require.NoError(t, os.Remove(p))
	u := writeFile(t, w.home, ".config/cordon/policy.yaml", denyLs)
	r = w.cordon(t, w.repo, "--", "ls")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "policy.yaml ("+u+")")
	r = w.cordon(t, w.repo, "policy", "trust", u)
	require.Equal(t, 0, r.code, r.stderr)
	r = w.cordon(t, w.repo, "--", "ls")
	assert.Equal(t, 126, r.code, r.stderr)

	// The daemon's commands load the policy on the client, the same way.
	require.NoError(t, os.WriteFile(u, []byte("rules: []\n"), 0o644))
	r = w.cordon(t, w.repo, "exec", "--no-daemon", "--", "true")
	assert.Equal(t, 125, r.code, r.stderr)
	assert.Contains(t, r.stderr, "is new or changed since you last trusted it")
}

// TestPolicyWrittenByRunRefusedNextRun is the attack: run 1 writes a
// weaker policy into a subdirectory of its writable working directory;
// run 2, started from there, must not load it silently.
func TestPolicyWrittenByRunRefusedNextRun(t *testing.T) {
	requireSeccompNotify(t)
	w := newTrustWorld(t)
	writeFile(t, w.repo, "cordon.yaml", denyLs)
	r := w.cordon(t, w.repo, "policy", "trust")
	require.Equal(t, 0, r.code, r.stderr)

	// With the built-in list the name cannot even be created; without it
	// (--no-defaults) it can, and the trust store is the fence.
	r = w.cordon(t, w.repo, "--", "sh", "-c", `mkdir sub && printf 'defaults: false\nrules: []\n' > sub/cordon.yaml`)
	require.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, `cordon: denied: create sub/cordon.yaml (rule: deny_write "cordon.yaml": protected name)`)
	r = w.cordon(t, w.repo, "--no-defaults", "--", "sh", "-c", `printf 'defaults: false\nrules: []\n' > sub/cordon.yaml`)
	require.Equal(t, 0, r.code, "a new file in a new directory can be written: %s", r.stderr)
	r = w.cordon(t, filepath.Join(w.repo, "sub"), "--", "ls")
	assert.Equal(t, 125, r.code, "run 2 refuses the file run 1 wrote: %s", r.stderr)
	assert.Contains(t, r.stderr, "sub/cordon.yaml")
	assert.NotContains(t, r.stdout, "cordon.yaml", "ls did not run")
}

// TestPolicyFilesReadOnlyInSandbox: the policy files the next run would
// load from here, and the trust store, cannot be changed, removed or
// replaced from inside, even with HOME as the working directory.
func TestPolicyFilesReadOnlyInSandbox(t *testing.T) {
	requireSeccompNotify(t)
	w := newTrustWorld(t)
	p := writeFile(t, w.repo, "cordon.yaml", denyLs)
	hidden := writeFile(t, w.repo, ".cordon.yaml", denyLs)
	r := w.cordon(t, w.repo, "policy", "trust", p)
	require.Equal(t, 0, r.code, r.stderr)

	attempts := []string{
		"echo x >> cordon.yaml",
		"echo x > cordon.yaml",
		"rm -f cordon.yaml",
		"mv cordon.yaml moved.yaml",
		"echo x >> .cordon.yaml",
		"rm -f .cordon.yaml",
	}
	for _, a := range attempts {
		t.Run(a, func(t *testing.T) {
			r := w.cordon(t, w.repo, "--", "sh", "-c", a)
			assert.NotEqual(t, 0, r.code, "%q succeeded inside the sandbox", a)
			assert.NotEqual(t, 125, r.code, "the command ran: %s", r.stderr)
			got, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.Equal(t, denyLs, string(got))
			got, err = os.ReadFile(hidden)
			require.NoError(t, err)
			assert.Equal(t, denyLs, string(got))
		})
	}

	// HOME as the working directory: the trust store and everything on the
	// way to it are out of reach, and so is the user-level policy file.
	u := writeFile(t, w.home, ".config/cordon/policy.yaml", denyLs)
	r = w.cordon(t, w.repo, "policy", "trust", u)
	require.Equal(t, 0, r.code, r.stderr)
	store := filepath.Join(w.state, "cordon", "trusted.json")
	before, err := os.ReadFile(store)
	require.NoError(t, err)
	homeAttempts := []string{
		"echo '{}' > " + store,
		"rm -f " + store,
		"mv " + filepath.Dir(store) + " " + w.home + "/moved",
		"mv " + w.home + "/.local " + w.home + "/moved",
		"mv " + w.state + " " + w.home + "/moved",
		"echo x >> " + u,
		"mv " + w.home + "/.config " + w.home + "/moved",
	}
	for _, a := range homeAttempts {
		t.Run(a, func(t *testing.T) {
			r := w.cordon(t, w.home, "--", "sh", "-c", a)
			assert.NotEqual(t, 0, r.code, "%q succeeded inside the sandbox", a)
			assert.NotEqual(t, 125, r.code, "the command ran: %s", r.stderr)
			got, err := os.ReadFile(store)
			require.NoError(t, err)
			assert.Equal(t, string(before), string(got))
			got, err = os.ReadFile(u)
			require.NoError(t, err)
			assert.Equal(t, denyLs, string(got))
		})
	}
	// Ordinary writes next to them still work.
	r = w.cordon(t, w.home, "--", "sh", "-c", "echo ok > "+w.home+"/.local/other && mkdir -p "+w.home+"/.config/app")
	assert.Equal(t, 0, r.code, r.stderr)

	// A fresh HOME: the store's directory does not exist yet, and the
	// sandbox must not be able to create it (and a store in it).
	w2 := newTrustWorld(t)
	r = w2.cordon(t, w2.home, "--", "sh", "-c", "mkdir -p "+w2.state+"/cordon && echo '{}' > "+w2.state+"/cordon/trusted.json")
	assert.NotEqual(t, 0, r.code, r.stderr)
	assert.NoFileExists(t, filepath.Join(w2.state, "cordon", "trusted.json"))
}

// TestPolicyHiddenByNewRepositoryRoot: the search for a project policy
// stops at the first directory with a .git, and a workload can make one in
// any directory it writes. Run 1 makes its working directory a repository
// root; run 2 from there must not quietly lose the trusted policy that
// applied before (found by the second red team: the built-in default ran
// instead, and a denied ls listed the directory).
func TestPolicyHiddenByNewRepositoryRoot(t *testing.T) {
	requireSeccompNotify(t)
	w := newTrustWorld(t)
	proj := filepath.Join(w.home, "proj")
	require.NoError(t, os.MkdirAll(proj, 0o755))
	p := writeFile(t, w.home, "cordon.yaml", denyLs)
	r := w.cordon(t, w.home, "policy", "trust")
	require.Equal(t, 0, r.code, r.stderr)

	r = w.cordon(t, proj, "--", "ls")
	require.Equal(t, 126, r.code, "the trusted policy applies in proj: %s", r.stderr)

	// A new .git is refused by default (TestRedTeamNestedRepoAndGitLinks);
	// run 1 is one that allows it, the case this test is about.
	r = w.cordon(t, proj, "--", "sh", "-c", "mkdir .git")
	require.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, `cordon: denied: create .git (rule: deny_write ".git"`)
	r = w.cordon(t, proj, "--deny-write", "!.git", "--", "sh", "-c", "mkdir .git")
	require.Equal(t, 0, r.code, r.stderr)
	r = w.cordon(t, proj, "--", "ls", "-a")
	assert.Equal(t, 125, r.code, "run 2 refuses the new repository root: %s", r.stderr)
	assert.NotContains(t, r.stdout, ".git", "ls did not run")
	assert.Contains(t, r.stderr, proj+" is new as a repository root without a policy file")
	assert.Contains(t, r.stderr, "hides "+p)

	// The user accepts the root: runs there use what the search finds.
	r = w.cordon(t, proj, "policy", "trust")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "trusted "+proj+" as a repository root")
	r = w.cordon(t, proj, "--", "ls", "-a")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, ".git")
}
