//go:build cgo

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/cordon-sandbox/cordon/client"
	"github.com/cordon-sandbox/cordon/daemon"
	"github.com/spf13/cobra"
)

type serveOptions struct {
	socket          string
	listen          string
	readyFD         int
	shutdownTimeout time.Duration
	debug           bool
}

func newServeCmd(opts *serveOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the cordon daemon: sessions and processes over an HTTP API",
		Long: `Run the per-user cordon daemon in the foreground. It serves the HTTP API
(see server/openapi.yaml, or GET /v1/openapi.yaml) on a Unix socket in
$XDG_RUNTIME_DIR/cordon (when that directory is yours with mode 0700), else
/run/user/UID/cordon, else ~/.cache/cordon/run. TMPDIR is never used, so every
client finds the same daemon.

When the socket cannot be created (e.g. EPERM inside another sandbox), or its
path is too long, it listens on 127.0.0.1 with an OS-chosen port and a random
bearer token instead; daemon.json (mode 0600) in that directory says which.
--listen 127.0.0.1:0 asks for TCP. --socket PATH and CORDON_HOST
(unix:///path or http://127.0.0.1:PORT) choose the address.

One daemon runs per user (an exclusive lock on daemon.lock). SIGTERM closes
every session, removes the daemon's files and exits. Sandboxes die with the
daemon, also on SIGKILL. The client commands (cordon exec, session, start...)
start it on first use; "cordon daemon start|stop|status" manage it.`,
		Example: `  # In the foreground, with a log of every request
  cordon serve --debug

  # TCP on loopback with a token (discovery: daemon.json)
  cordon serve --listen 127.0.0.1:0

  # Talk to it with curl
  curl --unix-socket "$XDG_RUNTIME_DIR/cordon/daemon.sock" http://localhost/v1/health`,
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return opts.run()
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.socket, "socket", "", "listen on this Unix socket (default: daemon.sock in the daemon's directory)")
	f.StringVar(&opts.listen, "listen", "", "listen on TCP at this loopback address (127.0.0.1:0: a free port) with a bearer token")
	f.DurationVar(&opts.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long closing the sessions may take at shutdown")
	f.BoolVar(&opts.debug, "debug", false, "log every request")
	f.IntVar(&opts.readyFD, "ready-fd", 0, "write the readiness line to this descriptor (set by whoever starts the daemon)")
	_ = f.MarkHidden("ready-fd")
	return cmd
}

func (o *serveOptions) run() error {
	var ready *daemon.Notifier
	if o.readyFD > 0 {
		ready = daemon.NewNotifier(os.NewFile(uintptr(o.readyFD), "ready"))
	}
	level := slog.LevelInfo
	if o.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	fail := func(err error) error {
		ready.Failed(err)
		return failed(err)
	}
	if o.socket != "" && o.listen != "" {
		return fail(errors.New("--socket and --listen exclude each other"))
	}
	if h := os.Getenv("CORDON_HOST"); h != "" && o.socket == "" && o.listen == "" {
		ep, err := client.ParseHost(h)
		if err != nil {
			return fail(fmt.Errorf("CORDON_HOST: %w", err))
		}
		o.socket, o.listen = ep.Socket, ep.Addr
	}
	paths, err := daemon.Locate()
	if err != nil {
		return fail(err)
	}
	// Setsid'd by its starter, the daemon has no terminal; in the
	// foreground, a hangup stops it like SIGTERM.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer stop()
	err = daemon.Serve(ctx, daemon.ServeOptions{
		Paths: paths, Socket: o.socket, Listen: o.listen, Version: version,
		ShutdownTimeout: o.shutdownTimeout, Ready: ready, Logger: log,
	})
	if err != nil {
		return failed(err) // Serve has sent it on the readiness pipe
	}
	return nil
}
