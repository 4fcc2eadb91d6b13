//go:build cgo

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cordon-sandbox/cordon/sandbox"
	"github.com/cordon-sandbox/cordon/supervisor"
	"github.com/spf13/cobra"
)

func newSessionAsksCmd() *cobra.Command {
	var noPrompt bool
	cmd := &cobra.Command{
		Use:   "asks ID|NAME",
		Short: "Show a session's pending asks as they come, and answer them on the terminal",
		Long: `asks follows the session's decision stream and shows each exec or connection
an ask rule holds (sessions created with --ask-timeout). On a terminal it asks
you: y allows it, n denies it, a allows it and every later ask about the same
command line (or host and port) in this session, v denies those; anything
else denies. Without a terminal, or with --no-prompt, it only prints one line
per ask (its id first), for "cordon session answer". An ask nobody answers
is denied at its deadline. It runs until the session ends or Ctrl-C.`,
		Example: `  cordon session create --name dev --carry --ask-timeout 2m
  cordon session asks dev
  cordon session asks dev --no-prompt | head -1`,
		Args:          cobra.ExactArgs(1),
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := commandContext()
			defer cancel()
			c, err := connectDaemon(ctx)
			if err != nil {
				return failed(err)
			}
			defer c.Close()
			out := cmd.OutOrStdout()
			prompt := !noPrompt && isTerminal(os.Stdin)
			in := bufio.NewReader(os.Stdin)
			for ev, err := range c.Decisions(ctx, args[0], 0) {
				if err != nil {
					return interrupted(ctx, err)
				}
				d := ev.Decision
				if d == nil || d.Decision != "ask" || d.AskID == "" || (!d.AskDeadline.IsZero() && time.Now().After(d.AskDeadline)) {
					continue
				}
				what := supervisor.FormatArgv(d.Argv)
				if d.Kind == "net" {
					what = fmt.Sprintf("connect %s:%d by %s", d.Host, d.Port, what)
				}
				fmt.Fprintf(out, "%s %s (rule: %s)\n", d.AskID, what, d.Rule)
				if !prompt {
					continue
				}
				a, ok := readAskAnswer(out, in, time.Until(d.AskDeadline))
				if !ok {
					return nil // stdin closed
				}
				if err := c.AnswerAsk(ctx, args[0], d.AskID, a); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "cordon: %s: %v\n", d.AskID, err)
					continue
				}
				fmt.Fprintln(out, map[bool]string{true: "allowed", false: "denied"}[a.Allow])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&noPrompt, "no-prompt", false, "only print the asks, one line each, without answering")
	return cmd
}

// readAskAnswer prompts for one answer.
func readAskAnswer(out io.Writer, in *bufio.Reader, left time.Duration) (sandbox.AskAnswer, bool) {
	fmt.Fprintf(out, "allow? [y]es [n]o [a]lways [v] never (denied in %s) ", left.Round(time.Second))
	line, err := in.ReadString('\n')
	if err != nil && line == "" {
		return sandbox.AskAnswer{}, false
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return sandbox.AskAnswer{Allow: true}, true
	case "a", "always":
		return sandbox.AskAnswer{Allow: true, Remember: true}, true
	case "v", "never":
		return sandbox.AskAnswer{Remember: true}, true
	}
	return sandbox.AskAnswer{}, true
}

func newSessionAnswerCmd() *cobra.Command {
	var remember bool
	cmd := &cobra.Command{
		Use:   "answer ID|NAME ASK allow|deny",
		Short: "Answer one pending ask of a session",
		Long: `answer allows or denies the pending ask ASK (its id, as "cordon session asks"
prints it, or the ask_id of an ask decision on the session's stream). With
--remember the answer also applies to the session's later asks about the same
command line (or host and port). An ask already answered or past its deadline
is not found (exit 125).`,
		Example: `  cordon session answer dev a-3f9c0e1d2b4a5968 allow
  cordon session answer dev a-3f9c0e1d2b4a5968 deny --remember`,
		Args:          cobra.ExactArgs(3),
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			var a sandbox.AskAnswer
			switch args[2] {
			case "allow":
				a.Allow = true
			case "deny":
			default:
				return failed(errors.New("the answer is allow or deny"))
			}
			a.Remember = remember
			ctx, cancel := commandContext()
			defer cancel()
			c, err := connectDaemon(ctx)
			if err != nil {
				return failed(err)
			}
			defer c.Close()
			if err := c.AnswerAsk(ctx, args[0], args[1], a); err != nil {
				return interrupted(ctx, err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&remember, "remember", false, "apply the answer to the session's later asks about the same command line or host and port")
	return cmd
}
