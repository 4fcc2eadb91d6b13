package policy

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// programs reads the programs section: per program, its option table.
//
//	programs:
//	  rg:
//	    value_options: [-g, --glob, -t, --type]
//	  mytool:
//	    global_options: [--profile]   # before the subcommand, takes a value
//	    value_options: [-o, --output]
//	    subcommands: true
func (p *parser) programs(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "programs: want a mapping from program name to its options")
	}
	progs, err := p.mapping(n)
	if err != nil {
		return err
	}
	cfg := &p.file.Config
	for _, pe := range progs {
		what := "programs: " + pe.key
		if pe.val.Kind != yaml.MappingNode {
			return p.errf(pe.val, "%s: want a mapping (value_options, global_options, subcommands)", what)
		}
		keys, err := p.mapping(pe.val)
		if err != nil {
			return err
		}
		var d ToolOptions
		for _, e := range keys {
			switch e.key {
			case "value_options", "global_options":
				ws, list, err := p.words(e.val, what+": "+e.key)
				if err != nil {
					return err
				}
				if !list {
					return p.errf(e.val, "%s: %s: want a list of options", what, e.key)
				}
				if e.key == "value_options" {
					d.Values = ws
				} else {
					d.Global = ws
				}
			case "subcommands":
				if d.Subcommands, err = p.boolean(e.val, what+": subcommands"); err != nil {
					return err
				}
			default:
				return &ParseError{File: p.file.Name, Line: e.kline,
					Msg: fmt.Sprintf("%s: unknown key %q (want value_options, global_options, subcommands)", what, e.key)}
			}
		}
		if err := checkToolOptions(pe.key, d); err != nil {
			return p.errf(pe.val, "%v", err)
		}
		if cfg.Tools == nil {
			cfg.Tools = map[string]ToolOptions{}
		}
		cfg.Tools[pe.key] = d
	}
	return nil
}
