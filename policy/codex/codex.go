// Package codex reads codex's execpolicy rules files (.rules, Starlark)
// into cordon policies.
//
// A rules file is a Starlark program that calls prefix_rule(pattern=...,
// decision=..., match=..., not_match=..., justification=...). It is run
// with a real Starlark interpreter (go.starlark.net), with prefix_rule as
// the only predeclared function, no load(), and a bound on execution
// steps, so a file can compute its rules (loops, variables) but do nothing
// else.
//
// Each prefix_rule becomes one cordon rule meaning what it meant to codex:
//
//   - pattern is an exact prefix of the argv: its tokens in order, a list
//     token being alternatives. forbidden becomes a deny rule and prompt an
//     ask rule, which match loosely (every spelling, so at least what codex
//     matched); allow becomes an allow rule ending in "...", which matches
//     its tokens strictly and accepts anything after them, as codex's
//     prefix does.
//   - match and not_match are checked when the file loads, against the
//     rule alone, as codex checks them: a match example the rule does not
//     match, or a not_match example an allow rule matches, is a load error.
//     A deny or ask rule matching a not_match example is a warning: cordon
//     refuses that spelling too.
//   - justification becomes the rule's message.
package codex

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cordon-sandbox/cordon/policy"
	"go.starlark.net/resolve"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// maxSteps bounds the Starlark computation of one file.
const maxSteps = 10_000_000

// maxRules bounds the rules one file may produce.
const maxRules = 100_000

// IsRulesFile reports whether name is a codex rules file, by its suffix.
func IsRulesFile(name string) bool {
	return strings.HasSuffix(name, ".rules")
}

// Parse runs the rules file data (named name in messages) and returns the
// cordon policy it means: default allow, cordon's built-in deny list on,
// one rule per prefix_rule, in order.
func Parse(name string, data []byte) (f *policy.File, err error) {
	defer func() {
		// The interpreter is third-party code fed untrusted input; a panic
		// in it is reported as a bad file, not a crash.
		if r := recover(); r != nil {
			f, err = nil, &policy.ParseError{File: name, Msg: fmt.Sprintf("unreadable rules file: %v", r)}
		}
	}()
	imp := &importer{name: name, file: &policy.File{Name: name, Format: policy.FormatCodex,
		Config: policy.Config{Default: policy.Allow, Builtins: true}}}
	thread := &starlark.Thread{Name: name}
	thread.SetMaxExecutionSteps(maxSteps)
	predeclared := starlark.StringDict{"prefix_rule": starlark.NewBuiltin("prefix_rule", imp.prefixRule)}
	if _, err := starlark.ExecFileOptions(&syntax.FileOptions{TopLevelControl: true}, thread, name, data, predeclared); err != nil {
		return nil, imp.starlarkErr(err)
	}
	return imp.file, nil
}

type importer struct {
	name string
	file *policy.File
}

// ruleError is returned by prefix_rule for a rule cordon cannot take; it
// carries the line of the call.
type ruleError struct {
	line int
	msg  string
}

func (e *ruleError) Error() string { return e.msg }

func (imp *importer) starlarkErr(err error) error {
	var re *ruleError
	if errors.As(err, &re) {
		return &policy.ParseError{File: imp.name, Line: re.line, Msg: re.msg}
	}
	var ee *starlark.EvalError
	if errors.As(err, &ee) {
		line := 0
		if len(ee.CallStack) > 0 {
			line = int(ee.CallStack.At(0).Pos.Line)
		}
		return &policy.ParseError{File: imp.name, Line: line, Msg: ee.Msg}
	}
	var se syntax.Error
	if errors.As(err, &se) {
		return &policy.ParseError{File: imp.name, Line: int(se.Pos.Line), Msg: se.Msg}
	}
	var rl resolve.ErrorList
	if errors.As(err, &rl) && len(rl) > 0 {
		msg := rl[0].Msg
		if strings.HasPrefix(msg, "undefined:") {
			msg += " (cordon provides prefix_rule only)"
		}
		return &policy.ParseError{File: imp.name, Line: int(rl[0].Pos.Line), Msg: msg}
	}
	return &policy.ParseError{File: imp.name, Msg: err.Error()}
}

func (imp *importer) prefixRule(thread *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	line := int(thread.CallFrame(1).Pos.Line)
	fail := func(format string, a ...any) error {
		return &ruleError{line: line, msg: "prefix_rule: " + fmt.Sprintf(format, a...)}
	}
	var (
		pattern        *starlark.List
		decision       = "allow"
		match, nomatch *starlark.List
		justification  string
	)
	if err := starlark.UnpackArgs("prefix_rule", args, kwargs,
		"pattern", &pattern, "decision?", &decision, "match?", &match, "not_match?", &nomatch,
		"justification?", &justification); err != nil {
		return nil, fail("%v", err)
	}
	if len(imp.file.Config.Rules) >= maxRules {
		return nil, fail("more than %d rules", maxRules)
	}
	tokens, err := patternTokens(pattern)
	if err != nil {
		return nil, fail("pattern: %v", err)
	}
	r := policy.Rule{Source: fmt.Sprintf("%s:%d", imp.name, line), Message: justification}
	switch decision {
	case "allow":
		r.Decision = policy.Allow
	case "prompt":
		r.Decision = policy.Ask
	case "forbidden":
		r.Decision = policy.Deny
	default:
		return nil, fail("decision %q: want allow, prompt or forbidden", decision)
	}
	r.Pattern = rulePattern(tokens, r.Decision == policy.Allow)
	one, err := policy.Compile(policy.Config{Default: other(r.Decision), Rules: []policy.Rule{r}})
	if err != nil {
		return nil, fail("pattern %s: %v", pattern.String(), err)
	}
	for _, ex := range []struct {
		list *starlark.List
		want bool
	}{{match, true}, {nomatch, false}} {
		if ex.list == nil {
			continue
		}
		for i := 0; i < ex.list.Len(); i++ {
			argv, err := exampleArgv(ex.list.Index(i))
			if err != nil {
				return nil, fail("example %s: %v", ex.list.Index(i).String(), err)
			}
			res := one.Decide(&policy.Exec{Argv: argv, Path: argv[0], Resolved: argv[0]})
			got := res.Rule != nil
			switch {
			case got == ex.want:
			case ex.want:
				return nil, fail("match example %s does not match %s (cordon reads the pattern as %q)",
					ex.list.Index(i).String(), pattern.String(), r.Pattern)
			case r.Decision == policy.Allow:
				return nil, fail("not_match example %s matches %s (cordon reads the pattern as %q)",
					ex.list.Index(i).String(), pattern.String(), r.Pattern)
			default:
				imp.file.Warnings = append(imp.file.Warnings, fmt.Sprintf(
					"%s:%d: not_match example %s is %s by cordon too: its %s rules match every spelling of %q",
					imp.name, line, ex.list.Index(i).String(), r.Decision, r.Decision, r.Pattern))
			}
		}
	}
	imp.file.Config.Rules = append(imp.file.Config.Rules, r)
	return starlark.None, nil
}

// other returns a decision different from d, as a default that tells a
// rule's match from no match.
func other(d policy.Decision) policy.Decision {
	if d == policy.Allow {
		return policy.Deny
	}
	return policy.Allow
}

// patternTokens reads a pattern: a non-empty list whose elements are
// strings or non-empty lists of strings (alternatives).
func patternTokens(l *starlark.List) ([][]string, error) {
	if l.Len() == 0 {
		return nil, errors.New("empty")
	}
	out := make([][]string, 0, l.Len())
	for i := 0; i < l.Len(); i++ {
		switch v := l.Index(i).(type) {
		case starlark.String:
			out = append(out, []string{string(v)})
		case *starlark.List:
			if v.Len() == 0 {
				return nil, fmt.Errorf("element %d: empty list of alternatives", i)
			}
			var alts []string
			for j := 0; j < v.Len(); j++ {
				s, ok := v.Index(j).(starlark.String)
				if !ok {
					return nil, fmt.Errorf("element %d: alternatives must be strings, not %s", i, v.Index(j).Type())
				}
				alts = append(alts, string(s))
			}
			out = append(out, alts)
		default:
			return nil, fmt.Errorf("element %d: want a string or a list of strings, not %s", i, v.Type())
		}
	}
	return out, nil
}

// rulePattern renders codex tokens as a cordon pattern, every token
// literal; allow rules end in "..." (a prefix accepts what follows).
func rulePattern(tokens [][]string, prefix bool) string {
	words := make([]string, 0, len(tokens)+1)
	for _, alts := range tokens {
		if len(alts) == 1 {
			words = append(words, literal(alts[0]))
			continue
		}
		q := make([]string, len(alts))
		for i, a := range alts {
			q[i] = literal(a)
		}
		words = append(words, "{"+strings.Join(q, ",")+"}")
	}
	if prefix {
		words = append(words, "...")
	}
	return strings.Join(words, " ")
}

// literal quotes s so that a cordon pattern reads it as the exact word:
// every character that is special to the pattern language is escaped, and
// so is a word the language gives a meaning (..., $, [options], @name).
func literal(s string) string {
	if s == "" {
		return "''"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte(" \t\n\r'\"\\*?{},", c) >= 0 || (i == 0 && (c == '@' || c == '$' || c == '[' || c == '.')) {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// exampleArgv reads a match or not_match example: a list of strings, or a
// string split the way a shell splits words.
func exampleArgv(v starlark.Value) ([]string, error) {
	switch v := v.(type) {
	case starlark.String:
		argv, err := shellSplit(string(v))
		if err != nil {
			return nil, err
		}
		if len(argv) == 0 {
			return nil, errors.New("empty command")
		}
		return argv, nil
	case *starlark.List:
		if v.Len() == 0 {
			return nil, errors.New("empty command")
		}
		argv := make([]string, v.Len())
		for i := range argv {
			s, ok := v.Index(i).(starlark.String)
			if !ok {
				return nil, fmt.Errorf("word %d is %s, not a string", i, v.Index(i).Type())
			}
			argv[i] = string(s)
		}
		return argv, nil
	}
	return nil, fmt.Errorf("want a string or a list of strings, not %s", v.Type())
}

// shellSplit splits s into words as a POSIX shell would, without
// expansions: blanks separate, '...' and "..." quote, \ escapes.
func shellSplit(s string) ([]string, error) {
	var (
		out []string
		cur strings.Builder
		in  bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		case c == '\\':
			if i+1 == len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			cur.WriteByte(s[i])
			in = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == '"':
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if !closed {
				return nil, errors.New(`unterminated " quote`)
			}
			in = true
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}
