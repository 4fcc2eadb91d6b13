package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// Carry mode runs a script in the same shell as a snapshot step: the
// script is eval'd by a wrapper whose EXIT trap writes the shell's
// physical working directory and `export -p` to carryFD. Only shell
// builtins are used (command printf, command pwd, export), so the snapshot
// makes no exec: it never shows up as a policy decision and an allowlist
// policy cannot break it. dash, the usual /bin/sh, accepts only single-digit
// descriptors in redirections, so the trap opens the pipe again by path
// (/proc/self/fd/63); a script is unlikely to touch descriptor 63. The
// descriptor is inherited by what the script starts; the host therefore
// reads the snapshot up to its end marker, never waiting for EOF.
//
// What is not carried, by design or by the shell's nature: a script that
// replaces the EXIT trap, ends in exec, or is killed (timeout, Kill) writes
// no snapshot, and the session keeps its previous state.
const carryFD = 63

const (
	carryBegin = "cordon-carry-1\x00"
	carryEnd   = "\x00cordon-carry-end\x00"
)

// carryWrapper is run as: sh -c carryWrapper sh SCRIPT. $1 is moved out of
// the positional parameters before the script runs, as with sh -c SCRIPT.
const carryWrapper = `trap 'cordon_rc=$?; { command printf "cordon-carry-1\000"; command pwd -P; command printf "\000"; export -p; command printf "\000cordon-carry-end\000"; } >/proc/self/fd/63 2>/dev/null; exit "$cordon_rc"' EXIT
cordon_script=$1
shift
eval "unset cordon_script; $cordon_script"`

// carryState is a carry-mode session's shell state.
type carryState struct {
	cwd string
	env []string
}

var errNoSnapshot = errors.New("no carry snapshot")

// parseSnapshot reads what the wrapper wrote. cwd is empty when the shell
// could not tell its directory (it was removed, or is unreachable).
func parseSnapshot(b []byte) (carryState, error) {
	i := bytes.Index(b, []byte(carryBegin))
	if i < 0 {
		return carryState{}, errNoSnapshot
	}
	b = b[i+len(carryBegin):]
	j := bytes.Index(b, []byte(carryEnd))
	if j < 0 {
		return carryState{}, errNoSnapshot
	}
	b = b[:j]
	k := bytes.IndexByte(b, 0)
	if k < 0 {
		return carryState{}, fmt.Errorf("carry snapshot: no end of the directory")
	}
	cwd := strings.TrimSuffix(string(b[:k]), "\n")
	env, err := parseExports(string(b[k+1:]))
	if err != nil {
		return carryState{}, fmt.Errorf("carry snapshot: %w", err)
	}
	return carryState{cwd: cwd, env: env}, nil
}

// parseExports reads the output of `export -p` as dash (export NAME='v'),
// bash in POSIX mode (export NAME="v") or bash (declare -x NAME="v")
// print it, and returns the exported variables that have a value as
// NAME=value. Values keep every byte, newlines included.
func parseExports(s string) ([]string, error) {
	var env []string
	p := &shellWords{s: s}
	for {
		p.skipSpace(true)
		if p.eof() {
			return env, nil
		}
		w, err := p.word()
		if err != nil {
			return nil, err
		}
		switch w {
		case "export":
		case "declare", "typeset":
			p.skipSpace(false)
			if _, err := p.word(); err != nil { // the flags, -x
				return nil, err
			}
		default:
			return nil, fmt.Errorf("export -p: unexpected %q", w)
		}
		p.skipSpace(false)
		assign, err := p.word()
		if err != nil {
			return nil, err
		}
		name, _, hasValue := strings.Cut(assign, "=")
		if !validName(name) {
			return nil, fmt.Errorf("export -p: bad name %q", name)
		}
		if hasValue {
			env = append(env, assign)
		}
	}
}

func validName(n string) bool {
	if n == "" {
		return false
	}
	for i, c := range n {
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// shellWords splits shell words: '...', "..." (with \ before $ ` " \ and
// newline), $'...' (bash's C-style escapes) and backslash escapes outside
// quotes.
type shellWords struct {
	s string
	i int
}

func (p *shellWords) eof() bool { return p.i >= len(p.s) }

func (p *shellWords) skipSpace(newlines bool) {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || newlines && p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *shellWords) word() (string, error) {
	var b strings.Builder
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if p.i == start {
				return "", fmt.Errorf("export -p: empty word at %d", p.i)
			}
			return b.String(), nil
		case c == '\'':
			end := strings.IndexByte(p.s[p.i+1:], '\'')
			if end < 0 {
				return "", errors.New("export -p: unterminated '")
			}
			b.WriteString(p.s[p.i+1 : p.i+1+end])
			p.i += end + 2
		case c == '"':
			p.i++
			for {
				if p.i >= len(p.s) {
					return "", errors.New(`export -p: unterminated "`)
				}
				c := p.s[p.i]
				if c == '"' {
					p.i++
					break
				}
				if c == '\\' && p.i+1 < len(p.s) && strings.IndexByte("$`\"\\\n", p.s[p.i+1]) >= 0 {
					if p.s[p.i+1] != '\n' {
						b.WriteByte(p.s[p.i+1])
					}
					p.i += 2
					continue
				}
				b.WriteByte(c)
				p.i++
			}
		case c == '$' && p.i+1 < len(p.s) && p.s[p.i+1] == '\'':
			p.i += 2
			if err := p.ansiC(&b); err != nil {
				return "", err
			}
		case c == '\\' && p.i+1 < len(p.s):
			if p.s[p.i+1] != '\n' {
				b.WriteByte(p.s[p.i+1])
			}
			p.i += 2
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	if p.i == start {
		return "", errors.New("export -p: missing word")
	}
	return b.String(), nil
}

// ansiC reads the rest of a $'...' word.
func (p *shellWords) ansiC(b *strings.Builder) error {
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\'':
			return nil
		case c != '\\' || p.i >= len(p.s):
			b.WriteByte(c)
		default:
			e := p.s[p.i]
			p.i++
			switch e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'a':
				b.WriteByte(7)
			case 'b':
				b.WriteByte(8)
			case 'e', 'E':
				b.WriteByte(27)
			case 'f':
				b.WriteByte(12)
			case 'v':
				b.WriteByte(11)
			case '0', '1', '2', '3', '4', '5', '6', '7':
				v := int(e - '0')
				for k := 0; k < 2 && p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '7'; k++ {
					v = v*8 + int(p.s[p.i]-'0')
					p.i++
				}
				b.WriteByte(byte(v))
			case 'x':
				v, k := 0, 0
				for ; k < 2 && p.i < len(p.s) && isHex(p.s[p.i]); k++ {
					v = v*16 + hexVal(p.s[p.i])
					p.i++
				}
				if k == 0 {
					b.WriteString(`\x`)
				} else {
					b.WriteByte(byte(v))
				}
			default: // \\ \' \" \? and anything else: the character itself
				b.WriteByte(e)
			}
		}
	}
	return errors.New("export -p: unterminated $'")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return int(c-'A') + 10
}

// mergeEnv returns base with overrides applied: an override replaces the
// entry with the same name, in place, or is appended.
func mergeEnv(base, overrides []string) []string {
	out := append([]string(nil), base...)
	for _, kv := range overrides {
		name, _, _ := strings.Cut(kv, "=")
		replaced := false
		for i, e := range out {
			if n, _, _ := strings.Cut(e, "="); n == name {
				out[i] = kv
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, kv)
		}
	}
	return out
}

// envValue returns the value of name in env.
func envValue(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if n, v, _ := strings.Cut(env[i], "="); n == name {
			return v, true
		}
	}
	return "", false
}

// carryAfter computes the session's next state from the previous one, the
// command's own overrides (which apply to that command only) and the
// snapshot: what the command itself changed is kept, an override it left
// untouched is not.
func carryAfter(prev carryState, startDir string, overrides []string, snap carryState) carryState {
	next := carryState{cwd: prev.cwd, env: snap.env}
	if snap.cwd != startDir {
		next.cwd = snap.cwd
	}
	for _, kv := range overrides {
		name, val, _ := strings.Cut(kv, "=")
		if cur, ok := envValue(snap.env, name); !ok || cur != val {
			continue // the command changed or unset it: keep that
		}
		// Untouched: back to the session's value (or none).
		old, had := envValue(prev.env, name)
		var env []string
		for _, e := range next.env {
			if n, _, _ := strings.Cut(e, "="); n != name {
				env = append(env, e)
			} else if had {
				env = append(env, name+"="+old)
			}
		}
		next.env = env
	}
	return next
}
