//go:build cgo

package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestVersionFromBuildInfo(t *testing.T) {
	info := func(mainVersion string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/cordon-sandbox/cordon", Version: mainVersion}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	rev := "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"go install at a tag", info("v1.4.0"), "v1.4.0"},
		{"go install at a commit", info("v0.0.0-20261123231500-0123456789ab"), "v0.0.0-20261123231500-0123456789ab"},
		{"go build in a clean checkout", info("(devel)", "vcs.revision", rev, "vcs.modified", "false"), "0123456789ab"},
		{"go build with changes", info("(devel)", "vcs.revision", rev, "vcs.modified", "true"), "0123456789ab-dirty"},
		{"no VCS information", info("(devel)"), "dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, versionFromBuildInfo(tc.bi))
		})
	}
}
