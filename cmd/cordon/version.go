package main

import (
	"fmt"
	"runtime"

	seccomp "github.com/seccomp/libseccomp-golang"
	"github.com/spf13/cobra"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print cordon's version",
		Example: "  cordon version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			maj, min, mic := seccomp.GetLibraryVersion()
			fmt.Fprintf(cmd.OutOrStdout(), "cordon %s (%s, libseccomp %d.%d.%d)\n", version, runtime.Version(), maj, min, mic)
			return nil
		},
	}
}
