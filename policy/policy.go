package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Decision is the outcome of evaluating an exec against a policy. Values are
// ordered by strictness: when several rules match, the largest one wins.
type Decision uint8

const (
	// Allow lets the exec proceed.
	Allow Decision = iota
	// Ask defers the exec to whoever answers questions (see the --ask flag).
	Ask
	// Deny refuses the exec; the caller sees EPERM.
	Deny
)

// String returns the decision's name as written in rules: allow, ask or deny.
func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("decision(%d)", uint8(d))
}

// ParseDecision parses "allow", "ask" or "deny".
func ParseDecision(s string) (Decision, error) {
	switch s {
	case "allow":
		return Allow, nil
	case "ask":
		return Ask, nil
	case "deny":
		return Deny, nil
	}
	return 0, fmt.Errorf("unknown decision %q (want allow, ask or deny)", s)
}

// Rule is one rule as written by a user or shipped as a built-in.
type Rule struct {
	Decision Decision
	// Pattern is the rule's text, e.g. "git push". Its first word names a
	// program; the remaining words are matched against the arguments.
	Pattern string
	// Message, when set, is shown to the user instead of the bare rule.
	Message string
	// Source says where the rule came from: "--deny", "builtin",
	// "cordon.yaml:7". It is reported in audit records.
	Source string
}

// String renders the rule as it appears in a denial line: deny "git push".
func (r *Rule) String() string {
	return fmt.Sprintf("%s %q", r.Decision, r.Pattern)
}

// Config is an uncompiled policy: the rules in order and what happens when
// none of them matches.
type Config struct {
	// Default is the decision when no rule matches.
	Default Decision
	// Builtins, when true, adds the built-in deny list of destructive
	// system commands (see Builtin).
	Builtins bool
	Rules    []Rule
}

// Exec describes one exec being decided. The supervisor fills it in from the
// caller's memory and /proc; Decide never touches the file system.
type Exec struct {
	// Argv is the argument vector passed to execve. Argv[0] is chosen by the
	// caller and is never trusted to name the program.
	Argv []string
	// Path is the path argument as the caller passed it.
	Path string
	// Resolved is the absolute path of the executable in the sandbox's view,
	// or empty when it could not be resolved.
	Resolved string
}

// Program returns the path the exec runs: Resolved when known, else Path.
func (e *Exec) Program() string {
	if e.Resolved != "" {
		return e.Resolved
	}
	return e.Path
}

// Result is a decision and the rule that produced it.
type Result struct {
	Decision Decision
	// Rule is the deciding rule, or nil when the policy's default applied.
	Rule *Rule
}

// RuleText describes the deciding rule for humans: deny "git push", or
// "default deny" when no rule matched.
func (r Result) RuleText() string {
	if r.Rule == nil {
		return "default " + r.Decision.String()
	}
	if r.Rule.Message != "" {
		return r.Rule.String() + ": " + r.Rule.Message
	}
	return r.Rule.String()
}

// ErrEmptyRule is returned by Compile for a rule with no words.
var ErrEmptyRule = errors.New("empty rule")

// Policy is a compiled, immutable policy.
type Policy struct {
	def   Decision
	rules []compiled
}

type compiled struct {
	rule    *Rule
	program string
	args    []string
}

// Compile checks and compiles cfg.
func Compile(cfg Config) (*Policy, error) {
	p := &Policy{def: cfg.Default}
	var all []Rule
	if cfg.Builtins {
		all = append(all, Builtin()...)
	}
	all = append(all, cfg.Rules...)
	for i := range all {
		r := all[i]
		words := strings.Fields(r.Pattern)
		if len(words) == 0 {
			return nil, fmt.Errorf("rule %d from %s: %w", i+1, r.Source, ErrEmptyRule)
		}
		p.rules = append(p.rules, compiled{rule: &r, program: words[0], args: words[1:]})
	}
	return p, nil
}

// Default returns the decision applied when no rule matches.
func (p *Policy) Default() Decision { return p.def }

// Rules returns the policy's rules in evaluation order, built-ins first.
func (p *Policy) Rules() []Rule {
	out := make([]Rule, len(p.rules))
	for i, c := range p.rules {
		out[i] = *c.rule
	}
	return out
}

// Decide evaluates e. The strictest matching rule wins; among rules of equal
// strictness the first one is reported.
func (p *Policy) Decide(e *Exec) Result {
	best := Result{Decision: p.def}
	matched := false
	name := path.Base(e.Program())
	for i := range p.rules {
		c := &p.rules[i]
		if c.program != name || !hasPrefix(e.Argv, c.args) {
			continue
		}
		if !matched || c.rule.Decision > best.Decision {
			best = Result{Decision: c.rule.Decision, Rule: c.rule}
			matched = true
		}
	}
	return best
}

func hasPrefix(argv, args []string) bool {
	if len(argv) < len(args)+1 {
		return false
	}
	for i, a := range args {
		if argv[i+1] != a {
			return false
		}
	}
	return true
}
