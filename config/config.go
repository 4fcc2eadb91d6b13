package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/policy/codex"
)

// Origin says where a policy came from.
type Origin string

const (
	// OriginFlag is a file named with --policy.
	OriginFlag Origin = "flag"
	// OriginProject is cordon.yaml or .cordon.yaml found from the working
	// directory up.
	OriginProject Origin = "project"
	// OriginUser is $XDG_CONFIG_HOME/cordon/policy.yaml.
	OriginUser Origin = "user"
	// OriginBuiltin is the built-in default: allow, with the built-in deny
	// list.
	OriginBuiltin Origin = "builtin"
)

// ProjectNames are the file names looked for in the working directory and
// its parents, in order of preference.
var ProjectNames = []string{"cordon.yaml", ".cordon.yaml"}

// Options says where to look. Empty fields are filled from the process:
// the working directory, the user's home, $XDG_CONFIG_HOME.
type Options struct {
	// PolicyFile is the --policy flag; when set, nothing else is searched.
	PolicyFile string
	// Dir is where the project search starts.
	Dir string
	// Home is the user's home directory.
	Home string
	// ConfigHome is $XDG_CONFIG_HOME; a relative value is ignored, as the
	// XDG Base Directory specification says.
	ConfigHome string
	// StateHome is $XDG_STATE_HOME (default ~/.local/state), where the
	// trust store lives; a relative value is ignored.
	StateHome string
	// AllowUntrusted loads a discovered file the user has not trusted
	// (Loaded.Trusted says so) instead of failing with *UntrustedError:
	// for tools that show a policy without running anything.
	AllowUntrusted bool
}

// Loaded is a policy file and where it came from.
type Loaded struct {
	Origin Origin
	// Path is the file loaded, or "" for the built-in default.
	Path string
	// File is the parsed file. For the built-in default it is a file named
	// "built-in" with the default configuration.
	File *policy.File
	// Searched lists every path looked at, in order, for --debug.
	Searched []string
	// Trusted is true for a file named with --policy, the built-in default
	// and a discovered file whose content the trust store records at its
	// path.
	Trusted bool
	// Sum is the loaded file's SHA-256 (hex), or "".
	Sum string
	// Root and Hidden are set when the search stopped at a repository root
	// (Root) with no policy file, beyond which lies a project policy the user
	// trusted (Hidden), and the user has not accepted the root: a run
	// refuses it (see UntrustedError.Hides).
	Root, Hidden string
	// Warnings are discovery problems (files skipped) followed by the
	// file's own warnings.
	Warnings []string
}

// Config returns the loaded policy configuration.
func (l *Loaded) Config() policy.Config { return l.File.Config }

// String says where the policy came from: "/repo/cordon.yaml (project)" or
// "built-in default".
func (l *Loaded) String() string {
	if l.Origin == OriginBuiltin {
		return "built-in default"
	}
	return fmt.Sprintf("%s (%s)", l.Path, l.Origin)
}

// Builtin returns the built-in default policy file: allow everything except
// the built-in deny list.
func Builtin() *policy.File {
	return &policy.File{Name: "built-in", Format: policy.FormatCordon,
		Config: policy.Config{Default: policy.Allow, Builtins: true}}
}

// Candidate is a file discovery considers.
type Candidate struct {
	Path   string
	Origin Origin // OriginProject or OriginUser
}

// Candidates returns every file discovery considers from opts.Dir, in
// order of preference: cordon.yaml and .cordon.yaml in the directory and
// each parent up to where the walk stops (after the repository root, the
// first directory with a .git entry; after $HOME; at /), then the user's
// policy.yaml. Load takes the first usable one (the nearest directory
// with a file wins); the runner binds every existing one read-only into a
// sandbox whose writable binds hold it. One list, so the two cannot
// disagree.
func Candidates(opts Options) ([]Candidate, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	cands, _ := opts.candidates()
	return cands, nil
}

// candidates returns the candidates, and the repository root the walk
// stopped at, or "" when it stopped at $HOME or /.
func (o *Options) candidates() ([]Candidate, string) {
	var out []Candidate
	root := ""
	for dir := o.Dir; ; {
		for _, name := range ProjectNames {
			out = append(out, Candidate{Path: filepath.Join(dir, name), Origin: OriginProject})
		}
		if dir == o.Home {
			break
		}
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			root = dir
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
	}
	if o.ConfigHome != "" {
		out = append(out, Candidate{Path: filepath.Join(o.ConfigHome, "cordon", "policy.yaml"), Origin: OriginUser})
	}
	return out, root
}

// hiddenBy returns the nearest project policy file beyond the repository
// root root (up to $HOME or /) that the user has trusted at some time, or
// "". A workload can make any directory it can write a repository root (a
// new .git): the next run started there would stop short of the policy that
// applied to it before.
func (o *Options) hiddenBy(root string, store *TrustStore) (string, error) {
	tf, err := store.read()
	if err != nil {
		return "", err
	}
	for dir := root; dir != o.Home; {
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir = parent
		for _, name := range ProjectNames {
			p := filepath.Join(dir, name)
			if _, known := tf.Files[p]; known {
				if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
					return p, nil
				}
			}
		}
	}
	return "", nil
}

// Load finds and parses the policy opts point to. A missing --policy file
// is an error (wrapping fs.ErrNotExist); so is a file that does not parse.
// A discovered file must be trusted (TrustStore): otherwise Load returns
// the Loaded so far (Path, Origin, Sum; no File) and an *UntrustedError,
// unless opts.AllowUntrusted.
func Load(opts Options) (*Loaded, error) {
	if opts.PolicyFile != "" {
		l := &Loaded{Origin: OriginFlag, Path: opts.PolicyFile, Searched: []string{opts.PolicyFile}, Trusted: true}
		data, err := os.ReadFile(opts.PolicyFile)
		if err != nil {
			return l, fmt.Errorf("reading policy: %w", err)
		}
		l.Sum = Sum(data)
		return l, l.parse(opts.PolicyFile, data)
	}
	if err := opts.fill(); err != nil {
		return nil, err
	}
	l := &Loaded{}
	cands, root := opts.candidates()
	c, ok := l.find(cands)
	if (!ok || c.Origin != OriginProject) && root != "" {
		// No project file up to the repository root: make sure the root
		// does not hide a policy the user relied on beyond it.
		if err := l.checkRoot(opts, root); err != nil {
			return l, err
		}
	}
	if ok {
		l.Origin, l.Path = c.Origin, c.Path
		return l, l.readTrusted(opts)
	}
	l.Origin, l.File, l.Trusted = OriginBuiltin, Builtin(), true
	return l, nil
}

// checkRoot refuses a repository root that hides a trusted project policy
// (see hiddenBy) unless the user has accepted the root as such: it
// returns an *UntrustedError for the root, or records the hidden file in
// l.Hidden when opts.AllowUntrusted.
func (l *Loaded) checkRoot(opts Options, root string) error {
	store := opts.trustStore()
	hidden, err := opts.hiddenBy(root, store)
	if err != nil || hidden == "" {
		return err
	}
	marker := filepath.Join(root, ".git")
	ok, err := store.Trusted(marker, RootSum)
	if err != nil || ok {
		return err
	}
	l.Root, l.Hidden = root, hidden
	if opts.AllowUntrusted {
		l.Warnings = append(l.Warnings, fmt.Sprintf("%s is a repository root without a policy file: it hides %s, "+
			"which applied here before; a run refuses it until you run \"cordon policy trust\" here", root, hidden))
		return nil
	}
	return &UntrustedError{Path: marker, Origin: OriginProject, Sum: RootSum, Hides: hidden}
}

// fill completes opts from the process environment.
func (o *Options) fill() error {
	if o.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("finding the working directory: %w", err)
		}
		o.Dir = wd
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", o.Dir, err)
	}
	o.Dir = dir
	if o.Home == "" {
		// No home (a service account): the search goes up to / and
		// there is no user config unless XDG_CONFIG_HOME is set.
		o.Home, _ = os.UserHomeDir()
	}
	if o.Home != "" {
		o.Home = filepath.Clean(o.Home)
	}
	if o.ConfigHome == "" {
		o.ConfigHome = os.Getenv("XDG_CONFIG_HOME")
	}
	if !filepath.IsAbs(o.ConfigHome) {
		o.ConfigHome = ""
		if o.Home != "" {
			o.ConfigHome = filepath.Join(o.Home, ".config")
		}
	}
	if o.StateHome == "" {
		o.StateHome = os.Getenv("XDG_STATE_HOME")
	}
	if !filepath.IsAbs(o.StateHome) {
		o.StateHome = ""
		if o.Home != "" {
			o.StateHome = filepath.Join(o.Home, ".local", "state")
		}
	}
	return nil
}

// find returns the first usable candidate. The candidates of the
// directory it is in are all looked at, so a second one there is reported
// as ignored; nothing further is.
func (l *Loaded) find(cands []Candidate) (Candidate, bool) {
	var found Candidate
	for _, c := range cands {
		if found.Path != "" && (c.Origin != found.Origin || filepath.Dir(c.Path) != filepath.Dir(found.Path)) {
			break
		}
		l.Searched = append(l.Searched, c.Path)
		if !l.usable(c.Path) {
			continue
		}
		if found.Path != "" {
			l.Warnings = append(l.Warnings, fmt.Sprintf("%s ignored: %s takes precedence", c.Path, found.Path))
			continue
		}
		found = c
	}
	return found, found.Path != ""
}

// usable reports whether p is a regular file that may be used as a policy,
// recording a warning for one that exists but may not.
func (l *Loaded) usable(p string) bool {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false
	case err != nil:
		l.Warnings = append(l.Warnings, fmt.Sprintf("%s skipped: %v", p, err))
		return false
	case !fi.Mode().IsRegular():
		l.Warnings = append(l.Warnings, fmt.Sprintf("%s skipped: not a regular file", p))
		return false
	}
	if why := untrusted(fi); why != "" {
		l.Warnings = append(l.Warnings, fmt.Sprintf("%s skipped: %s", p, why))
		return false
	}
	return true
}

// readTrusted reads the discovered file l.Path once, checks its content
// against the trust store and parses that same content (no window for the
// file to change between the check and the parse).
func (l *Loaded) readTrusted(opts Options) error {
	data, err := os.ReadFile(l.Path)
	if err != nil {
		return fmt.Errorf("reading policy: %w", err)
	}
	l.Sum = Sum(data)
	if l.Trusted, err = opts.trustStore().Trusted(l.Path, l.Sum); err != nil {
		return err
	}
	if !l.Trusted && !opts.AllowUntrusted {
		return &UntrustedError{Path: l.Path, Origin: l.Origin, Sum: l.Sum}
	}
	return l.parse(l.Path, data)
}

// ParsePolicy parses a policy file by its name: a codex rules file
// (*.rules, Starlark) through package codex, anything else (cordon's
// format, a fence config) through policy.Parse.
func ParsePolicy(name string, data []byte) (*policy.File, error) {
	if codex.IsRulesFile(name) {
		return codex.Parse(name, data)
	}
	return policy.Parse(name, data)
}

// parse parses data, the content of the file at p, into l.
func (l *Loaded) parse(p string, data []byte) error {
	f, err := ParsePolicy(p, data)
	if err != nil {
		return err
	}
	l.File = f
	l.Warnings = append(l.Warnings, f.Warnings...)
	return nil
}
