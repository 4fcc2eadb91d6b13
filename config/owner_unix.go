//go:build unix

package config

import (
	"io/fs"
	"os"
	"syscall"
)

// untrusted says why a discovered policy file must not be used, or "". A
// file another user can write could loosen the policy of whoever runs
// cordon below it (a cordon.yaml in a shared /tmp, say): it must belong to
// the current user or root and not be writable by others. Files named with
// --policy are not checked.
func untrusted(fi fs.FileInfo) string {
	if fi.Mode().Perm()&0o002 != 0 {
		return "writable by other users"
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	if uid := uint32(os.Geteuid()); st.Uid != uid && st.Uid != 0 {
		return "owned by another user"
	}
	return ""
}
