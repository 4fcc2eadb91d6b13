//go:build cgo

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cordon-sandbox/cordon/config"
	"github.com/spf13/cobra"
)

func newPolicyTrustCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trust [FILE...]",
		Short: "Trust policy files, as they are now, for runs that discover them",
		Long: `trust records each FILE's SHA-256 at its absolute path in the trust store
($XDG_STATE_HOME/cordon/trusted.json, ~/.local/state/cordon/trusted.json by
default), after checking that it parses. Without FILE it trusts the file
discovery picks here (cordon.yaml or .cordon.yaml up to the repository root,
else $XDG_CONFIG_HOME/cordon/policy.yaml).

A discovered policy file is loaded only while its content is trusted: a
sandboxed command can write files in its working directory, and one it wrote
must not become the next run's policy. A new or changed file is refused
(exit 125) unless cordon can ask on a terminal. Review the file first.
Files named with --policy are trusted by being named, and never checked.

Without FILE in a repository root that has no policy file but hides one you
trusted beyond it (a .git made since, perhaps by a sandboxed command), it
accepts the root: runs there stop using the hidden file.`,
		Example: `  # Review, then trust the policy file that applies here
  cordon policy show
  cordon policy trust

  # Trust given files
  cordon policy trust cordon.yaml sub/.cordon.yaml`,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return trustFiles(cmd, args)
		},
	}
	return cmd
}

func trustFiles(cmd *cobra.Command, files []string) error {
	if len(files) == 0 {
		l, err := config.Load(config.Options{AllowUntrusted: true})
		if err != nil {
			return err
		}
		if l.Root != "" {
			// No policy file up to this repository root, which hides one
			// that applied here before: accept the root.
			store, err := config.TrustStoreFor(config.Options{})
			if err != nil {
				return err
			}
			marker := filepath.Join(l.Root, ".git")
			if err := store.Trust(marker, config.RootSum); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "trusted %s as a repository root without a policy file (%s no longer applies here; runs use %s)\n",
				l.Root, l.Hidden, policyLabel(l))
			return nil
		}
		if l.Origin == config.OriginBuiltin {
			return errors.New("no policy file is discovered here (cordon.yaml or .cordon.yaml up to the repository root, $XDG_CONFIG_HOME/cordon/policy.yaml): nothing to trust")
		}
		files = []string{l.Path}
	}
	store, err := config.TrustStoreFor(config.Options{})
	if err != nil {
		return err
	}
	for _, f := range files {
		p, err := filepath.Abs(f)
		if err != nil {
			return fmt.Errorf("resolving %s: %w", f, err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("reading policy: %w", err)
		}
		if _, err := config.ParsePolicy(p, data); err != nil {
			return fmt.Errorf("not trusted: %w", err)
		}
		sum := config.Sum(data)
		if err := store.Trust(p, sum); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "trusted %s (sha256 %s)\n", p, sum[:16])
	}
	return nil
}
