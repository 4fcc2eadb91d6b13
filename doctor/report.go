package doctor

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Status is the verdict of one check.
type Status string

const (
	// StatusOK means the feature is present and behaves.
	StatusOK Status = "ok"
	// StatusWarn means cordon runs, degraded or with a caveat the detail names.
	StatusWarn Status = "warn"
	// StatusFail means cordon cannot run until this is fixed.
	StatusFail Status = "FAIL"
)

// Names of the checks, in the order Run reports them.
const (
	CheckWSL              = "wsl"
	CheckKernel           = "kernel"
	CheckNotifyListener   = "notify-listener"
	CheckSeccompNotify    = "seccomp-notify"
	CheckNotifyContinue   = "notify-continue"
	CheckTSyncListener    = "tsync-listener"
	CheckWaitKillableRecv = "wait-killable-recv"
	CheckFDSyncWakeUp     = "fd-sync-wake-up"
	CheckUserNS           = "userns"
	CheckBwrap            = "bwrap"
	CheckPtrace           = "ptrace"
	CheckVerification     = "exec-verification"
	CheckCgroup2          = "cgroup2"
	CheckLandlock         = "landlock"
	CheckIsolation        = "isolation"
	CheckGitBareRepos     = "git-bare-repos"
)

// Check is one row of the report.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Detail says what was found, in a sentence a user can act on.
	Detail string `json:"detail"`
	// Fix is the command or change that makes the check pass; empty when ok.
	Fix string `json:"fix,omitempty"`
}

// Report is the result of Run.
type Report struct {
	// OK is true when no check failed: cordon can run on this host.
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
	// Seccomp holds the raw probe results, for callers that pick a mode.
	Seccomp SeccompFeatures `json:"seccomp"`
}

// Options tunes Run. The zero value is ready to use.
type Options struct {
	// Bwrap is the bubblewrap binary to check; empty means the one cordon
	// runs (bwrap.Find: the first on PATH only root can replace).
	Bwrap string
	// Timeout bounds each probe child and each bwrap run; zero means 2s.
	Timeout time.Duration
}

// DefaultTimeout bounds every probe so a broken kernel cannot hang doctor.
const DefaultTimeout = 2 * time.Second

func (o Options) timeout() time.Duration {
	if o.Timeout <= 0 {
		return DefaultTimeout
	}
	return o.Timeout
}

// Feature is the outcome of probing one kernel feature by using it.
type Feature struct {
	// Supported is true only when the feature was exercised and behaved.
	Supported bool `json:"supported"`
	// Detail says what was observed, or why the feature is missing.
	Detail string `json:"detail"`
}

// NotifSizes mirrors struct seccomp_notif_sizes (linux/seccomp.h): the sizes
// the running kernel uses for the notification structures.
type NotifSizes struct {
	Notif     uint16 `json:"seccomp_notif"`
	NotifResp uint16 `json:"seccomp_notif_resp"`
	Data      uint16 `json:"seccomp_data"`
}

// SeccompFeatures is what ProbeSeccomp found out by loading filters in a
// child process.
type SeccompFeatures struct {
	// KernelSizes is what SECCOMP_GET_NOTIF_SIZES reported; zero if unknown.
	KernelSizes NotifSizes `json:"kernel_sizes"`
	// ListenerBusy is true when SECCOMP_FILTER_FLAG_NEW_LISTENER failed with
	// EBUSY: a notify listener already exists in our filter chain.
	ListenerBusy bool `json:"listener_busy"`
	// UserNotif: a listener was created, a notification received and answered
	// with an errno the caller saw.
	UserNotif Feature `json:"user_notif"`
	// Continue: SECCOMP_USER_NOTIF_FLAG_CONTINUE ran the real syscall.
	Continue Feature `json:"continue"`
	// TSyncListener: TSYNC|TSYNC_ESRCH together with NEW_LISTENER put the
	// filter on another thread.
	TSyncListener Feature `json:"tsync_listener"`
	// WaitKillableRecv: with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV a signal
	// arriving after the notification was received did not abort it.
	WaitKillableRecv Feature `json:"wait_killable_recv"`
	// FDSyncWakeUp: SECCOMP_IOCTL_NOTIF_SET_FLAGS accepted
	// SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP and notifications still flowed.
	FDSyncWakeUp Feature `json:"fd_sync_wake_up"`
}

// Usable reports whether cordon's supervisor can work with these features:
// notifications arrive, can be answered, and CONTINUE runs the real syscall.
func (f SeccompFeatures) Usable() bool {
	return f.UserNotif.Supported && f.Continue.Supported
}

// Find returns the check named name.
func (r Report) Find(name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

// newReport builds a report whose OK field agrees with its checks.
func newReport(checks []Check, sf SeccompFeatures) Report {
	ok := true
	for _, c := range checks {
		if c.Status == StatusFail {
			ok = false
		}
	}
	return Report{OK: ok, Checks: checks, Seccomp: sf}
}

// WriteText writes the report as an aligned table, followed by the fixes for
// every row that is not ok and a one-line verdict.
func (r Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
	for _, c := range r.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, c.Status, oneLine(c.Detail))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing report table: %w", err)
	}

	// Rows that share a fix (several features behind one EBUSY, say) are
	// listed once, under all their names.
	type fixGroup struct {
		names []string
		fix   string
	}
	var groups []*fixGroup
	byFix := map[string]*fixGroup{}
	for _, c := range r.Checks {
		if c.Status == StatusOK || c.Fix == "" {
			continue
		}
		name := fmt.Sprintf("%s (%s)", c.Name, c.Status)
		if g, ok := byFix[c.Fix]; ok {
			g.names = append(g.names, name)
			continue
		}
		g := &fixGroup{names: []string{name}, fix: c.Fix}
		byFix[c.Fix] = g
		groups = append(groups, g)
	}
	var b strings.Builder
	if len(groups) > 0 {
		b.WriteString("\nTo fix:\n")
	}
	for _, g := range groups {
		fmt.Fprintf(&b, "  %s:\n", strings.Join(g.names, ", "))
		for _, line := range strings.Split(g.fix, "\n") {
			fmt.Fprintf(&b, "      %s\n", line)
		}
	}
	if r.OK {
		b.WriteString("\ncordon can run on this host.\n")
	} else {
		b.WriteString("\ncordon cannot run on this host until the FAIL rows are fixed.\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing report fixes: %w", err)
	}
	return nil
}

// oneLine keeps a detail on its table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
