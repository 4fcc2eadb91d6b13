package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Format names a policy file format.
type Format string

const (
	// FormatCordon is cordon's own format (YAML or JSON).
	FormatCordon Format = "cordon"
	// FormatFence is a fence config (JSON or JSONC) of which the command
	// section is used.
	FormatFence Format = "fence"
	// FormatCodex is a codex execpolicy rules file (Starlark), read by
	// package policy/codex.
	FormatCodex Format = "codex"
)

// File is a parsed policy file.
type File struct {
	// Name is the name the file was parsed under, used in messages.
	Name   string
	Format Format
	Config Config
	// Warnings lists parts of the file that were understood but have no
	// effect in cordon (a fence config's filesystem section, say).
	Warnings []string
	// Notices say what a file means that a reader might not expect (a
	// fence config without a network section has no network).
	Notices []string
}

// ParseError is a problem in a policy file, at a line (0 when unknown).
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Parse parses a policy file: cordon's format, in YAML or JSON, or a fence
// config, recognised by its shape (a top-level "command" object, or only
// keys fence knows). name is used in messages and rule sources
// ("cordon.yaml:7"). Unknown keys are errors. Rule patterns are checked;
// examples are checked later, by Compile.
//
// The cordon format:
//
//	version: 1            # optional; only 1 exists
//	default: allow        # allow (default), deny or ask: the decision when no rule matches
//	defaults: true        # include the built-in deny list (default true)
//	rules:
//	  - deny: git push    # one of deny, allow, ask: a pattern, or a list of words
//	    message: open a pull request instead
//	examples:
//	  - deny: [git, -C, ., push]   # an argv, or a string split into words
//	env:
//	  deny: ["*_TOKEN", "AWS_*"]   # variable names removed from the workload's environment
//	  pass: [ANTHROPIC_API_KEY]    # names kept even when a deny pattern or a default matches
//	network:              # present: the sandbox reaches only what these allow (--net filter)
//	  rules:
//	    - allow: registry.npmjs.org   # HOST[:PORT]; *.example.com; *; no port = 80 and 443
//	      for: npm                    # optional: only npm processes and their descendants
//	  examples:
//	    - deny: example.com:443
//	net: none             # optional: host, none or filter
//	files:                # optional: see FilePolicy
//	  deny_read: ["~/.ssh/id_*", "**/.env*"]
//	  deny_write: [generated]
//	  allow_write: [~/.cache/tool]
//	  read_only: [/opt/sdk]
//	  writable: [go-cache]
//	  examples:
//	    - deny_read: ~/.ssh/id_ed25519
//	programs:             # option tables (see Config.Tools)
//	  rg:
//	    value_options: [-g, --glob]
//
// A fence config's command and ssh sections are read (see fenceSSH); a
// codex .rules file is read by package policy/codex, not here.
// A fence config's filesystem.denyRead, allowWrite and denyWrite are
// imported into the files part.
func Parse(name string, data []byte) (f *File, err error) {
	defer func() {
		// The YAML library is third-party code fed untrusted input; a
		// panic in it is reported as a bad file, not a crash.
		if r := recover(); r != nil {
			f, err = nil, &ParseError{File: name, Msg: fmt.Sprintf("unreadable policy: %v", r)}
		}
	}()
	p := &parser{file: &File{Name: name, Format: FormatCordon}}
	var root *yaml.Node
	if isJSONName(name) {
		root, err = p.document(stripJSONC(data))
	} else if root, err = p.document(data); err != nil && startsObject(data) {
		// JSON with comments or trailing commas (fence's JSONC) under a
		// name that does not say so.
		if r, err2 := p.document(stripJSONC(data)); err2 == nil {
			root, err = r, nil
		}
	}
	if err != nil {
		return nil, err
	}
	cfg := Config{Default: Allow, Builtins: true}
	p.file.Config = cfg
	if root == nil {
		return p.file, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, p.errf(root, "the top level must be a mapping (want version, default, defaults, rules, examples)")
	}
	keys, err := p.mapping(root)
	if err != nil {
		return nil, err
	}
	if isFence(keys) {
		p.file.Format = FormatFence
		err = p.fence(keys)
	} else {
		err = p.cordon(keys)
	}
	if err != nil {
		return nil, err
	}
	return p.file, nil
}

type parser struct {
	file *File
}

type entry struct {
	key   string
	kline int
	val   *yaml.Node
}

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

func (p *parser) document(src []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, p.yamlErr(src, err)
	}
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case err == nil:
		return nil, &ParseError{File: p.file.Name, Line: more.Line, Msg: "more than one YAML document"}
	case !errors.Is(err, io.EOF):
		return nil, p.yamlErr(src, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := deref(doc.Content[0])
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil
	}
	return root, nil
}

// yamlErr turns the YAML library's error into a ParseError at the line the
// mistake is on. The library names the line where the enclosing block or
// flow began (line 1 for a bad indent on line 3), so the line is found
// here: the first one after the longest run of whole lines that parses.
func (p *parser) yamlErr(src []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine().FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	if len(lines) <= maxSearchLines {
		for k := len(lines) - 1; k >= 0; k-- {
			if yamlParses(bytes.Join(lines[:k], nil)) {
				// No prefix parses inside an unclosed flow ({...} or
				// [...] across lines): the library's line is as good.
				line = max(line, k+1)
				break
			}
		}
	}
	if line > 0 && line <= len(lines) {
		if text := strings.TrimRight(string(lines[line-1]), "\r\n"); strings.TrimSpace(text) != "" {
			msg = fmt.Sprintf("%s: %q", msg, text)
		}
	}
	return &ParseError{File: p.file.Name, Line: line, Msg: msg}
}

// maxSearchLines bounds yamlErr's search (one parse per line).
const maxSearchLines = 2000

// yamlParses reports whether src is well-formed YAML (any number of
// documents).
func yamlParses(src []byte) bool {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return errors.Is(err, io.EOF)
		}
	}
}

func (p *parser) errf(n *yaml.Node, format string, a ...any) error {
	return &ParseError{File: p.file.Name, Line: n.Line, Msg: fmt.Sprintf(format, a...)}
}

func (p *parser) source(n *yaml.Node) string {
	return fmt.Sprintf("%s:%d", p.file.Name, n.Line)
}

// deref follows YAML aliases (*x) to the anchored node.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// mapping returns the entries of mapping n, rejecting duplicate and
// non-string keys.
func (p *parser) mapping(n *yaml.Node) ([]entry, error) {
	var out []entry
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			return nil, p.errf(k, "keys must be plain strings")
		}
		if seen[k.Value] {
			return nil, p.errf(k, "duplicate key %q", k.Value)
		}
		seen[k.Value] = true
		out = append(out, entry{key: k.Value, kline: k.Line, val: v})
	}
	return out, nil
}

func (p *parser) str(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", p.errf(n, "%s: want a string", what)
	}
	return n.Value, nil
}

func (p *parser) boolean(n *yaml.Node, what string) (bool, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		var b bool
		if err := n.Decode(&b); err == nil {
			return b, nil
		}
	}
	return false, p.errf(n, "%s: want true or false", what)
}

// words reads a pattern or argv given either as a string or as a list of
// strings (one word each).
func (p *parser) words(n *yaml.Node, what string) ([]string, bool, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			break
		}
		return []string{n.Value}, false, nil
	case yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			c = deref(c)
			if c.Kind != yaml.ScalarNode || c.Tag == "!!null" {
				return nil, false, p.errf(c, "%s: want a list of strings", what)
			}
			out = append(out, c.Value)
		}
		return out, true, nil
	}
	return nil, false, p.errf(n, "%s: want a string or a list of strings", what)
}

var cordonKeys = []string{"version", "default", "defaults", "deny_writable_exec", "net", "files", "env", "rules", "examples", "programs"}

// fenceKeys are the top-level keys of a fence config.
var fenceKeys = map[string]bool{
	"$schema": true, "allowPty": true, "command": true, "devices": true, "extends": true,
	"filesystem": true, "forceNewSession": true, "macos": true, "network": true, "ssh": true,
}

// isFence reports whether a top-level mapping is a fence config: it has no
// cordon key, and has a command section or only keys fence knows.
func isFence(keys []entry) bool {
	if len(keys) == 0 {
		return false
	}
	command, all, others := false, true, false
	for _, e := range keys {
		for _, k := range cordonKeys {
			if e.key == k {
				return false
			}
		}
		if e.key == "network" {
			// Both formats have one: fence's names its lists
			// allowedDomains and deniedDomains.
			if e.val.Kind == yaml.MappingNode {
				for i := 0; i < len(e.val.Content); i += 2 {
					switch e.val.Content[i].Value {
					case "allowedDomains", "deniedDomains":
						command = true
					}
				}
			}
			continue
		}
		others = true
		command = command || e.key == "command"
		all = all && fenceKeys[e.key]
	}
	return command || (all && others)
}

func (p *parser) cordon(keys []entry) error {
	cfg := &p.file.Config
	for _, e := range keys {
		switch e.key {
		case "version":
			if e.val.Kind != yaml.ScalarNode || e.val.Value != "1" {
				return p.errf(e.val, "unsupported version %q (want 1)", e.val.Value)
			}
		case "default":
			s, err := p.str(e.val, "default")
			if err != nil {
				return err
			}
			d, err := ParseDecision(s)
			if err != nil {
				return p.errf(e.val, "default: %v", err)
			}
			cfg.Default = d
		case "defaults":
			b, err := p.boolean(e.val, "defaults")
			if err != nil {
				return err
			}
			cfg.Builtins = b
		case "deny_writable_exec":
			b, err := p.boolean(e.val, "deny_writable_exec")
			if err != nil {
				return err
			}
			cfg.DenyWritable = b
		case "env":
			if err := p.env(e.val); err != nil {
				return err
			}
		case "net":
			s, err := p.str(e.val, "net")
			if err != nil {
				return err
			}
			if s != "host" && s != "none" && s != "filter" {
				return p.errf(e.val, "net: unknown network mode %q (want host, none or filter)", s)
			}
			cfg.Net = s
		case "files":
			if err := p.files(e.val); err != nil {
				return err
			}
		case "rules":
			if err := p.rules(e.val); err != nil {
				return err
			}
		case "examples":
			if err := p.examples(e.val); err != nil {
				return err
			}
		case "programs":
			if err := p.programs(e.val); err != nil {
				return err
			}
		case "network":
			if err := p.network(e.val); err != nil {
				return err
			}
		case "command":
			return &ParseError{File: p.file.Name, Line: e.kline,
				Msg: `"command" is a fence key and cannot be mixed with cordon's keys`}
		default:
			return &ParseError{File: p.file.Name, Line: e.kline,
				Msg: fmt.Sprintf("unknown key %q (want %s, network)", e.key, strings.Join(cordonKeys, ", "))}
		}
	}
	return nil
}

// env reads the env: section: deny and pass, each a name pattern or a
// list of them.
func (p *parser) env(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "env: want a mapping with deny and pass")
	}
	entries, err := p.mapping(n)
	if err != nil {
		return err
	}
	cfg := &p.file.Config.Env
	for _, e := range entries {
		var dst *[]EnvRule
		switch e.key {
		case "deny":
			dst = &cfg.Deny
		case "pass":
			dst = &cfg.Pass
		default:
			return &ParseError{File: p.file.Name, Line: e.kline,
				Msg: fmt.Sprintf("env: unknown key %q (want deny, pass)", e.key)}
		}
		if e.val.Kind == yaml.ScalarNode && e.val.Tag == "!!null" {
			continue
		}
		items := []*yaml.Node{e.val}
		if e.val.Kind == yaml.SequenceNode {
			items = e.val.Content
		}
		for _, item := range items {
			item = deref(item)
			what := "env " + e.key
			name, err := p.str(item, what)
			if err != nil {
				return err
			}
			if err := CheckEnvPattern(name); err != nil {
				return p.errf(item, "%s: %v", what, err)
			}
			*dst = append(*dst, EnvRule{Pattern: name, Source: p.source(item)})
		}
	}
	return nil
}

var decisionKeys = map[string]Decision{"deny": Deny, "allow": Allow, "ask": Ask}

func (p *parser) rules(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		return p.errf(n, "rules: want a list")
	}
	for i, item := range n.Content {
		item = deref(item)
		what := fmt.Sprintf("rule %d", i+1)
		if item.Kind != yaml.MappingNode {
			return p.errf(item, "%s: want a mapping with one of deny, allow, ask", what)
		}
		entries, err := p.mapping(item)
		if err != nil {
			return err
		}
		r := Rule{Source: p.source(item)}
		have := ""
		for _, e := range entries {
			if d, ok := decisionKeys[e.key]; ok {
				if have != "" {
					return &ParseError{File: p.file.Name, Line: e.kline,
						Msg: fmt.Sprintf("%s: both %s and %s (want one decision per rule)", what, have, e.key)}
				}
				have = e.key
				ws, list, err := p.words(e.val, what)
				if err != nil {
					return err
				}
				r.Decision = d
				r.Pattern = patternText(ws, list)
				continue
			}
			if e.key == "message" {
				if r.Message, err = p.str(e.val, what+": message"); err != nil {
					return err
				}
				continue
			}
			return &ParseError{File: p.file.Name, Line: e.kline,
				Msg: fmt.Sprintf("%s: unknown key %q (want deny, allow, ask, message)", what, e.key)}
		}
		if have == "" {
			return p.errf(item, "%s: no decision (want one of deny, allow, ask)", what)
		}
		if _, _, err := compileRule(&r, 0, nil); err != nil {
			return p.errf(item, "%s: %s %q: %v", what, r.Decision, r.Pattern, err)
		}
		p.file.Config.Rules = append(p.file.Config.Rules, r)
	}
	return nil
}

// patternText turns a rule given as a list of words into pattern text that
// splits back into the same words.
func patternText(ws []string, list bool) string {
	if !list {
		return ws[0]
	}
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = quoteWord(w)
	}
	return strings.Join(q, " ")
}

func (p *parser) examples(n *yaml.Node) error {
	if n.Kind != yaml.SequenceNode {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		return p.errf(n, "examples: want a list")
	}
	for i, item := range n.Content {
		item = deref(item)
		what := fmt.Sprintf("example %d", i+1)
		if item.Kind != yaml.MappingNode {
			return p.errf(item, "%s: want a mapping with one of deny, allow, ask", what)
		}
		entries, err := p.mapping(item)
		if err != nil {
			return err
		}
		if len(entries) != 1 {
			return p.errf(item, "%s: want exactly one of deny, allow, ask", what)
		}
		e := entries[0]
		d, ok := decisionKeys[e.key]
		if !ok {
			return &ParseError{File: p.file.Name, Line: e.kline,
				Msg: fmt.Sprintf("%s: unknown key %q (want deny, allow, ask)", what, e.key)}
		}
		ws, list, err := p.words(e.val, what)
		if err != nil {
			return err
		}
		argv := ws
		if !list {
			w, err := splitWords(ws[0])
			if err != nil {
				return p.errf(e.val, "%s: %v", what, err)
			}
			argv = make([]string, len(w))
			for j := range w {
				argv[j] = w[j].text
			}
		}
		if len(argv) == 0 {
			return p.errf(e.val, "%s: empty command", what)
		}
		p.file.Config.Examples = append(p.file.Config.Examples,
			Example{Decision: d, Argv: argv, Source: p.source(item)})
	}
	return nil
}

// fence reads a fence config's command section. Fence's allow entries
// override its deny entries, so they become Override rules. Other sections
// are reported as warnings: cordon does not enforce them.
func (p *parser) fence(keys []entry) error {
	var ssh *yaml.Node
	for _, e := range keys {
		switch e.key {
		case "command":
			if err := p.fenceCommand(e.val); err != nil {
				return err
			}
		case "ssh":
			ssh = e.val
		case "network":
			if err := p.fenceNetwork(e.val); err != nil {
				return err
			}
		case "filesystem":
			if err := p.fenceFilesystem(e.val); err != nil {
				return err
			}
		case "$schema":
		case "extends":
			p.warnf(e.kline, "fence key %q is not followed: only this file's command rules apply", e.key)
		default:
			p.warnf(e.kline, "fence key %q is ignored: cordon enforces only the command, ssh and network rules", e.key)
		}
	}
	if p.file.Config.Network == nil {
		// fence without a network section allows no outbound network.
		p.file.Config.Network = &Network{}
		p.file.Notices = append(p.file.Notices, fmt.Sprintf("%s: this fence config has no network section: as in fence, the sandbox gets no outbound network (--net filter with no allow rule)", p.file.Name))
	}
	if cfg := &p.file.Config; cfg.Builtins {
		// useDefaults (on unless turned off) means fence's own default
		// list, as well as cordon's.
		cfg.Rules = append(fenceDefaults(), cfg.Rules...)
	}
	if ssh != nil {
		return p.fenceSSH(ssh, keys)
	}
	return nil
}

func (p *parser) warnf(line int, format string, a ...any) {
	p.file.Warnings = append(p.file.Warnings, fmt.Sprintf("%s:%d: ", p.file.Name, line)+fmt.Sprintf(format, a...))
}

func (p *parser) fenceCommand(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "command: want an object")
	}
	entries, err := p.mapping(n)
	if err != nil {
		return err
	}
	cfg := &p.file.Config
	var allows []Rule
	for _, e := range entries {
		switch e.key {
		case "deny", "allow":
			if e.val.Kind != yaml.SequenceNode {
				return p.errf(e.val, "command.%s: want a list of strings", e.key)
			}
			for _, c := range e.val.Content {
				c = deref(c)
				s, err := p.str(c, "command."+e.key)
				if err != nil {
					return err
				}
				r := Rule{Decision: Deny, Pattern: s, Source: p.source(c)}
				if e.key == "allow" {
					r.Decision, r.Override = Allow, true
				}
				if _, _, err := compileRule(&r, 0, nil); err != nil {
					return p.errf(c, "command.%s: %q: %v", e.key, s, err)
				}
				if r.Override {
					allows = append(allows, r)
				} else {
					cfg.Rules = append(cfg.Rules, r)
				}
			}
		case "useDefaults":
			if e.val.Kind == yaml.ScalarNode && e.val.Tag == "!!null" {
				continue
			}
			b, err := p.boolean(e.val, "command.useDefaults")
			if err != nil {
				return err
			}
			cfg.Builtins = b
		case "runtimeExecPolicy":
			// cordon always decides on the full argv, at every exec.
		case "acceptSharedBinaryCannotRuntimeDeny":
			p.warnf(e.kline, "command.%s is ignored: cordon tells multi-call applets apart by argv[0]", e.key)
		default:
			return &ParseError{File: p.file.Name, Line: e.kline,
				Msg: fmt.Sprintf("command: unknown key %q (want deny, allow, useDefaults, runtimeExecPolicy, acceptSharedBinaryCannotRuntimeDeny)", e.key)}
		}
	}
	cfg.Rules = append(cfg.Rules, allows...)
	return nil
}

// isJSONName reports whether name says the file is JSON, to be read with
// comments and trailing commas allowed, as fence allows.
func isJSONName(name string) bool {
	return strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".jsonc")
}

func startsObject(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// stripJSONC blanks out // and /* */ comments and trailing commas outside
// strings, keeping every newline so line numbers stay right.
func stripJSONC(data []byte) []byte {
	out := make([]byte, len(data))
	copy(out, data)
	inStr := false
	lastComma := -1
	for i := 0; i < len(out); i++ {
		c := out[i]
		if inStr {
			switch c {
			case '\\':
				i++
			case '"':
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
			lastComma = -1
		case c == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case c == '/' && i+1 < len(out) && out[i+1] == '*':
			out[i], out[i+1] = ' ', ' '
			for i += 2; i < len(out) && !(out[i] == '*' && i+1 < len(out) && out[i+1] == '/'); i++ {
				if out[i] != '\n' {
					out[i] = ' '
				}
			}
			if i < len(out) {
				out[i], out[i+1] = ' ', ' '
				i++
			}
		case c == ',':
			lastComma = i
		case c == '}' || c == ']':
			if lastComma >= 0 {
				out[lastComma] = ' '
			}
			lastComma = -1
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			lastComma = -1
		}
	}
	return out
}

// network reads cordon's network section: rules and examples.
func (p *parser) network(n *yaml.Node) error {
	nw := &Network{}
	p.file.Config.Network = nw
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "network: want a mapping with rules and examples")
	}
	entries, err := p.mapping(n)
	if err != nil {
		return err
	}
	for _, e := range entries {
		switch e.key {
		case "rules", "examples":
			if e.val.Kind == yaml.ScalarNode && e.val.Tag == "!!null" {
				continue
			}
			if e.val.Kind != yaml.SequenceNode {
				return p.errf(e.val, "network.%s: want a list", e.key)
			}
			for i, item := range e.val.Content {
				item = deref(item)
				if err := p.netItem(nw, e.key == "examples", i, item); err != nil {
					return err
				}
			}
		default:
			return &ParseError{File: p.file.Name, Line: e.kline,
				Msg: fmt.Sprintf("network: unknown key %q (want rules, examples)", e.key)}
		}
	}
	return nil
}

// netItem reads one network rule or example: one of deny, allow, ask with
// HOST[:PORT], and optionally for (a program or a list; for an example,
// one program) and message (rules only).
func (p *parser) netItem(nw *Network, example bool, i int, item *yaml.Node) error {
	what := fmt.Sprintf("network rule %d", i+1)
	if example {
		what = fmt.Sprintf("network example %d", i+1)
	}
	if item.Kind != yaml.MappingNode {
		return p.errf(item, "%s: want a mapping with one of deny, allow, ask", what)
	}
	entries, err := p.mapping(item)
	if err != nil {
		return err
	}
	var (
		have, text, msg string
		dec             Decision
		fors            []string
		textNode        *yaml.Node
	)
	for _, e := range entries {
		if d, ok := decisionKeys[e.key]; ok {
			if have != "" {
				return &ParseError{File: p.file.Name, Line: e.kline,
					Msg: fmt.Sprintf("%s: both %s and %s (want one decision)", what, have, e.key)}
			}
			have, dec, textNode = e.key, d, e.val
			if text, err = p.str(e.val, what); err != nil {
				return err
			}
			continue
		}
		switch {
		case e.key == "for":
			ws, _, err := p.words(e.val, what+": for")
			if err != nil {
				return err
			}
			for _, w := range ws {
				if strings.TrimSpace(w) == "" {
					return p.errf(e.val, "%s: for: empty program name", what)
				}
			}
			fors = ws
		case e.key == "message" && !example:
			if msg, err = p.str(e.val, what+": message"); err != nil {
				return err
			}
		default:
			return &ParseError{File: p.file.Name, Line: e.kline,
				Msg: fmt.Sprintf("%s: unknown key %q (want deny, allow, ask, for, message)", what, e.key)}
		}
	}
	if have == "" {
		return p.errf(item, "%s: no decision (want one of deny, allow, ask)", what)
	}
	if example {
		ex, err := ParseNetExample(dec, text)
		if err != nil {
			return p.errf(textNode, "%s: %v", what, err)
		}
		if len(fors) > 1 {
			return p.errf(item, "%s: for: an example names one program", what)
		}
		if len(fors) == 1 {
			ex.Program = fors[0]
		}
		ex.Source = p.source(item)
		nw.Examples = append(nw.Examples, ex)
		return nil
	}
	r, err := ParseNetRule(dec, text)
	if err != nil {
		return p.errf(textNode, "%s: %v", what, err)
	}
	r.For, r.Message, r.Source = fors, msg, p.source(item)
	nw.Rules = append(nw.Rules, r)
	return nil
}

// fenceNetwork maps a fence config's network section: allowedDomains
// become allow rules, deniedDomains deny rules (both on ports 80 and
// 443, as cordon's rules without a port); other keys are reported.
func (p *parser) fenceNetwork(n *yaml.Node) error {
	nw := &Network{}
	p.file.Config.Network = nw
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "network: want an object")
	}
	entries, err := p.mapping(n)
	if err != nil {
		return err
	}
	for _, e := range entries {
		switch e.key {
		case "allowedDomains", "deniedDomains":
			if e.val.Kind == yaml.ScalarNode && e.val.Tag == "!!null" {
				continue
			}
			if e.val.Kind != yaml.SequenceNode {
				return p.errf(e.val, "network.%s: want a list of strings", e.key)
			}
			d := Allow
			if e.key == "deniedDomains" {
				d = Deny
			}
			for _, c := range e.val.Content {
				c = deref(c)
				s, err := p.str(c, "network."+e.key)
				if err != nil {
					return err
				}
				r, err := ParseNetRule(d, s)
				if err != nil {
					return p.errf(c, "network.%s: %v", e.key, err)
				}
				r.Source = p.source(c)
				nw.Rules = append(nw.Rules, r)
			}
		default:
			p.warnf(e.kline, "fence key network.%s is ignored: cordon filters by allowedDomains and deniedDomains", e.key)
		}
	}
	return nil
}

var filesKeys = []string{"deny_read", "deny_write", "allow_write", "read_only", "writable", "examples"}

// files reads the files section.
func (p *parser) files(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "files: want a mapping (keys %s)", strings.Join(filesKeys, ", "))
	}
	entries, err := p.mapping(n)
	if err != nil {
		return err
	}
	f := &p.file.Config.Files
	for _, e := range entries {
		what := "files." + e.key
		switch e.key {
		case "deny_read", "deny_write":
			rules, err := p.fileRules(e.val, what)
			if err != nil {
				return err
			}
			if e.key == "deny_read" {
				f.DenyRead = append(f.DenyRead, rules...)
			} else {
				f.DenyWrite = append(f.DenyWrite, rules...)
			}
		case "allow_write", "read_only":
			paths, err := p.strings(e.val, what)
			if err != nil {
				return err
			}
			for i, s := range paths {
				if !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~/") {
					return p.errf(e.val.Content[i], "%s: %q: want an absolute path or one under ~/", what, s)
				}
			}
			if e.key == "allow_write" {
				f.AllowWrite = append(f.AllowWrite, paths...)
			} else {
				f.ReadOnly = append(f.ReadOnly, paths...)
			}
		case "writable":
			names, err := p.strings(e.val, what)
			if err != nil {
				return err
			}
			for i, s := range names {
				if _, ok := Presets[s]; !ok {
					return p.errf(e.val.Content[i], "%s: unknown preset %q (want one of %s)", what, s, strings.Join(PresetNames(), ", "))
				}
			}
			f.Writable = append(f.Writable, names...)
		case "examples":
			if err := p.fileExamples(e.val); err != nil {
				return err
			}
		default:
			return &ParseError{File: p.file.Name, Line: e.kline,
				Msg: fmt.Sprintf("files: unknown key %q (want %s)", e.key, strings.Join(filesKeys, ", "))}
		}
	}
	return nil
}

// strings reads a list of strings (or one string).
func (p *parser) strings(n *yaml.Node, what string) ([]string, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "%s: want a list of strings", what)
	}
	out := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		s, err := p.str(deref(c), what)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (p *parser) fileRules(n *yaml.Node, what string) ([]FileRule, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var out []FileRule
	for _, c := range items {
		c = deref(c)
		s, err := p.str(c, what)
		if err != nil {
			return nil, err
		}
		if err := CheckFilePattern(s); err != nil {
			return nil, p.errf(c, "%s: %v", what, err)
		}
		out = append(out, FileRule{Pattern: s, Source: p.source(c)})
	}
	return out, nil
}

var fileExampleKeys = map[string]struct {
	access FileAccess
	denied bool
}{
	"deny_read": {FileRead, true}, "read": {FileRead, false},
	"deny_write": {FileWrite, true}, "write": {FileWrite, false},
}

func (p *parser) fileExamples(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		return p.errf(n, "files.examples: want a list")
	}
	for i, item := range n.Content {
		item = deref(item)
		what := fmt.Sprintf("files.examples: example %d", i+1)
		if item.Kind != yaml.MappingNode {
			return p.errf(item, "%s: want a mapping with one of deny_read, read, deny_write, write", what)
		}
		entries, err := p.mapping(item)
		if err != nil {
			return err
		}
		if len(entries) != 1 {
			return p.errf(item, "%s: want exactly one of deny_read, read, deny_write, write", what)
		}
		e := entries[0]
		k, ok := fileExampleKeys[e.key]
		if !ok {
			return &ParseError{File: p.file.Name, Line: e.kline,
				Msg: fmt.Sprintf("%s: unknown key %q (want deny_read, read, deny_write, write)", what, e.key)}
		}
		s, err := p.str(e.val, what)
		if err != nil {
			return err
		}
		if err := CheckFilePattern(s); err != nil || strings.HasPrefix(s, "!") {
			return p.errf(e.val, "%s: %q is not a path (absolute, ~/..., or relative to the working directory)", what, s)
		}
		p.file.Config.Files.Examples = append(p.file.Config.Files.Examples,
			FileExample{Access: k.access, Path: s, Denied: k.denied, Source: p.source(item)})
	}
	return nil
}

// fenceFilesystem imports a fence config's filesystem section: denyRead,
// allowWrite and denyWrite become the files section's deny_read,
// allow_write and deny_write. Fence writes paths relative to the working
// directory as ./x; "." (the working directory) is writable anyway.
func (p *parser) fenceFilesystem(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "filesystem: want an object")
	}
	entries, err := p.mapping(n)
	if err != nil {
		return err
	}
	f := &p.file.Config.Files
	for _, e := range entries {
		what := "filesystem." + e.key
		switch e.key {
		case "denyRead", "denyWrite", "allowWrite":
			paths, err := p.strings(e.val, what)
			if err != nil {
				return err
			}
			for i, s := range paths {
				line := e.kline
				if e.val.Kind == yaml.SequenceNode {
					line = e.val.Content[i].Line
				}
				s = strings.TrimPrefix(s, "./")
				if s == "." || s == "" {
					continue
				}
				if e.key == "allowWrite" {
					if !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~/") {
						p.warnf(line, "%s: %q is relative: only absolute paths and ~/ paths are bound (the working directory is writable anyway)", what, s)
						continue
					}
					f.AllowWrite = append(f.AllowWrite, s)
					continue
				}
				if err := CheckFilePattern(s); err != nil {
					return &ParseError{File: p.file.Name, Line: line, Msg: fmt.Sprintf("%s: %v", what, err)}
				}
				r := FileRule{Pattern: s, Source: fmt.Sprintf("%s:%d", p.file.Name, line)}
				if e.key == "denyRead" {
					f.DenyRead = append(f.DenyRead, r)
				} else {
					f.DenyWrite = append(f.DenyWrite, r)
				}
			}
		default:
			p.warnf(e.kline, "fence key %q is ignored: cordon imports filesystem.denyRead, allowWrite and denyWrite", what)
		}
	}
	return nil
}
