package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Scope says which settings file init writes: the user's (every project)
// or the project's (the current directory's).
type Scope int

const (
	Project Scope = iota
	User
)

// SettingsPath is the file agent k reads its hooks from, for scope: home
// is the user's home directory, dir the project's.
//
//   - Claude Code: .claude/settings.json
//   - Codex: .codex/hooks.json (hooks also need [features] codex_hooks =
//     true in config.toml, which init only reports)
//   - Gemini CLI: .gemini/settings.json
//   - Cursor: .cursor/hooks.json
func SettingsPath(k Kind, scope Scope, home, dir string) string {
	base := dir
	if scope == User {
		base = home
	}
	name := map[Kind]string{
		Claude: ".claude/settings.json", Codex: ".codex/hooks.json",
		Gemini: ".gemini/settings.json", Cursor: ".cursor/hooks.json",
	}[k]
	return filepath.Join(base, name)
}

// hookLayout is where an agent's settings hold cordon's hook.
type hookLayout struct {
	event   string // the key under "hooks"
	matcher string
	// grouped: entries are {matcher, hooks: [{type, command}]} (Claude
	// Code, Codex, Gemini); otherwise {command, matcher} (Cursor).
	grouped bool
}

var layouts = map[Kind]hookLayout{
	Claude: {event: "PreToolUse", matcher: "Bash", grouped: true},
	Codex:  {event: "PreToolUse", matcher: "Bash", grouped: true},
	Gemini: {event: "BeforeTool", matcher: "run_shell_command", grouped: true},
	Cursor: {event: "preToolUse", matcher: "Shell"},
}

// HookCommand is the command line settings run for agent k: cordon's
// binary (quoted for the shell the agent runs hooks with) and "hook K".
func HookCommand(exe string, k Kind) string {
	return Quote(exe) + " hook " + string(k)
}

// isCordonHook reports whether command is a "cordon hook K" line, whatever
// the binary's path: init replaces or removes it, and leaves every other
// hook alone.
func isCordonHook(command string, k Kind) bool {
	f := strings.Fields(command)
	if len(f) != 3 || f[1] != "hook" || f[2] != string(k) {
		return false
	}
	return filepath.Base(strings.Trim(f[0], `'"`)) == "cordon"
}

// Install returns doc (a settings file's JSON, or empty for none) with
// cordon's hook for agent k running command, and whether anything changed.
// Other settings and hooks are kept, in their order; a cordon hook line
// already there is updated in place, so running it twice changes nothing.
func Install(k Kind, doc []byte, command string) ([]byte, bool, error) {
	return edit(k, doc, func(l hookLayout, entries []any) []any {
		found := false
		for _, e := range entries {
			found = setCordon(l, k, e, command) || found
		}
		if found {
			return entries
		}
		if l.grouped {
			return append(entries, newObject(
				"matcher", l.matcher,
				"hooks", []any{newObject("type", "command", "command", command)},
			))
		}
		return append(entries, newObject("command", command, "matcher", l.matcher))
	})
}

// Remove returns doc without cordon's hook for agent k, and whether
// anything changed. A matcher group left empty by the removal goes too.
func Remove(k Kind, doc []byte) ([]byte, bool, error) {
	return edit(k, doc, func(l hookLayout, entries []any) []any {
		var out []any
		for _, e := range entries {
			o, ok := e.(*object)
			if !ok {
				out = append(out, e)
				continue
			}
			if !l.grouped {
				if c, _ := o.get("command").(string); isCordonHook(c, k) {
					continue
				}
				out = append(out, e)
				continue
			}
			hooks, ok := o.get("hooks").([]any)
			if !ok {
				out = append(out, e)
				continue
			}
			kept := []any{}
			for _, h := range hooks {
				if ho, ok := h.(*object); ok {
					if c, _ := ho.get("command").(string); isCordonHook(c, k) {
						continue
					}
				}
				kept = append(kept, h)
			}
			if len(kept) == 0 && len(hooks) > 0 {
				continue
			}
			o.set("hooks", kept)
			out = append(out, e)
		}
		return out
	})
}

// setCordon points the cordon hook lines in entry e at command, and
// reports whether there was one.
func setCordon(l hookLayout, k Kind, e any, command string) bool {
	o, ok := e.(*object)
	if !ok {
		return false
	}
	if !l.grouped {
		if c, _ := o.get("command").(string); isCordonHook(c, k) {
			o.set("command", command)
			return true
		}
		return false
	}
	hooks, _ := o.get("hooks").([]any)
	found := false
	for _, h := range hooks {
		if ho, ok := h.(*object); ok {
			if c, _ := ho.get("command").(string); isCordonHook(c, k) {
				ho.set("command", command)
				found = true
			}
		}
	}
	return found
}

// edit applies change to the list of hooks for k's event in doc.
func edit(k Kind, doc []byte, change func(hookLayout, []any) []any) ([]byte, bool, error) {
	l := layouts[k]
	root := newObject()
	if len(bytes.TrimSpace(doc)) > 0 {
		v, err := decodeOrdered(doc)
		if err != nil {
			return nil, false, fmt.Errorf("the settings file is not JSON (fix it, or move it aside): %w", err)
		}
		o, ok := v.(*object)
		if !ok {
			return nil, false, errors.New("the settings file is not a JSON object")
		}
		root = o
	}
	before, err := encode(root)
	if err != nil {
		return nil, false, err
	}
	hooksV := root.get("hooks")
	if hooksV == nil {
		hooksV = newObject()
	}
	hooks, ok := hooksV.(*object)
	if !ok {
		return nil, false, errors.New(`"hooks" in the settings file is not an object`)
	}
	var entries []any
	if v := hooks.get(l.event); v != nil {
		if entries, ok = v.([]any); !ok {
			return nil, false, fmt.Errorf(`"hooks.%s" in the settings file is not a list`, l.event)
		}
	}
	entries = change(l, entries)
	if len(entries) == 0 {
		hooks.del(l.event)
	} else {
		hooks.set(l.event, entries)
	}
	if k == Cursor && len(hooks.keys) > 0 && root.get("version") == nil {
		root.set("version", json.Number("1"))
	}
	if len(hooks.keys) == 0 {
		root.del("hooks")
	} else {
		root.set("hooks", hooks)
	}
	after, err := encode(root)
	if err != nil {
		return nil, false, err
	}
	if bytes.Equal(before, after) {
		// Unchanged: the caller keeps the file as it is, byte for byte.
		return doc, false, nil
	}
	return after, true, nil
}
