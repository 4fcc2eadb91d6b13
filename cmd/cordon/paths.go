//go:build cgo

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

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

// currentDir is the working directory every command starts from (policy
// discovery, the sandbox's writable directory). A directory deleted under
// the shell is said as such.
func currentDir() (string, error) {
	dir, err := os.Getwd()
	if errors.Is(err, fs.ErrNotExist) {
		return "", errors.New("the current directory no longer exists (it was deleted or moved); cd to a directory that exists and run again")
	}
	if err != nil {
		return "", fmt.Errorf("finding the current directory: %w", err)
	}
	return dir, nil
}
