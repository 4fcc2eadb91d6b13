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
//
// Only a cordon line in an entry whose matcher is exactly the shell
// tool's counts as installed: one under another matcher (a decoy in a
// cloned repository's settings, or a leftover) hooks some other tool and
// leaves the shell unhooked, so it is removed. Cordon's own hook object
// loses "async" and "timeout" (an async hook's answer comes too late to
// block; a short timeout would have the agent run the original command
// before cordon answers, so the agent's default, longer than cordon's
// --timeout, applies), and for Cursor gets "failClosed": true (a hook
// that crashes or times out then blocks the command).
func Install(k Kind, doc []byte, command string) ([]byte, bool, error) {
	return edit(k, doc, func(l hookLayout, entries []any) []any {
		found := false
		var out []any
		for _, e := range entries {
			o, ok := e.(*object)
			if !ok {
				out = append(out, e)
				continue
			}
			if m, _ := o.get("matcher").(string); m == l.matcher {
				found = setCordon(l, k, o, command) || found
				out = append(out, e)
				continue
			}
			if keep := dropCordon(l, k, o); keep {
				out = append(out, e)
			}
		}
		if found {
			return out
		}
		if l.grouped {
			return append(out, newObject(
				"matcher", l.matcher,
				"hooks", []any{newObject("type", "command", "command", command)},
			))
		}
		h := newObject("command", command, "matcher", l.matcher)
		if k == Cursor {
			h.set("failClosed", true)
		}
		return append(out, h)
	})
}

// Remove returns doc without cordon's hook for agent k, and whether
// anything changed. A matcher group left empty by the removal goes too.
func Remove(k Kind, doc []byte) ([]byte, bool, error) {
	return edit(k, doc, func(l hookLayout, entries []any) []any {
		var out []any
		for _, e := range entries {
			o, ok := e.(*object)
			if !ok || dropCordon(l, k, o) {
				out = append(out, e)
			}
		}
		return out
	})
}

// dropCordon takes the cordon hook lines out of entry o, and reports
// whether o stays: false when o was a cordon line itself (Cursor's flat
// entries) or a matcher group left empty.
func dropCordon(l hookLayout, k Kind, o *object) bool {
	if !l.grouped {
		c, _ := o.get("command").(string)
		return !isCordonHook(c, k)
	}
	hooks, ok := o.get("hooks").([]any)
	if !ok {
		return true
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
		return false
	}
	if len(kept) != len(hooks) {
		o.set("hooks", kept)
	}
	return true
}

// setCordon points the cordon hook lines in entry o at command, with
// the settings cordon's hook needs, and reports whether there was one.
func setCordon(l hookLayout, k Kind, o *object, command string) bool {
	fix := func(h *object) {
		h.set("command", command)
		h.del("async")
		h.del("timeout")
		if k == Cursor {
			h.set("failClosed", true)
		}
	}
	if !l.grouped {
		if c, _ := o.get("command").(string); isCordonHook(c, k) {
			fix(o)
			return true
		}
		return false
	}
	hooks, _ := o.get("hooks").([]any)
	found := false
	for _, h := range hooks {
		if ho, ok := h.(*object); ok {
			if c, _ := ho.get("command").(string); isCordonHook(c, k) {
				fix(ho)
				found = true
			}
		}
	}
	return found
}

// HooksDisabled reports whether a settings file of agent k turns every
// hook off (Claude Code's "disableAllHooks": true), cordon's included.
// A file that does not parse is not judged here: Install says so.
func HooksDisabled(k Kind, doc []byte) bool {
	if k != Claude || len(bytes.TrimSpace(doc)) == 0 {
		return false
	}
	var m map[string]any
	if json.Unmarshal(doc, &m) != nil {
		return false
	}
	v, _ := m["disableAllHooks"].(bool)
	return v
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
