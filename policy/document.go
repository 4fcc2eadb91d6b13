package policy

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Document renders cfg as a cordon policy document that Parse reads back
// to the same policy: how the CLI hands an effective policy (file, flags
// and all) to the daemon, which compiles it itself. It sits beside Parse so
// that a section the format gains is written where it is read. Examples
// were checked when cfg was loaded and are left out; built-in rules are
// carried by defaults, not written out.
func Document(cfg Config) (string, error) {
	type rule struct {
		Deny    string `yaml:"deny,omitempty"`
		Allow   string `yaml:"allow,omitempty"`
		Ask     string `yaml:"ask,omitempty"`
		Message string `yaml:"message,omitempty"`
	}
	type env struct {
		Deny []string `yaml:"deny,omitempty"`
		Pass []string `yaml:"pass,omitempty"`
	}
	type netRule struct {
		Deny    string   `yaml:"deny,omitempty"`
		Allow   string   `yaml:"allow,omitempty"`
		Ask     string   `yaml:"ask,omitempty"`
		For     []string `yaml:"for,omitempty"`
		Message string   `yaml:"message,omitempty"`
	}
	type network struct {
		Rules []netRule `yaml:"rules"`
	}
	type files struct {
		DenyRead   []string `yaml:"deny_read,omitempty"`
		DenyWrite  []string `yaml:"deny_write,omitempty"`
		AllowWrite []string `yaml:"allow_write,omitempty"`
		ReadOnly   []string `yaml:"read_only,omitempty"`
		Writable   []string `yaml:"writable,omitempty"`
	}
	doc := struct {
		Version      int      `yaml:"version"`
		Default      string   `yaml:"default"`
		Defaults     bool     `yaml:"defaults"`
		DenyWritable bool     `yaml:"deny_writable_exec"`
		Net          string   `yaml:"net,omitempty"`
		Files        *files   `yaml:"files,omitempty"`
		Env          *env     `yaml:"env,omitempty"`
		Rules        []rule   `yaml:"rules"`
		Network      *network `yaml:"network,omitempty"`
		// Programs carries the policy's option tables: without them the
		// daemon would read the same rules with other meanings.
		Programs map[string]ToolOptions `yaml:"programs,omitempty"`
	}{Version: 1, Default: cfg.Default.String(), Defaults: cfg.Builtins, DenyWritable: cfg.DenyWritable, Net: cfg.Net, Rules: []rule{}, Programs: cfg.Tools}
	if len(cfg.Env.Deny)+len(cfg.Env.Pass) > 0 {
		// The built-in names are not written out: defaults carries them,
		// and the daemon adds them as it compiles.
		doc.Env = &env{}
		for _, r := range cfg.Env.Deny {
			doc.Env.Deny = append(doc.Env.Deny, r.Pattern)
		}
		for _, r := range cfg.Env.Pass {
			doc.Env.Pass = append(doc.Env.Pass, r.Pattern)
		}
	}
	if cfg.Network != nil {
		// A network section, even empty, means a filtered network.
		doc.Network = &network{Rules: []netRule{}}
		for _, r := range cfg.Network.Rules {
			out := netRule{For: r.For, Message: r.Message}
			switch r.Decision {
			case Deny:
				out.Deny = r.Pattern
			case Allow:
				out.Allow = r.Pattern
			case Ask:
				out.Ask = r.Pattern
			}
			doc.Network.Rules = append(doc.Network.Rules, out)
		}
	}
	// The built-in files rules are not written out: defaults carries them.
	f := files{AllowWrite: cfg.Files.AllowWrite, ReadOnly: cfg.Files.ReadOnly, Writable: cfg.Files.Writable}
	for _, r := range cfg.Files.DenyRead {
		f.DenyRead = append(f.DenyRead, r.Pattern)
	}
	for _, r := range cfg.Files.DenyWrite {
		f.DenyWrite = append(f.DenyWrite, r.Pattern)
	}
	if f.DenyRead != nil || f.DenyWrite != nil || f.AllowWrite != nil || f.ReadOnly != nil || f.Writable != nil {
		doc.Files = &f
	}
	for _, r := range cfg.Rules {
		if r.Override || r.Final {
			return "", fmt.Errorf("rule %s (%s) overrides deny rules, which only a fence config can say; the daemon takes cordon's format: rewrite it as a cordon policy", r.String(), r.Source)
		}
		out := rule{Message: r.Message}
		switch r.Decision {
		case Deny:
			out.Deny = r.Pattern
		case Allow:
			out.Allow = r.Pattern
		case Ask:
			out.Ask = r.Pattern
		}
		doc.Rules = append(doc.Rules, out)
	}
	b, err := yaml.Marshal(doc)
	return string(b), err
}
