//go:build cgo

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cordon-sandbox/cordon/agent"
	"github.com/spf13/cobra"
)

// initOptions holds the flags of "cordon init".
type initOptions struct {
	user, project bool
	dryRun        bool
	remove        bool
}

func newInitCmd(opts *initOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "init claude|codex|gemini|cursor [--user|--project] [--dry-run] | init --remove [AGENT]",
		Short: "Write cordon's hook into an agent's settings, so its shell commands run under cordon",
		Long: `init adds "cordon hook AGENT" to the agent's settings file as its
pre-tool-use hook on the shell tool (see cordon hook --help):

  claude  .claude/settings.json  hooks.PreToolUse, matcher Bash
  codex   .codex/hooks.json      hooks.PreToolUse, matcher Bash
  gemini  .gemini/settings.json  hooks.BeforeTool, matcher run_shell_command
  cursor  .cursor/hooks.json     hooks.preToolUse, matcher Shell

--project (the default) writes the file under the current directory, --user
the one under your home directory. The JSON is merged: other settings and
other hooks stay as they are, in their order; running init again changes
nothing; before cordon first changes a file, it keeps it as
FILE.cordon-backup (never overwritten afterwards). --dry-run prints the change and writes nothing. --remove takes
cordon's hook out again (and nothing else); without an agent, from each of the four files that
exists.

Only a cordon line under exactly the shell tool's matcher counts as installed:
one under another matcher (a decoy in a cloned repository's settings) is
removed, and cordon's own entry loses "async" and "timeout" (the agent's
default timeout, longer than the hook's own deadline, applies); Cursor's gets
"failClosed": true. init refuses settings where "disableAllHooks": true
(Claude Code: the file, .claude/settings.local.json, your user settings).

The hook line names this cordon binary by its absolute path. Codex runs
hooks only with [features] codex_hooks = true in its config.toml, which init
does not edit: it says so.`,
		Example: `  cordon init claude
  cordon init claude --dry-run
  cordon init codex --user
  cordon init gemini --remove
  cordon init --remove --user   # from every agent's user settings`,
		Args:          cobra.RangeArgs(0, 1),
		ValidArgs:     []string{"claude", "codex", "gemini", "cursor"},
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				return opts.run(cmd.OutOrStdout(), args[0])
			}
			if !opts.remove {
				return failed(errors.New("name the agent: cordon init claude|codex|gemini|cursor"))
			}
			for _, k := range agent.Kinds {
				if err := opts.run(cmd.OutOrStdout(), string(k)); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.project, "project", false, "write the project's settings file, under the current directory (default)")
	f.BoolVar(&opts.user, "user", false, "write your user settings file, under your home directory")
	f.BoolVar(&opts.dryRun, "dry-run", false, "print the change and write nothing")
	f.BoolVar(&opts.remove, "remove", false, "remove cordon's hook from the settings file")
	cmd.MarkFlagsMutuallyExclusive("user", "project")
	return cmd
}

func (o *initOptions) run(out io.Writer, name string) error {
	k, err := agent.ParseKind(name)
	if err != nil {
		return failed(err)
	}
	scope := agent.Project
	if o.user {
		scope = agent.User
	}
	home, err := os.UserHomeDir()
	if err != nil && scope == agent.User {
		return failed(fmt.Errorf("finding your home directory: %w", err))
	}
	dir, err := currentDir()
	if err != nil {
		return failed(err)
	}
	path := agent.SettingsPath(k, scope, home, dir)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return failed(fmt.Errorf("reading %s: %w", path, err))
	}
	existed := err == nil
	var next []byte
	var changed bool
	if o.remove {
		if !existed {
			fmt.Fprintf(out, "%s does not exist: nothing to remove\n", path)
			return nil
		}
		next, changed, err = agent.Remove(k, old)
	} else {
		exe, xerr := os.Executable()
		if xerr != nil {
			return failed(fmt.Errorf("finding cordon's own binary: %w", xerr))
		}
		if exe, xerr = filepath.EvalSymlinks(exe); xerr != nil {
			return failed(fmt.Errorf("finding cordon's own binary: %w", xerr))
		}
		if err := hooksNotDisabled(k, scope, home, dir, path, old); err != nil {
			return failed(err)
		}
		next, changed, err = agent.Install(k, old, agent.HookCommand(exe, k))
	}
	if err != nil {
		return failed(fmt.Errorf("%s: %w", path, err))
	}
	if !changed {
		fmt.Fprintf(out, "%s: unchanged (cordon's hook is %s)\n", path, map[bool]string{true: "not there", false: "already there"}[o.remove])
		return nil
	}
	if o.dryRun {
		fmt.Fprintf(out, "would change %s:\n", path)
		printLineDiff(out, string(old), string(next))
		return nil
	}
	mode := fs.FileMode(0o644)
	if existed {
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
		// The backup is the file before cordon first changed it: a later
		// init or --remove does not overwrite it.
		backup := path + ".cordon-backup"
		if _, err := os.Lstat(backup); errors.Is(err, fs.ErrNotExist) {
			if err := writeFileAtomic(backup, old, mode); err != nil {
				return failed(fmt.Errorf("keeping a backup of %s: %w", path, err))
			}
			fmt.Fprintf(out, "kept the original as %s\n", backup)
		}
	} else if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return failed(fmt.Errorf("creating %s: %w", filepath.Dir(path), err))
	}
	if err := writeFileAtomic(path, next, mode); err != nil {
		return failed(fmt.Errorf("writing %s: %w", path, err))
	}
	if o.remove {
		fmt.Fprintf(out, "removed cordon's hook from %s\n", path)
		return nil
	}
	fmt.Fprintf(out, "wrote cordon's hook into %s\n", path)
	if k == agent.Codex {
		fmt.Fprintln(out, "note: Codex runs hooks only with this in its config.toml (~/.codex/config.toml):\n  [features]\n  codex_hooks = true")
	}
	return nil
}

// hooksNotDisabled refuses to install into settings that turn every
// hook off: the file init writes, and for Claude Code the files that
// override it (.claude/settings.local.json, and the user's settings for a
// project install). The hook would be written and never run.
func hooksNotDisabled(k agent.Kind, scope agent.Scope, home, dir, path string, doc []byte) error {
	check := map[string][]byte{path: doc}
	if k == agent.Claude {
		others := []string{filepath.Join(dir, ".claude", "settings.local.json")}
		if scope == agent.Project && home != "" {
			others = append(others, agent.SettingsPath(k, agent.User, home, dir))
		}
		for _, p := range others {
			if p == path {
				continue
			}
			b, err := os.ReadFile(p)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("reading %s (it can turn hooks off): %w", p, err)
			}
			check[p] = b
		}
	}
	for p, b := range check {
		if agent.HooksDisabled(k, b) {
			return fmt.Errorf(`%s has "disableAllHooks": true, so the agent would run no hook, cordon's included: remove that setting, then run cordon init again`, p)
		}
	}
	return nil
}

// writeFileAtomic writes b to path through a temporary file in the same
// directory and a rename, so an agent never reads half a settings file.
func writeFileAtomic(path string, b []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// printLineDiff prints the lines of a that b lacks as "-" and the lines b
// adds as "+", in order, with the common lines as context ("  "). Settings
// files are small: a plain longest-common-subsequence table is enough.
func printLineDiff(out io.Writer, a, b string) {
	al := strings.Split(strings.TrimSuffix(a, "\n"), "\n")
	bl := strings.Split(strings.TrimSuffix(b, "\n"), "\n")
	if a == "" {
		al = nil
	}
	n, m := len(al), len(bl)
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if al[i] == bl[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && al[i] == bl[j]:
			fmt.Fprintf(out, "  %s\n", al[i])
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			fmt.Fprintf(out, "+ %s\n", bl[j])
			j++
		default:
			fmt.Fprintf(out, "- %s\n", al[i])
			i++
		}
	}
}
