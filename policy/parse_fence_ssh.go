package policy

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// fenceSSH translates a fence config's ssh section into rules on ssh's
// destination and remote command, keeping fence's evaluation order:
//
//  1. a host in deniedHosts is denied;
//  2. a host not in allowedHosts is denied;
//  3. an allowed host without a remote command is allowed;
//  4. a remote command in deniedCommands is denied (and, with inheritDeny,
//     one the command section denies);
//  5. with allowAllCommands every other command is allowed, else only
//     those in allowedCommands (with their arguments).
//
// Steps 1 and 4 become Final deny rules (no override lifts them), step 2 a
// deny of every ssh, steps 3 and 5 Override allows for the allowed hosts.
func (p *parser) fenceSSH(n *yaml.Node, top []entry) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "ssh: want an object")
	}
	entries, err := p.mapping(n)
	if err != nil {
		return err
	}
	var (
		lists             = map[string][]*yaml.Node{}
		allowAll, inherit bool
	)
	for _, e := range entries {
		switch e.key {
		case "allowedHosts", "deniedHosts", "allowedCommands", "deniedCommands":
			if e.val.Kind == yaml.ScalarNode && e.val.Tag == "!!null" {
				continue
			}
			if e.val.Kind != yaml.SequenceNode {
				return p.errf(e.val, "ssh.%s: want a list of strings", e.key)
			}
			for _, c := range e.val.Content {
				c = deref(c)
				s, err := p.str(c, "ssh."+e.key)
				if err != nil {
					return err
				}
				if strings.TrimSpace(s) == "" {
					return p.errf(c, "ssh.%s: empty entry", e.key)
				}
				lists[e.key] = append(lists[e.key], c)
			}
		case "allowAllCommands", "inheritDeny":
			b, err := p.boolean(e.val, "ssh."+e.key)
			if err != nil {
				return err
			}
			if e.key == "allowAllCommands" {
				allowAll = b
			} else {
				inherit = b
			}
		default:
			return &ParseError{File: p.file.Name, Line: e.kline,
				Msg: fmt.Sprintf("ssh: unknown key %q (want allowedHosts, deniedHosts, allowedCommands, deniedCommands, allowAllCommands, inheritDeny)", e.key)}
		}
	}
	cfg := &p.file.Config
	add := func(r Rule) error {
		if _, _, err := compileRule(&r, 0, nil); err != nil {
			return &ParseError{File: p.file.Name, Msg: fmt.Sprintf("%s: ssh rule %q: %v", r.Source, r.Pattern, err)}
		}
		cfg.Rules = append(cfg.Rules, r)
		return nil
	}
	final := func(c *yaml.Node, pattern, why string) error {
		return add(Rule{Decision: Deny, Final: true, Pattern: pattern, Source: p.source(c), Message: why})
	}
	for _, c := range lists["deniedHosts"] {
		if err := final(c, "ssh "+fenceHost(c.Value), "fence ssh.deniedHosts"); err != nil {
			return err
		}
	}
	if err := add(Rule{Decision: Deny, Pattern: "ssh", Source: p.source(n),
		Message: "fence ssh: only allowedHosts, with allowed commands"}); err != nil {
		return err
	}
	for _, c := range lists["deniedCommands"] {
		if err := final(c, "ssh * "+fenceWords(c.Value), "fence ssh.deniedCommands"); err != nil {
			return err
		}
	}
	if inherit {
		for _, e := range top {
			if e.key != "command" || e.val.Kind != yaml.MappingNode {
				continue
			}
			cmd, _ := p.mapping(e.val)
			for _, ce := range cmd {
				if ce.key != "deny" || ce.val.Kind != yaml.SequenceNode {
					continue
				}
				for _, c := range ce.val.Content {
					if c = deref(c); c.Kind == yaml.ScalarNode && strings.TrimSpace(c.Value) != "" {
						if err := final(c, "ssh * "+c.Value, "fence command.deny, inherited by ssh"); err != nil {
							return err
						}
					}
				}
			}
		}
		if cfg.Builtins {
			for _, b := range fenceDefaultDeny {
				r := Rule{Decision: Deny, Final: true, Pattern: "ssh * " + b.pattern, Source: p.source(n),
					Message: "fence default, inherited by ssh: " + b.why}
				if err := add(r); err != nil {
					return err
				}
			}
		}
	}
	for _, h := range lists["allowedHosts"] {
		host := fenceHost(h.Value)
		pats := []string{"ssh [options] " + host + " $"}
		if allowAll {
			pats = append(pats, "ssh [options] "+host+" ...")
		}
		for _, c := range lists["allowedCommands"] {
			pats = append(pats, "ssh [options] "+host+" "+fenceWords(c.Value)+" ...")
		}
		for _, pat := range pats {
			if err := add(Rule{Decision: Allow, Override: true, Pattern: pat, Source: p.source(h)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// fenceHost renders a fence host pattern, in which only * is special, as a
// rule word.
func fenceHost(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '*' && strings.IndexByte(" \t\n\r'\"\\?{},[]", c) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// fenceWords renders a fence command (words split on blanks, matched
// literally) as rule words.
func fenceWords(s string) string {
	ws := strings.Fields(s)
	for i, w := range ws {
		var b strings.Builder
		for j := 0; j < len(w); j++ {
			if strings.IndexByte("'\"\\*?{},[]", w[j]) >= 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(w[j])
		}
		ws[i] = b.String()
		if w == "..." || w == "$" {
			ws[i] = "\\" + w
		}
	}
	return strings.Join(ws, " ")
}
