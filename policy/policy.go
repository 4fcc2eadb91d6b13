package policy

import (
	"errors"
	"fmt"
	"path"
	"sort"
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
	// program; the remaining words are matched against the arguments. See
	// the package documentation for the syntax.
	Pattern string
	// Message, when set, is shown to the user with the rule.
	Message string
	// Source says where the rule came from: "--deny", "builtin",
	// "cordon.yaml:7". It is the rule's id in audit records.
	Source string
	// Override marks an allow rule that wins over deny and ask rules
	// instead of losing to them. Only fence configs produce such rules
	// (fence's command.allow "overrides a matching deny rule"); cordon's own
	// format always uses strictest-wins.
	Override bool
	// Final marks a deny rule that wins over Override rules too. Only
	// fence's ssh section produces such rules: fence checks its denied
	// hosts and commands before its allowed ones.
	Final bool
}

// String renders the rule as it appears in a denial line: deny "git push".
func (r *Rule) String() string {
	return fmt.Sprintf("%s %q", r.Decision, r.Pattern)
}

// Example is an argv with the decision the policy must reach for it. A
// policy whose examples do not hold fails to compile.
type Example struct {
	Decision Decision
	// Argv is the example command line; Argv[0] names the program.
	Argv []string
	// Source says where the example was written, e.g. "cordon.yaml:12".
	Source string
}

// Config is an uncompiled policy: the rules in order, what happens when
// none of them matches, and examples that must hold.
type Config struct {
	// Default is the decision when no rule matches.
	Default Decision
	// Builtins, when true, adds the built-in deny list of destructive
	// system commands (see Builtin) ahead of Rules.
	Builtins bool
	Rules    []Rule
	// Examples are checked by Compile.
	Examples []Example
	// DenyWritable refuses every executable that lies on a mount the
	// sandbox can write, or in memory (a memfd): files the workload could
	// have written or downloaded itself (policy key deny_writable_exec).
	DenyWritable bool
	// Env is the environment scrub (policy key env). With Builtins, the
	// built-in credential names (BuiltinEnv) are denied too.
	Env EnvConfig
	// Tools gives option tables for programs, by program name (policy key
	// programs): how rules for them tell options, values and positional
	// words apart. A table for a program cordon knows (git, ssh, ...)
	// adds to the built-in one.
	Tools map[string]ToolOptions
	// Network, when set, filters the sandbox's network (--net filter):
	// only connections its rules allow leave, through cordon's proxy.
	Network *Network
	// Files says what the sandbox may not read or change, and its extra
	// binds (the policy file's files section). With Builtins, the built-in
	// deny_read and deny_write rules come first.
	Files FilePolicy
	// Net is the network mode the policy file asks for ("host", "none" or
	// "filter"); empty leaves it to the caller (--net).
	Net string
}

// ToolOptions is a program's option table as a policy gives it.
type ToolOptions struct {
	// Values lists options that take the next argument as their value,
	// wherever they appear: -g, --glob (rg -g '*.go').
	Values []string `json:"value_options,omitempty" yaml:"value_options,omitempty"`
	// Global lists options that take a value and come before the
	// subcommand (git -C DIR); they are skipped when finding the
	// subcommand. Giving any makes the program one with subcommands.
	Global []string `json:"global_options,omitempty" yaml:"global_options,omitempty"`
	// Subcommands says the first positional word is a subcommand, which a
	// rule's first word must match exactly there.
	Subcommands bool `json:"subcommands,omitempty" yaml:"subcommands,omitempty"`
}

// WritableRule is the rule a Decide result names when Config.DenyWritable
// refused an exec.
var WritableRule = Rule{
	Decision: Deny,
	Pattern:  "deny_writable_exec",
	Message:  "the program is on a writable mount or in memory, where the sandbox could have written it",
	Source:   "deny_writable_exec",
}

// PlantedRule is the rule a Decide result names when the policy's default
// denies (or asks about) a program an allow rule named, but whose file the
// sandbox could have put on its PATH itself (see Vouching).
var PlantedRule = Rule{
	Decision: Deny,
	Pattern:  "allow by name",
	Message: "the program is in a PATH directory the sandbox can write, where it could have put anything under " +
		"an allowed name, so an allow rule naming it does not apply: allow it by its absolute path if you trust what is there",
	Source: "builtin",
}

// LoaderRule is the rule a Decide result names when the program a dynamic
// loader is asked to run cannot be identified (see Resolver): fail closed.
var LoaderRule = Rule{
	Decision: Deny,
	Pattern:  "ld.so PROGRAM",
	Message: "the program a dynamic loader is asked to run must be identifiable (a path with a slash), lie on " +
		"read-only mounts and have no other name (the loader opens and maps it after the check): run the program itself",
	Source: "builtin",
}

// Exec describes one exec being decided. The supervisor fills it in from the
// caller's memory and /proc; Decide never touches the file system.
type Exec struct {
	// Argv is the argument vector passed to execve. Argv[0] is chosen by the
	// caller and is never trusted to name the program.
	Argv []string
	// Path is the path argument as the caller passed it.
	Path string
	// Resolved is the absolute, clean path of the executable in the
	// sandbox's view, or empty when it could not be resolved.
	Resolved string
	// File identifies the executable's file; it is meaningful only when
	// Known is true. It lets Decide recognise a program under another name
	// (see Files).
	File FileID
	// Known reports whether File is filled in.
	Known bool
	// Writable says the executable lies on a mount the sandbox can write,
	// or in memory (a memfd). The supervisor fills it in.
	Writable bool
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

// RuleText describes the deciding rule for humans: deny "git push",
// deny "git push": <message>, or "default deny" when no rule matched.
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

// ExampleError reports an example whose decision differs from the one the
// policy reaches. Compile returns one per failing example, joined.
type ExampleError struct {
	Example Example
	Got     Result
	// FirstEdition, when set, is the rule that decided the example as
	// wanted under the first edition's prefix meaning of allow rules: the
	// example failed because allow rules now match strictly.
	FirstEdition *Rule
}

func (e *ExampleError) Error() string {
	src := e.Example.Source
	if src == "" {
		src = "example"
	}
	msg := fmt.Sprintf("%s: example %s: got %s (%s), want %s",
		src, quoteArgv(e.Example.Argv), e.Got.Decision, e.Got.RuleText(), e.Example.Decision)
	if h := e.Hint(); h != "" {
		msg += " (" + h + ")"
	}
	return msg
}

// Hint explains an example that failed because allow rules now match
// strictly, or returns "".
func (e *ExampleError) Hint() string {
	r := e.FirstEdition
	if r == nil {
		return ""
	}
	return fmt.Sprintf("allow rules now match strictly: %s (%s) no longer accepts options or words it does not name; "+
		"write %q to accept any after its words, or name the options (or [options]) it should take", r.String(), sourceOf(r), r.Pattern+" ...")
}

func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = quoteWord(a)
	}
	return strings.Join(q, " ")
}

// Policy is a compiled, immutable policy, safe for concurrent use.
type Policy struct {
	def          Decision
	denyWritable bool
	env          EnvConfig
	filePolicy   FilePolicy
	netMode      string
	rules        []Rule
	// matchers holds one compiled matcher per rule and per distinct
	// option table among the rule's program alternatives.
	matchers []matcher
	// byName indexes matchers by literal program name.
	byName map[string]*progRules
	// globs holds programs named by a glob on the executable's name.
	globs []progGlob
	// paths holds programs named by an absolute path or path glob.
	paths []progGlob
	// ident lists what Files.Lookup is asked about, with the matchers to
	// run when the executable is the same file.
	ident []identEntry
	// files, when set by WithFiles, gives access to file identity.
	files Files
	// toolDefs are the policy's own option tables, tools them compiled.
	toolDefs map[string]ToolOptions
	tools    toolSet
	// net is the compiled network section; nil when the policy has none.
	net *NetPolicy
}

// progRules are the matchers of one program name, indexed a second time by
// the subcommand they require, so that Decide runs only the rules for the
// exec's program and subcommand.
type progRules struct {
	tool  *tool
	all   []int32
	bySub map[string][]int32
	other []int32 // matchers that do not require one literal subcommand
}

func (pr *progRules) add(m int32, ms []matcher) {
	if n := len(pr.all); n > 0 && pr.all[n-1] == m {
		return
	}
	pr.all = append(pr.all, m)
	subs := ms[m].subKey()
	if subs == nil {
		pr.other = append(pr.other, m)
		return
	}
	if pr.bySub == nil {
		pr.bySub = map[string][]int32{}
	}
	for _, s := range subs {
		pr.bySub[s] = appendOnce(pr.bySub[s], m)
	}
}

type progGlob struct {
	g        glob
	matchers []int32
	tool     *tool
}

type identEntry struct {
	name     string // as passed to Files.Lookup
	matchers []int32
	max      rank
}

// Compile checks and compiles cfg: built-in rules first (when enabled),
// then cfg.Rules in order. It then decides every example and fails if one
// does not hold, returning an *ExampleError per failing example.
func Compile(cfg Config) (*Policy, error) {
	p, err := compile(cfg, false)
	if err != nil {
		return nil, err
	}
	var errs []error
	var first *Policy
	for _, ex := range cfg.Examples {
		if len(ex.Argv) == 0 {
			errs = append(errs, fmt.Errorf("%s: example has no argv", ex.Source))
			continue
		}
		got := p.Decide(&Exec{Argv: ex.Argv, Path: ex.Argv[0], Resolved: ex.Argv[0]})
		if got.Decision != ex.Decision {
			ee := &ExampleError{Example: ex, Got: got}
			if first == nil {
				first = p.FirstEdition()
			}
			ee.FirstEdition = first.Explain(ex)
			errs = append(errs, ee)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// FirstEdition returns p compiled with the first edition's meaning of allow
// rules, under which an allow rule was a prefix: options and trailing words
// it did not name still matched. It exists to explain examples whose
// outcome changed (see ExampleError.FirstEdition); it is never used to
// decide.
func (p *Policy) FirstEdition() *Policy {
	q, err := compile(Config{Default: p.def, DenyWritable: p.denyWritable, Rules: p.rules, Tools: p.toolDefs}, true)
	if err != nil {
		return p
	}
	q.files = p.files
	return q
}

// Explain returns the rule that decides ex as ex wants under p, or nil if p
// decides it otherwise (or by its default).
func (p *Policy) Explain(ex Example) *Rule {
	got := p.Decide(&Exec{Argv: ex.Argv, Path: ex.Argv[0], Resolved: ex.Argv[0]})
	if got.Decision != ex.Decision || got.Rule == nil {
		return nil
	}
	return got.Rule
}

func compile(cfg Config, firstEdition bool) (*Policy, error) {
	p := &Policy{def: cfg.Default, denyWritable: cfg.DenyWritable, netMode: cfg.Net, byName: map[string]*progRules{}, toolDefs: cfg.Tools}
	if cfg.Default > Deny {
		return nil, fmt.Errorf("invalid default %s", cfg.Default)
	}
	switch cfg.Net {
	case "", "host", "none", "filter":
	default:
		return nil, fmt.Errorf("invalid network mode %q (want host, none or filter)", cfg.Net)
	}
	if err := checkFiles(&cfg.Files); err != nil {
		return nil, err
	}
	p.filePolicy = cfg.Files
	p.filePolicy.DenyRead = append([]FileRule(nil), cfg.Files.DenyRead...)
	p.filePolicy.DenyWrite = append([]FileRule(nil), cfg.Files.DenyWrite...)
	if cfg.Builtins {
		r, w := BuiltinFiles()
		p.filePolicy.DenyRead = append(r, p.filePolicy.DenyRead...)
		p.filePolicy.DenyWrite = append(w, p.filePolicy.DenyWrite...)
	}
	p.filePolicy.Examples = nil
	ts, err := newToolSet(cfg.Tools)
	if err != nil {
		return nil, err
	}
	p.tools = ts
	if p.env, err = compileEnv(cfg.Env, cfg.Builtins); err != nil {
		return nil, err
	}
	if cfg.Builtins {
		p.rules = append(p.rules, Builtin()...)
	}
	p.rules = append(p.rules, cfg.Rules...)
	type nameRef struct {
		name string
		m    int32
	}
	var names []nameRef
	globIdx := map[string]int{}
	pathIdx := map[string]int{}
	for i := range p.rules {
		r := &p.rules[i]
		if r.Decision > Deny {
			return nil, fmt.Errorf("%s: invalid decision %s", sourceOf(r), r.Decision)
		}
		progs, ms, err := compileRule(r, int32(i), p.tools)
		if err != nil {
			return nil, fmt.Errorf("%s: %s %q: %w", sourceOf(r), r.Decision, r.Pattern, err)
		}
		for _, pr := range progs {
			m := int32(len(p.matchers)) + int32(pr.matcher)
			switch {
			case pr.path:
				j, ok := pathIdx[pr.g.String()]
				if !ok {
					j = len(p.paths)
					pathIdx[pr.g.String()] = j
					p.paths = append(p.paths, progGlob{g: pr.g, tool: ms[pr.matcher].tool})
				}
				p.paths[j].matchers = appendOnce(p.paths[j].matchers, m)
			case !pr.g.isLit():
				j, ok := globIdx[pr.g.String()]
				if !ok {
					j = len(p.globs)
					globIdx[pr.g.String()] = j
					p.globs = append(p.globs, progGlob{g: pr.g, tool: ms[pr.matcher].tool})
				}
				p.globs[j].matchers = appendOnce(p.globs[j].matchers, m)
			default:
				names = append(names, nameRef{pr.g.lit, m})
				for _, n := range programAliases[pr.g.lit] {
					names = append(names, nameRef{n, m})
				}
			}
		}
		p.matchers = append(p.matchers, ms...)
	}
	for _, nr := range names {
		pr := p.byName[nr.name]
		if pr == nil {
			pr = &progRules{tool: p.tools.get(nr.name)}
			p.byName[nr.name] = pr
		}
		pr.add(nr.m, p.matchers)
	}
	if firstEdition {
		for i := range p.matchers {
			if m := &p.matchers[i]; !m.liberal && !m.end {
				m.strict = false
			}
		}
	}
	p.buildIdent()
	if cfg.Network != nil {
		var err error
		if p.net, err = compileNetwork(cfg.Network); err != nil {
			return nil, err
		}
	}
	fe := p.filePolicy
	fe.Examples = cfg.Files.Examples
	if err := checkFileExamples(&fe); err != nil {
		return nil, err
	}
	return p, nil
}

func sourceOf(r *Rule) string {
	if r.Source == "" {
		return "rule"
	}
	return r.Source
}

func appendOnce(s []int32, v int32) []int32 {
	if len(s) > 0 && s[len(s)-1] == v {
		return s
	}
	return append(s, v)
}

// buildIdent lists the names and paths that identity matching asks Files
// about. A bare "*" program is left out: it already matches every name.
func (p *Policy) buildIdent() {
	add := func(name string, ms []int32) {
		e := identEntry{name: name, matchers: ms, max: rankNone}
		for _, m := range ms {
			if r := p.matchers[m].rank; r > e.max {
				e.max = r
			}
		}
		p.ident = append(p.ident, e)
	}
	names := make([]string, 0, len(p.byName))
	for n := range p.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		add(n, p.byName[n].all)
	}
	for _, g := range p.globs {
		if strings.Trim(g.g.String(), "*") != "" {
			add(g.g.String(), g.matchers)
		}
	}
	for _, g := range p.paths {
		add(g.g.String(), g.matchers)
	}
}

// WithFiles returns a copy of p that recognises programs by file identity
// through f (see Files). The copy shares p's compiled rules.
func (p *Policy) WithFiles(f Files) *Policy {
	q := *p
	q.files = f
	return &q
}

// Network returns the compiled network section, or nil when the policy
// says nothing about the network.
func (p *Policy) Network() *NetPolicy { return p.net }

// DenyWritable reports whether executables the sandbox can write are refused.
func (p *Policy) DenyWritable() bool { return p.denyWritable }

// FilePolicy returns the files part in force: the built-in rules (when
// enabled) ahead of the configured ones, the binds and presets. Examples are
// left out (Compile checked them).
func (p *Policy) FilePolicy() FilePolicy {
	f := p.filePolicy
	f.DenyRead = append([]FileRule(nil), f.DenyRead...)
	f.DenyWrite = append([]FileRule(nil), f.DenyWrite...)
	return f
}

// Net returns the network mode the policy asks for ("host", "none"), or ""
// when it leaves it to the caller.
func (p *Policy) Net() string { return p.netMode }

// Default returns the decision applied when no rule matches.
func (p *Policy) Default() Decision { return p.def }

// Rules returns the policy's rules in evaluation order, built-ins first.
func (p *Policy) Rules() []Rule {
	out := make([]Rule, len(p.rules))
	copy(out, p.rules)
	return out
}

// Programs returns, sorted, every name the policy may pass to
// Files.Lookup: the program names its rules refer to (bare names, possibly
// with glob metacharacters), the absolute paths and path globs its rules
// refer to, the dynamic loader locations (so a renamed loader is still
// unwrapped) and the multi-call programs (busybox, toybox, systemctl). The supervisor
// can resolve these once up front and keep the results cached.
func (p *Policy) Programs() []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, e := range p.ident {
		add(e.name)
	}
	for _, s := range loaderPaths {
		add(s)
	}
	for _, m := range multiCall {
		add(m.name)
	}
	for _, n := range pythonNames {
		add(n)
	}
	if p.byName["ssh"] != nil {
		for _, c := range sshCarrierList {
			add(c)
		}
	}
	sort.Strings(out)
	return out
}

// Decide evaluates e. The strictest matching rule wins (deny over ask over
// allow; a fence override allow over all three); among matching rules of
// equal strictness the earliest in policy order is reported. Rules reached
// only through file identity (see Files) are consulted only when they could
// make the decision stricter. When no rule matches, the policy's default
// applies. Decide does not allocate in the common case (an argv of up to 32
// words that needs no rewriting) and is safe for concurrent use.
func (p *Policy) Decide(e *Exec) Result {
	if p.denyWritable && e.Writable {
		return Result{Decision: Deny, Rule: &WritableRule}
	}
	d := decider{p: p, top: e, best: rankNone}
	d.exec(e, 0)
	if d.forced != nil {
		return Result{Decision: Deny, Rule: d.forced}
	}
	if d.best == rankNone {
		if d.planted && p.def != Allow {
			return Result{Decision: p.def, Rule: &PlantedRule}
		}
		return Result{Decision: p.def}
	}
	r := &p.rules[d.rule]
	return Result{Decision: r.Decision, Rule: r}
}

// baseName is path.Base without its special cases for "" and "/", which
// name no program.
func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// cleanAbs cleans p when it is absolute; path.Clean does not allocate when
// p is already clean.
func cleanAbs(p string) string {
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	return p
}
