package policy

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// FileRule is one path pattern of a policy's files section.
//
// A pattern is absolute (/etc/secret), under the caller's home (~/.ssh/id_*)
// or relative. A relative pattern applies inside every writable tree of the
// sandbox (the working directory and each allow_write path): with a '/' it
// is anchored at the tree's top (.git/hooks), without one it names a file
// or directory at any depth (.env*, as **/.env*). '*', '?', '[...]', '{a,b}'
// and '**' (any number of directories) glob. A leading '!' makes the rule an
// exception: a path it matches is not denied by the list's other rules. A
// pattern that names a directory covers everything below it.
type FileRule struct {
	Pattern string
	// Source says where the rule came from: "cordon.yaml:9", "--deny-read",
	// "builtin".
	Source string
	// Why, when set, says why the rule exists (the built-in ones do).
	Why string
}

// Exception reports whether the rule is an exception ('!pattern').
func (r FileRule) Exception() bool { return strings.HasPrefix(r.Pattern, "!") }

// Glob is the pattern without its '!'.
func (r FileRule) Glob() string { return strings.TrimPrefix(r.Pattern, "!") }

// FileAccess names what a FileExample does with its path.
type FileAccess string

const (
	// FileRead is reading (or listing) a path.
	FileRead FileAccess = "read"
	// FileWrite is changing, creating or removing a path.
	FileWrite FileAccess = "write"
)

// FileExample is a path with whether the policy must deny an access to it.
// A policy whose file examples do not hold fails to compile.
type FileExample struct {
	Access FileAccess
	// Path is written like a pattern: absolute, ~/... or relative to a
	// writable tree.
	Path   string
	Denied bool
	Source string
}

// FilePolicy is the file part of a policy: what the sandbox may not read or
// change, and what it binds besides the working directory.
type FilePolicy struct {
	// DenyRead lists what the sandbox cannot read: each existing match is
	// replaced by an empty object of mode 000, so opening it fails with
	// EACCES.
	DenyRead []FileRule
	// DenyWrite lists what the sandbox cannot change inside its writable
	// trees: each existing match is bound read-only (EROFS). Bare names
	// (no '/') are also refused when the sandbox creates them (EACCES).
	DenyWrite []FileRule
	// AllowWrite and ReadOnly are extra binds (as --rw and --ro).
	AllowWrite, ReadOnly []string
	// Writable names presets of host caches bound read-write (see
	// Presets).
	Writable []string
	// Examples are checked by Compile.
	Examples []FileExample
}

// Presets are the named host caches a policy may bind read-write with
// files.writable. None is writable by default: a build cache the sandbox
// writes can poison builds run outside it later.
var Presets = map[string][]string{
	"go-cache":    {"~/.cache/go-build", "~/go/pkg/mod"},
	"npm-cache":   {"~/.npm"},
	"pip-cache":   {"~/.cache/pip"},
	"cargo":       {"~/.cargo/registry", "~/.cargo/git"},
	"yarn-cache":  {"~/.cache/yarn"},
	"pnpm-store":  {"~/.local/share/pnpm/store"},
	"maven-cache": {"~/.m2/repository"},
}

// PresetNames lists Presets' names, sorted.
func PresetNames() []string {
	out := make([]string, 0, len(Presets))
	for n := range Presets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// builtinDenyRead is the built-in list of credential stores the sandbox
// cannot read. Tools that need them (ssh, aws, gpg) fail inside the sandbox
// with "Permission denied", which is the point: run them outside, or drop
// the list with defaults: false and copy what you keep.
var builtinDenyRead = []struct{ pattern, why string }{
	{"~/.ssh/id_*", "ssh private keys"},
	{"!~/.ssh/id_*.pub", "ssh public keys are not secret"},
	{"~/.ssh/*.pem", "private keys"},
	{"~/.ssh/*.key", "private keys"},
	{"~/.aws", "AWS credentials"},
	{"~/.gnupg", "gpg private keys"},
	{"~/.kube", "Kubernetes credentials"},
	{"~/.docker/config.json", "container registry credentials"},
	{"~/.netrc", "passwords for hosts"},
	{"~/.git-credentials", "git's stored passwords"},
	{"~/.config/gh/hosts.yml", "GitHub CLI token"},
	{"~/.config/glab-cli", "GitLab CLI token"},
	{"~/.config/gcloud", "Google Cloud credentials"},
	{"~/.azure", "Azure credentials"},
	{"~/.password-store", "pass's password store"},
	{"~/.pypirc", "PyPI upload token"},
	{"~/.npmrc", "npm registry tokens (npm carries on with its defaults when it cannot read it)"},
	{"~/.cargo/credentials*", "crates.io token"},
}

// builtinDenyWrite is the built-in list of what the sandbox cannot change in
// its writable trees: what runs later outside the sandbox, or decides the
// next run.
var builtinDenyWrite = []struct{ pattern, why string }{
	{"**/.git/hooks", "git runs hooks outside the sandbox"},
	{"**/.git/config", "core.fsmonitor, core.sshCommand and aliases run outside the sandbox"},
	{"**/.git/config.worktree", "per-worktree config (core.fsmonitor, core.hooksPath)"},
	{"**/.git/worktrees/*/config.worktree", "a linked worktree's own config"},
	{"**/.git/modules/**/hooks", "a submodule's hooks"},
	{"**/.git/modules/**/config", "a submodule's config"},
	{"**/.git/modules/**/config.worktree", "a submodule's per-worktree config"},
	{"commondir", "points a git directory at another repository, and so at its config and hooks"},
	{"config.worktree", "per-worktree config that git reads once extensions.worktreeConfig is on"},
	{".git", "a new repository or git link: the user's git reads a nested repository's config (core.fsmonitor) through a gitlink; existing .git files are read-only, existing .git directories keep git working; '!.git' allows git init and git clone"},
	{"cordon.yaml", "the next run's policy"},
	{".cordon.yaml", "the next run's policy"},
	{".claude", "agent settings (hooks, permissions)"},
	{".codex", "agent settings"},
	{".cursor", "agent settings"},
	{".gemini", "agent settings (hooks)"},
	{".vscode", "editor tasks and settings run code"},
	{".idea", "IDE run configurations"},
	{".mcp.json", "MCP servers an agent starts (commands run outside the sandbox)"},
	{".devcontainer", "dev container definitions (postCreateCommand and the like run on the next open)"},
	{".zed", "editor settings and tasks run code"},
}

// GitName is the deny_write name that refuses new repositories and git
// links: unlike other names it never makes an existing .git directory
// read-only as a whole.
const GitName = ".git"

// BuiltinFiles returns the built-in deny_read and deny_write rules.
func BuiltinFiles() (denyRead, denyWrite []FileRule) {
	for _, b := range builtinDenyRead {
		denyRead = append(denyRead, FileRule{Pattern: b.pattern, Source: "builtin", Why: b.why})
	}
	for _, b := range builtinDenyWrite {
		denyWrite = append(denyWrite, FileRule{Pattern: b.pattern, Source: "builtin", Why: b.why})
	}
	return denyRead, denyWrite
}

// checkFiles validates f's patterns and presets.
func checkFiles(f *FilePolicy) error {
	var errs []error
	for _, list := range [][]FileRule{f.DenyRead, f.DenyWrite} {
		for _, r := range list {
			if err := CheckFilePattern(r.Pattern); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", cmpSource(r.Source), err))
			}
		}
	}
	for _, n := range f.Writable {
		if _, ok := Presets[n]; !ok {
			errs = append(errs, fmt.Errorf("files.writable: unknown preset %q (want one of %s)", n, strings.Join(PresetNames(), ", ")))
		}
	}
	return errors.Join(errs...)
}

func cmpSource(s string) string {
	if s == "" {
		return "files"
	}
	return s
}

// CheckFilePattern reports what is wrong with a file pattern, or nil.
func CheckFilePattern(p string) error {
	g := strings.TrimPrefix(p, "!")
	switch {
	case g == "":
		return fmt.Errorf("empty path pattern %q", p)
	case strings.ContainsRune(g, 0):
		return fmt.Errorf("path pattern %q holds a NUL byte", p)
	case g == "~" || g == "/":
		return fmt.Errorf("path pattern %q covers everything: name what to deny", p)
	case strings.HasPrefix(g, "~") && !strings.HasPrefix(g, "~/"):
		return fmt.Errorf("path pattern %q: only ~/ (the caller's home) is expanded, not ~user", p)
	case !doublestar.ValidatePattern(g):
		return fmt.Errorf("path pattern %q is not a valid glob", p)
	}
	for _, c := range strings.Split(g, "/") {
		if c == ".." || c == "." {
			return fmt.Errorf("path pattern %q: write it without . or .. components", p)
		}
	}
	return nil
}

// AnchorPattern turns a pattern (without '!') into an absolute glob:
// ~/ becomes home, and a relative pattern is placed under root (a bare name
// at any depth below it). It returns "" for a relative pattern when root is
// empty, and for a ~ pattern when home is empty.
func AnchorPattern(g, home, root string) string {
	switch {
	case strings.HasPrefix(g, "/"):
		return path.Clean(g)
	case strings.HasPrefix(g, "~/"):
		if home == "" {
			return ""
		}
		return path.Join(escapeGlob(home), g[2:])
	}
	if root == "" {
		return ""
	}
	if !strings.Contains(g, "/") {
		g = "**/" + g
	}
	return path.Join(escapeGlob(root), g)
}

// LiteralPattern is a pattern that matches exactly the absolute path p,
// whatever characters it holds.
func LiteralPattern(p string) string { return escapeGlob(path.Clean(p)) }

// escapeGlob quotes glob metacharacters in a literal path.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// MatchFile reports whether the absolute path p, or a directory above it,
// matches one of rules' absolute globs (anchored with AnchorPattern), and
// none of the exceptions matches p. The deciding rule is returned.
func MatchFile(rules []FileRule, globs []string, p string) (FileRule, bool) {
	for i, r := range rules {
		if !r.Exception() || globs[i] == "" {
			continue
		}
		if ok, _ := doublestar.Match(globs[i], p); ok {
			return FileRule{}, false
		}
	}
	for q := p; ; q = path.Dir(q) {
		for i, r := range rules {
			if r.Exception() || globs[i] == "" {
				continue
			}
			if q != p && r.Pattern == GitName {
				// The bare name .git refuses a new .git and keeps .git
				// files; it does not cover what an existing .git
				// directory holds (git writes it).
				continue
			}
			if ok, _ := doublestar.Match(globs[i], q); ok {
				return r, true
			}
		}
		if q == "/" || q == "." || q == "" {
			break
		}
	}
	return FileRule{}, false
}

// exampleRoot is where relative patterns and example paths are placed when
// examples are checked, and exampleHome stands for ~: neither is a real
// directory, so checking reads nothing.
const (
	exampleRoot = "/cordon-example-workdir"
	exampleHome = "/cordon-example-home"
)

// checkFileExamples decides every file example against f.
func checkFileExamples(f *FilePolicy) error {
	var errs []error
	for _, ex := range f.Examples {
		r, denied := f.decideExample(ex)
		if denied != ex.Denied {
			errs = append(errs, fmt.Errorf("%s: file example %s %s: got %s, want %s", cmpSource(ex.Source), ex.Access, ex.Path,
				FileExampleResult(r, denied), FileExampleResult(FileRule{}, ex.Denied)))
		}
	}
	return errors.Join(errs...)
}

// FileExampleResult describes a file example's outcome for messages:
// "allowed", or "denied by PATTERN (SOURCE)" when the rule is known.
func FileExampleResult(r FileRule, denied bool) string {
	switch {
	case !denied:
		return "allowed"
	case r.Pattern == "":
		return "denied"
	}
	return fmt.Sprintf("denied by %q (%s)", r.Pattern, r.Source)
}

// DecideFileExample reports whether the policy's files part denies ex's
// access to its path, and the deciding rule. Paths and relative rules are
// placed under a stand-in working directory and ~ under a stand-in home:
// nothing is read.
func (p *Policy) DecideFileExample(ex FileExample) (FileRule, bool) {
	return p.filePolicy.decideExample(ex)
}

func (f *FilePolicy) decideExample(ex FileExample) (FileRule, bool) {
	rules := f.DenyRead
	if ex.Access == FileWrite {
		rules = f.DenyWrite
	}
	var p string
	if strings.HasPrefix(ex.Path, "/") || strings.HasPrefix(ex.Path, "~/") {
		p = AnchorPattern(ex.Path, exampleHome, "")
	} else {
		p = path.Join(exampleRoot, ex.Path)
	}
	globs := make([]string, len(rules))
	for i, r := range rules {
		globs[i] = AnchorPattern(r.Glob(), exampleHome, exampleRoot)
	}
	return MatchFile(rules, globs, p)
}

// ProtectedNames lists the bare names among rules (no '/', not an
// exception): the names the sandbox may not create anywhere in its
// writable trees.
func ProtectedNames(rules []FileRule) []string {
	var out []string
	for _, r := range rules {
		if r.Exception() || strings.Contains(r.Pattern, "/") {
			continue
		}
		out = append(out, r.Pattern)
	}
	return out
}

// NameProtected reports whether name (one path component) matches one of
// names (globs of one component), ignoring case: on a case-insensitive
// mount (vfat, exfat, ext4 and tmpfs casefold directories) ".GIT" and
// ".Claude" are the protected directories themselves, and the supervisor
// cannot tell from a path which kind of directory will resolve it. Refusing
// the odd-case spelling on a case-sensitive mount costs nothing a user
// needs.
func NameProtected(names []string, name string) (string, bool) {
	folded := strings.ToLower(name)
	for _, n := range names {
		if ok, _ := path.Match(strings.ToLower(n), folded); ok {
			return n, true
		}
	}
	return "", false
}
