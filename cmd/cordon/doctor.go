//go:build cgo

package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/cordon-sandbox/cordon/doctor"
	"github.com/spf13/cobra"
)

// exitDoctorFailed is doctor's exit code when cordon cannot run on this host.
const exitDoctorFailed = 1

// doctorOptions holds the flags of "cordon doctor".
type doctorOptions struct {
	json    bool
	timeout time.Duration
}

func newDoctorCmd() *cobra.Command {
	opts := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check what this host supports and how to fix what is missing",
		Long: `doctor checks whether this host can run cordon and prints a table of what it
supports and what is missing, with the fix for each:

  kernel version and the seccomp features cordon uses; seccomp user
  notification, CONTINUE, TSYNC with a listener, WAIT_KILLABLE_RECV and
  FD_SYNC_WAKE_UP, each probed by loading a filter in a child process (a flag
  the kernel accepts but does not honour counts as missing); whether a notify
  listener already exists above us (nested cordon or another tool: EBUSY);
  user namespaces and the sysctls that gate them (including Ubuntu's AppArmor
  restriction); the bubblewrap cordon runs (the first on PATH only
  root can change, in the system's directories), its version and a real
  sandbox run; Yama's
  ptrace scope (without ptrace cordon uses strict mode); WSL1/WSL2; cgroup v2;
  the kernel's Landlock ABI and what the landlock tier cannot restrict at it;
  the isolation tier each run gets with --isolation auto (bwrap, or
  landlock with why bubblewrap cannot run here and the fix, or refused);
  and whether your git refuses repositories it finds by themselves
  (safe.bareRepository explicit), which a sandboxed run could make in its
  working tree under another name than .git.

doctor changes nothing on the host. It exits 0 when cordon can run (no FAIL
row) and 1 otherwise; rows marked warn name a degraded mode or a caveat.`,
		Example: `  # Check this host
  cordon doctor

  # Machine-readable report: only what is not ok
  cordon doctor --json | jq '.checks[] | select(.status != "ok")'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return opts.run(cmd)
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the report as JSON")
	cmd.Flags().DurationVar(&opts.timeout, "timeout", doctor.DefaultTimeout, "bound for each probe")
	return cmd
}

func (o *doctorOptions) run(cmd *cobra.Command) error {
	report := doctor.Run(cmd.Context(), doctor.Options{Timeout: o.timeout})
	out := cmd.OutOrStdout()
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return fmt.Errorf("writing doctor report: %w", err)
		}
	} else if err := report.WriteText(out); err != nil {
		return err
	}
	if !report.OK {
		// The report already says what is wrong: exit 1 without a message.
		return &exitError{code: exitDoctorFailed}
	}
	return nil
}
