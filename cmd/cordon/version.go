//go:build cgo

package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	seccomp "github.com/seccomp/libseccomp-golang"
	"github.com/spf13/cobra"
)

// version is set at build time by the Makefile: -ldflags "-X
// main.version=v1.2.3". Without it (go install, go build) the build
// info says what was built.
var version = "dev"

// buildVersion is cordon's version: the one the Makefile set; else the
// module version "go install ...@VERSION" records; else the VCS revision
// "go build" in a checkout records (-dirty when it had changes); else
// "dev".
func buildVersion() string {
	if version != "dev" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version
	}
	return versionFromBuildInfo(bi)
}

func versionFromBuildInfo(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return rev
}

// versionLine is what "cordon version" and "cordon --version" print.
func versionLine() string {
	maj, min, mic := seccomp.GetLibraryVersion()
	return fmt.Sprintf("cordon %s (%s, libseccomp %d.%d.%d)\n", buildVersion(), runtime.Version(), maj, min, mic)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print cordon's version",
		Example: "  cordon version\n  cordon --version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(cmd.OutOrStdout(), versionLine())
			return nil
		},
	}
}
