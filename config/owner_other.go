//go:build !unix

package config

import "io/fs"

// untrusted accepts every file where file ownership is not checked.
func untrusted(fs.FileInfo) string { return "" }
