package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cordon-sandbox/cordon/policy"
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

// Load finds and parses the policy opts point to. A missing --policy file
// is an error (wrapping fs.ErrNotExist); so is a file that does not parse.
func Load(opts Options) (*Loaded, error) {
	if opts.PolicyFile != "" {
		l := &Loaded{Origin: OriginFlag, Path: opts.PolicyFile, Searched: []string{opts.PolicyFile}}
		return l, l.read(opts.PolicyFile)
	}
	if err := opts.fill(); err != nil {
		return nil, err
	}
	l := &Loaded{}
	if p := l.findProject(opts); p != "" {
		l.Origin, l.Path = OriginProject, p
		return l, l.read(p)
	}
	if opts.ConfigHome != "" {
		p := filepath.Join(opts.ConfigHome, "cordon", "policy.yaml")
		l.Searched = append(l.Searched, p)
		if l.usable(p) {
			l.Origin, l.Path = OriginUser, p
			return l, l.read(p)
		}
	}
	l.Origin, l.File = OriginBuiltin, Builtin()
	return l, nil
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
	return nil
}

// findProject walks from opts.Dir up and returns the first project policy
// file, or "". The walk stops after the repository root (a directory with
// a .git entry, file or directory), after $HOME, or at /.
func (l *Loaded) findProject(opts Options) string {
	for dir := opts.Dir; ; {
		found := ""
		for _, name := range ProjectNames {
			p := filepath.Join(dir, name)
			l.Searched = append(l.Searched, p)
			if !l.usable(p) {
				continue
			}
			if found != "" {
				l.Warnings = append(l.Warnings, fmt.Sprintf("%s ignored: %s takes precedence", p, found))
				continue
			}
			found = p
		}
		if found != "" {
			return found
		}
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil || dir == opts.Home {
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
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

// read parses the file at p into l.
func (l *Loaded) read(p string) error {
	data, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("reading policy: %w", err)
	}
	f, err := policy.Parse(p, data)
	if err != nil {
		return err
	}
	l.File = f
	l.Warnings = append(l.Warnings, f.Warnings...)
	return nil
}
