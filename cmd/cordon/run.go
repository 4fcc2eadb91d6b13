//go:build cgo

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/daemon"
	"github.com/cordon-sandbox/cordon/netproxy"
	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/runner"
	"github.com/cordon-sandbox/cordon/supervisor"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runOptions holds the flags of "cordon run" (and of the root shorthand).
type runOptions struct {
	sandboxFlags
	ask        string
	askTimeout time.Duration
	verify     string
	audit      string
	debug      bool
	timeout    time.Duration
	killGrace  time.Duration
	wedgeAfter int
	dropAfter  int
}

func addRunFlags(fs *pflag.FlagSet, o *runOptions) {
	addSandboxFlags(fs, &o.sandboxFlags)
	fs.StringVar(&o.ask, "ask", "deny", "how ask rules are answered: deny, allow, or tty (prompt on cordon's own terminal)")
	fs.DurationVar(&o.askTimeout, "ask-timeout", 30*time.Second, "with --ask tty: deny when there is no answer within this time")
	fs.StringVar(&o.verify, "verify", "auto", "race-free exec verification: auto (ptrace; strict where ptrace cannot attach), ptrace, or strict (no ptrace: refuse callers that could change their arguments after the check)")
	fs.StringVar(&o.audit, "audit", "", "append one JSON line per exec decision to FILE (- for stderr); an exec whose arguments, file or loader's program changed after the check and ran gets its own line, ld.so PROG names PROG (loaded), and bytes that are not UTF-8 are also given exactly (argv_b64, path_b64)")
	fs.BoolVar(&o.debug, "debug", false, "log what cordon does to stderr")
	fs.DurationVar(&o.timeout, "timeout", 0, "stop the command after this long (SIGTERM, then SIGKILL after --kill-grace); exit code 124")
	fs.DurationVar(&o.killGrace, "kill-grace", 5*time.Second, "time between SIGTERM and SIGKILL on --timeout")
	fs.IntVar(&o.wedgeAfter, "debug-wedge-supervisor", 0, "testing: wedge the supervisor's receive after N notifications")
	_ = fs.MarkHidden("debug-wedge-supervisor")
	fs.IntVar(&o.dropAfter, "debug-drop-supervisor", 0, "testing: close the supervisor's listener after N notifications")
	_ = fs.MarkHidden("debug-drop-supervisor")
}

func newRunCmd() *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARG...]",
		Short: "Run a command in the sandbox (same as cordon -- CMD)",
		Long: `Run CMD inside a bubblewrap sandbox: read-only root, the current directory
writable, private /tmp, minimal /dev, fresh /proc, its own pid namespace.
Every exec inside it is decided against the policy before it runs.

The policy is --policy FILE; else cordon.yaml or .cordon.yaml in the current
directory or a parent up to the repository root; else
$XDG_CONFIG_HOME/cordon/policy.yaml; else the built-in default (allow, with
the built-in deny list). "cordon policy show" prints what applies here. A
discovered file is loaded only while its content is trusted ("cordon policy
trust FILE"): a new or changed one is asked about on a terminal and refused
otherwise (exit 125), so a file the sandbox wrote cannot become the next
run's policy. Inside the sandbox those files and the trust store are
read-only.

Flags change what was loaded: --deny and --allow rules are added after the
file's rules; --default and --no-defaults, when given, replace the file's
default and defaults. A RULE is words: the first names a program, the rest
are matched against its arguments the way the program parses them ("git
push" matches "git -C dir push origin"). The strictest matching rule wins
(deny over ask over allow); the default applies when none matches.

--net filter gives the sandbox a network namespace with loopback only; the
one way out is cordon's proxy on the sandbox's loopback (HTTP and CONNECT on
127.0.0.1:3128, SOCKS5 on 127.0.0.1:1080; http_proxy, https_proxy, all_proxy
and the like point there). Each connection is decided by the network rules
(--allow-net, --deny-net, the policy's network section; deny wins, nothing
matching is denied), the name is resolved on the host, and addresses that are
not globally reachable (private, loopback, link-local, metadata...) are
refused unless a rule names that exact host. --allow-net or --deny-net, or a
policy with a network section, imply --net filter. In the landlock tier
(Linux 6.7+) the proxy listens on the host's loopback at ports the kernel
picks, Landlock refuses the command every TCP connect and bind, cordon makes
the connects to the proxy itself, and UDP, raw and other sockets are refused;
the host's Unix sockets (D-Bus, docker) stay reachable there.

An ask rule is answered by --ask: deny (the default), allow, or tty, which
prompts on cordon's own terminal (never the command's stdin) and denies when
there is no answer within --ask-timeout.

The command gets your environment less well-known credentials (cloud keys,
GitHub/GitLab and registry tokens, SSH_AUTH_SOCK: "cordon policy show" lists
them; --no-defaults keeps them): --env-deny PATTERN removes more, --env-pass
NAME keeps one the program needs. --debug names what was removed.

In a git linked worktree or a submodule, the repository's objects, refs and
logs outside the current directory are writable too, so commit, branch,
stash and rebase work; its hooks and config stay read-only.

Files: credential stores in your home (~/.ssh/id_*, ~/.aws, ~/.gnupg, ...)
are unreadable (Permission denied), and inside the writable directory
.git/hooks, .git/config, policy files and agent settings (.claude, .codex, .gemini,
.cursor, .vscode, .idea, .zed, .devcontainer, .mcp.json) are read-only and
cannot be created (the built-in list; --no-defaults drops it). A new .git
(git init, git clone, git submodule add) is refused too: allow it with
--deny-write '!.git'. A path in the writable tree that cordon cannot read
(chmod 000) stops the start (exit 125): restore its permissions. --deny-read and --deny-write add paths
(absolute, ~/..., or globs inside the writable trees such as '**/.env*'); a
bind they cover is an error (exit 125). ~/.cache, ~/.local/state and
~/.npm/_logs are private to the sandbox and discarded. "cordon policy show"
lists every files rule; --debug lists every path they applied to.

bubblewrap runs on the host, so cordon runs only a bwrap on PATH that only
root can change (an ELF file named bwrap in root's directories; run by
root, in /usr/bin, /usr/sbin, /bin, /sbin or the Nix/Guix stores): one a
sandbox could have planted (a virtualenv's bin) is skipped, and with no
other the run fails saying why.

--isolation auto (the default) uses bubblewrap where it works. Where it
cannot (Ubuntu 24.04's AppArmor restriction, a container's seccomp profile,
no bwrap installed) it runs the landlock tier and says so in one line with
the fix for this host: no namespaces; a Landlock ruleset keeps writes to the
current directory, --rw paths and a private $TMPDIR (EACCES elsewhere), but
cannot make paths inside them read-only or hide anything; --net none and
--net filter need Linux 6.7 (Landlock ABI 4) there; with no pid namespace,
cordon's init ends the command's whole tree when the command exits, on
--timeout, and when cordon itself is killed (from Linux 6.12, Landlock ABI
6, the command cannot signal that init). Run by root it refuses that tier (root owns the system's files, whose
mode Landlock cannot protect: run cordon as a normal user), as it does with
neither tier (exit 125). Naming a tier silences the
line; "cordon doctor" shows the tier runs get here.`,
		Example: `  cordon run --deny "git push" -- bash
  cordon run --allow-net registry.npmjs.org --allow-net '*.github.com' -- npm ci
  cordon run --net filter --allow-net 10.0.0.5:8080 --audit - -- ./agent.sh
  cordon run --policy ./agent-policy.yaml --ask tty -- bash
  cordon run --net none --rw ~/.cache -- make test
  cordon run --audit audit.jsonl -- ./agent.sh
  cordon run --deny-read '**/.env*' --deny-read ~/.config/my-tool/token -- bash
  cordon run --deny-write generated --deny-write 'deploy/*.tf' -- bash
  cordon run --deny-write '!.git' -- git clone https://github.com/org/repo
  cordon run --timeout 10m -- npm test
  cordon run --env-pass ANTHROPIC_API_KEY --env-deny '*_TOKEN' -- claude
  cd ../my-worktree && cordon -- git commit -am wip
  cordon run --isolation landlock --rw ~/.cache -- make test   # where bubblewrap cannot run`,
		Args:          cobra.MinimumNArgs(1),
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return opts.run(cmd, args)
		},
	}
	cmd.Flags().SetInterspersed(false)
	addRunFlags(cmd.Flags(), opts)
	return cmd
}

// netAsker is asker for network ask rules.
func (o *runOptions) netAsker() (func(*netproxy.Record) bool, error) {
	switch o.ask {
	case "allow":
		return func(*netproxy.Record) bool { return true }, nil
	case "tty":
		return runner.AskTerminalNet(o.askTimeout, os.Stderr), nil
	}
	return nil, nil
}

// asker returns how ask decisions are answered: nil (deny), always
// allow, or a prompt on cordon's own terminal.
func (o *runOptions) asker() (func(*supervisor.Verdict) bool, error) {
	switch o.ask {
	case "deny":
		return nil, nil
	case "allow":
		return func(*supervisor.Verdict) bool { return true }, nil
	case "tty":
		if o.askTimeout <= 0 {
			return nil, errors.New("--ask-timeout must be positive")
		}
		return runner.AskTerminal(o.askTimeout, os.Stderr), nil
	}
	return nil, fmt.Errorf("--ask: unknown mode %q (want deny, allow or tty)", o.ask)
}

func (o *runOptions) run(cmd *cobra.Command, args []string) error {
	logger := slog.New(slog.DiscardHandler)
	if o.debug {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	eff, err := o.loadPolicy(cmd.Flags(), os.Stderr, forRun)
	if err != nil {
		return err
	}
	logger.Debug("policy", "from", eff.loaded.String(), "trust", trustLabel(eff.loaded), "searched", eff.loaded.Searched,
		"default", eff.cfg.Default.String(), "builtins", eff.cfg.Builtins, "rules", len(eff.pol.Rules()))
	ask, err := o.asker()
	if err != nil {
		return err
	}
	iso, err := runner.ParseIsolation(o.isolation)
	if err != nil {
		return fmt.Errorf("--isolation: %w", err)
	}
	verify, err := supervisor.ParseVerify(o.verify)
	if err != nil {
		return fmt.Errorf("--verify: %w", err)
	}
	netMode, err := o.netMode(cmd.Flags(), eff)
	if err != nil {
		return err
	}
	askNet, err := o.netAsker()
	if err != nil {
		return err
	}
	if o.timeout < 0 || o.killGrace < 0 {
		return errors.New("--timeout and --kill-grace must not be negative")
	}
	dir, err := currentDir()
	if err != nil {
		return err
	}
	if iso == runner.IsolationNone {
		fmt.Fprintln(os.Stderr, "cordon: warning: --isolation none: execs are checked against the policy, but the command is NOT sandboxed: it sees and can change everything you can")
		if (netMode != "" && netMode != bwrap.NetHost) || eff.cfg.Network != nil || len(o.rw) > 0 || len(o.ro) > 0 {
			return errors.New("--net, network rules, --rw and --ro need --isolation bwrap or landlock")
		}
		// Without a sandbox nothing can be hidden or made read-only:
		// rules asked for explicitly fail instead of being ignored.
		// That includes a policy file's own deny_read and deny_write (the
		// rule cordon adds for the policy file in use is not asked for).
		f := eff.cfg.Files
		asked := len(f.AllowWrite) + len(f.ReadOnly) + len(f.Writable)
		for _, r := range append(append([]policy.FileRule(nil), f.DenyRead...), f.DenyWrite...) {
			if r.Source != policyFileInUse {
				asked++
			}
		}
		if asked > 0 {
			return errors.New("--deny-read, --deny-write and the policy's files rules and binds need --isolation bwrap or landlock")
		}
	}
	var audit io.Writer
	switch o.audit {
	case "":
	case "-":
		audit = os.Stderr
	default:
		f, err := os.OpenFile(o.audit, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("--audit: %w", err)
		}
		defer f.Close()
		audit = f
	}
	// No sandbox may reach the cordon daemon (its socket and token).
	hide, hideFiles := daemon.HidePaths()
	res, err := runner.Run(context.Background(), runner.Options{
		Argv:                 args,
		Env:                  os.Environ(),
		Dir:                  dir,
		Policy:               eff.pol,
		Ask:                  ask,
		AskNet:               askNet,
		Isolation:            iso,
		Verify:               verify,
		RW:                   absAll(o.rw),
		RO:                   absAll(o.ro),
		Net:                  netMode,
		Hide:                 hide,
		HideFiles:            hideFiles,
		Stdin:                os.Stdin,
		Stdout:               os.Stdout,
		Stderr:               os.Stderr,
		Audit:                audit,
		Timeout:              o.timeout,
		KillGrace:            o.killGrace,
		Logger:               logger,
		WedgeSupervisorAfter: o.wedgeAfter,
		DropSupervisorAfter:  o.dropAfter,
		AdoptOrphans:         true,
	})
	if err != nil {
		return err
	}
	if res.TimedOut {
		fmt.Fprintf(os.Stderr, "cordon: timed out after %v\n", o.timeout)
	}
	if res.ExitCode != 0 {
		return &exitError{code: res.ExitCode}
	}
	return nil
}
