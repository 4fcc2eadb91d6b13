// Package config finds and loads cordon's policy file.
//
// It owns discovery: --policy FILE; else cordon.yaml or .cordon.yaml in the
// working directory or a parent, up to the repository root (the first
// directory with a .git entry) or, outside a repository, up to $HOME (or /
// for directories outside $HOME); else $XDG_CONFIG_HOME/cordon/policy.yaml;
// else the built-in default. It reports what it loaded and from where, so
// "cordon policy show" and --debug can say it. It reads files; parsing and
// evaluating them belong to package policy, and merging command-line rules
// into the result belongs to the caller.
package config
