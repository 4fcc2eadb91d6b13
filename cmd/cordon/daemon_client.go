//go:build cgo

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/cordon-sandbox/cordon/client"
	"github.com/cordon-sandbox/cordon/daemon"
	"github.com/cordon-sandbox/cordon/runner"
	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/cordon-sandbox/cordon/supervisor"
)

// The daemon's client commands (session, exec, start, ps, logs, wait, kill,
// daemon) share these helpers.

// commandContext ends on SIGINT or SIGTERM: a request in flight is
// cancelled, and the daemon ends what it was running for this client
// (exec) or leaves it running (a started process).
func commandContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// connectDaemon returns a client of the user's daemon, starting the daemon
// when none runs.
func connectDaemon(ctx context.Context) (*client.Client, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding cordon's own binary: %w", err)
	}
	c, _, err := daemon.Connect(ctx, daemon.ConnectOptions{AutoStart: true, Start: daemon.StartOptions{Exe: exe}})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// interrupted tells a request the user cancelled (errInterrupted) from
// any other failure.
func interrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return errInterrupted
	}
	return failed(err)
}

// clientEnv is the caller's environment for a sandbox. The runner strips
// cordon's own variables from every workload's environment; stripping them
// here too keeps CORDON_TOKEN off the wire.
func clientEnv() []string { return runner.WorkloadEnv(os.Environ()) }

// printDecisions prints a line per denied exec, as "cordon run" does
// (supervisor.DenialLine): the argv is the workload's to choose, so it is
// shown through supervisor.FormatArgv, quoted where it holds spaces or
// control characters, and can neither span lines nor reach the terminal as
// escape sequences.
func printDecisions(w io.Writer, ds []sandbox.ExecDecision) {
	for _, d := range ds {
		if line := denialLine(d); line != "" {
			fmt.Fprintln(w, line)
		}
	}
}

// denialLine is the line printDecisions prints for d, or "" when d is not
// a denial.
func denialLine(d sandbox.ExecDecision) string {
	switch {
	case d.Decision != "deny":
		return ""
	case d.Kind == "net":
		by := "an unidentified process"
		if len(d.Argv) > 0 {
			by = supervisor.FormatArgv(d.Argv)
		}
		return fmt.Sprintf("cordon: denied: connect %s by %s (rule: %s)",
			net.JoinHostPort(d.Host, strconv.Itoa(d.Port)), by, d.Rule)
	}
	return fmt.Sprintf("cordon: denied: %s (rule: %s)", supervisor.FormatArgv(d.Argv), d.Rule)
}

// printJSON prints v indented. Like the daemon's answers, it does not
// escape <, > and & (a command's output is printed as it is).
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// describeExit is one line for a process's exit.
func describeExit(e sandbox.ExitInfo) string {
	var parts []string
	switch {
	case e.Signal != 0:
		parts = append(parts, fmt.Sprintf("killed by signal %d", e.Signal))
	default:
		parts = append(parts, fmt.Sprintf("exit code %d", e.ExitCode))
	}
	if e.TimedOut {
		parts = append(parts, "timed out")
	}
	if e.KillRequested {
		parts = append(parts, "kill requested")
	}
	if e.Denied {
		parts = append(parts, "denied by policy")
	}
	if e.Error != "" && !e.Denied {
		parts = append(parts, e.Error)
	}
	return strings.Join(parts, ", ")
}
