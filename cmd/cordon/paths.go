package main

import "path/filepath"

// absAll makes bind paths absolute: bwrap binds them at the same place
// inside the sandbox, where a relative path would mean something else.
func absAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if a, err := filepath.Abs(p); err == nil {
			p = a
		}
		out = append(out, p)
	}
	return out
}
