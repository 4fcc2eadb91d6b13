package policy

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// EnvRule is one name pattern of the env: section (or of --env-deny and
// --env-pass). '*' matches any run of characters, every other character
// itself; names are case-sensitive, as the kernel and libc treat them.
type EnvRule struct {
	Pattern string
	// Source says where the pattern came from: "builtin", "--env-deny",
	// "cordon.yaml:9".
	Source string
	// Why, for a built-in pattern, says what the variable holds.
	Why string
}

// EnvConfig is the environment scrub: variables whose name matches a Deny
// pattern are removed from the workload's environment unless a Pass
// pattern matches the name too (pass wins, so a wrapped program keeps what
// it declares it needs: pass ANTHROPIC_API_KEY).
type EnvConfig struct {
	Deny, Pass []EnvRule
}

// builtinEnvDeny lists credentials an agent's shell has no business
// holding: keys that act on cloud accounts, tokens that push to
// repositories or publish packages, and the SSH agent socket (which signs
// with the user's keys). They apply with the built-in deny list (Config.
// Builtins). The list is deliberately made of exact names and narrow
// prefixes: a broad "*_TOKEN" or "*KEY*" would also strip what agents
// themselves run on (ANTHROPIC_API_KEY, OPENAI_API_KEY,
// CLAUDE_CODE_OAUTH_TOKEN); users who want those gone say so in env.deny.
var builtinEnvDeny = []struct{ pattern, why string }{
	// Amazon Web Services (aws CLI and SDK credential chain).
	{"AWS_ACCESS_KEY_ID", "AWS access key"},
	{"AWS_SECRET_ACCESS_KEY", "AWS secret key"},
	{"AWS_SESSION_TOKEN", "AWS temporary credentials"},
	{"AWS_SECURITY_TOKEN", "AWS temporary credentials (legacy name)"},
	{"AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS container credentials endpoint token"},
	// Google Cloud: a key file's location, and bearer tokens.
	{"GOOGLE_APPLICATION_CREDENTIALS", "Google Cloud service account key file"},
	{"GOOGLE_CREDENTIALS", "Google Cloud service account key (Terraform)"},
	{"GOOGLE_OAUTH_ACCESS_TOKEN", "Google Cloud access token"},
	{"CLOUDSDK_AUTH_ACCESS_TOKEN", "gcloud access token"},
	// Azure: service principal secrets and storage keys.
	{"AZURE_*SECRET*", "Azure client secret"},
	{"AZURE_CLIENT_CERTIFICATE_PASSWORD", "Azure client certificate password"},
	{"AZURE_STORAGE_KEY", "Azure storage account key"},
	{"AZURE_STORAGE_CONNECTION_STRING", "Azure storage connection string (holds the key)"},
	{"AZURE_STORAGE_SAS_TOKEN", "Azure storage SAS token"},
	{"ARM_CLIENT_SECRET", "Azure client secret (Terraform)"},
	{"ARM_ACCESS_KEY", "Azure storage key (Terraform)"},
	// Other clouds and platforms.
	{"DIGITALOCEAN_ACCESS_TOKEN", "DigitalOcean token"},
	{"DIGITALOCEAN_TOKEN", "DigitalOcean token"},
	{"HCLOUD_TOKEN", "Hetzner Cloud token"},
	{"LINODE_TOKEN", "Linode token"},
	{"CLOUDFLARE_API_TOKEN", "Cloudflare token"},
	{"CLOUDFLARE_API_KEY", "Cloudflare global key"},
	{"HEROKU_API_KEY", "Heroku key"},
	{"VERCEL_TOKEN", "Vercel token"},
	{"NETLIFY_AUTH_TOKEN", "Netlify token"},
	{"FLY_API_TOKEN", "Fly.io token"},
	{"VAULT_TOKEN", "HashiCorp Vault token"},
	{"TF_TOKEN_*", "Terraform registry or cloud token"},
	// Source hosting.
	{"GITHUB_TOKEN", "GitHub token"},
	{"GH_TOKEN", "GitHub token (gh)"},
	{"GH_ENTERPRISE_TOKEN", "GitHub Enterprise token (gh)"},
	{"GITHUB_ENTERPRISE_TOKEN", "GitHub Enterprise token (gh)"},
	{"GITLAB_TOKEN", "GitLab token"},
	{"GL_TOKEN", "GitLab token (glab)"},
	{"CI_JOB_TOKEN", "GitLab CI job token"},
	{"BITBUCKET_TOKEN", "Bitbucket token"},
	// Package registries: a token here publishes packages under the user's
	// name.
	{"NPM_TOKEN", "npm registry token"},
	{"NODE_AUTH_TOKEN", "npm registry token (setup-node)"},
	{"YARN_NPM_AUTH_TOKEN", "npm registry token (yarn)"},
	{"PYPI_TOKEN", "PyPI token"},
	{"PYPI_API_TOKEN", "PyPI token"},
	{"TWINE_PASSWORD", "PyPI password or token (twine)"},
	{"UV_PUBLISH_TOKEN", "PyPI token (uv)"},
	{"POETRY_PYPI_TOKEN_*", "PyPI token (poetry)"},
	{"POETRY_HTTP_BASIC_*_PASSWORD", "registry password (poetry)"},
	{"CARGO_REGISTRY_TOKEN", "crates.io token"},
	{"CARGO_REGISTRIES_*_TOKEN", "cargo registry token"},
	{"GEM_HOST_API_KEY", "RubyGems key"},
	{"NUGET_API_KEY", "NuGet key"},
	{"DOCKER_PASSWORD", "container registry password"},
	{"DOCKER_AUTH_CONFIG", "container registry credentials"},
	{"DOCKERHUB_TOKEN", "Docker Hub token"},
	{"HF_TOKEN", "Hugging Face token"},
	{"HUGGING_FACE_HUB_TOKEN", "Hugging Face token"},
	// Agents that sign or decrypt with the user's keys.
	{"SSH_AUTH_SOCK", "ssh-agent socket: signs with the user's SSH keys"},
	{"GPG_AGENT_INFO", "gpg-agent socket"},
}

// BuiltinEnv returns the built-in env deny patterns, in order.
func BuiltinEnv() []EnvRule {
	out := make([]EnvRule, len(builtinEnvDeny))
	for i, b := range builtinEnvDeny {
		out[i] = EnvRule{Pattern: b.pattern, Source: "builtin", Why: b.why}
	}
	return out
}

// CheckEnvPattern reports what is wrong with an env name pattern: empty,
// or holding '=' or NUL, which no variable name can.
func CheckEnvPattern(p string) error {
	switch {
	case p == "":
		return errors.New("empty name pattern")
	case strings.ContainsAny(p, "=\x00"):
		return fmt.Errorf("%q: a variable name cannot hold '=' or NUL", p)
	}
	return nil
}

// envMatch reports whether name matches pattern, where '*' matches any
// run of characters (path.Match is not used: its '*' stops at '/', and its
// '[' and '\' would make ordinary names patterns).
func envMatch(pattern, name string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == name
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(name, mid)
		if i < 0 {
			return false
		}
		name = name[i+len(mid):]
	}
	return strings.HasSuffix(name, last)
}

func anyEnvMatch(rules []EnvRule, name string) bool {
	for _, r := range rules {
		if envMatch(r.Pattern, name) {
			return true
		}
	}
	return false
}

// compileEnv checks cfg's env patterns and returns the effective scrub:
// the built-in patterns first when builtins is set.
func compileEnv(cfg EnvConfig, builtins bool) (EnvConfig, error) {
	var out EnvConfig
	if builtins {
		out.Deny = BuiltinEnv()
	}
	for _, r := range cfg.Deny {
		if err := CheckEnvPattern(r.Pattern); err != nil {
			return EnvConfig{}, fmt.Errorf("%s: env deny: %w", envSource(r), err)
		}
	}
	for _, r := range cfg.Pass {
		if err := CheckEnvPattern(r.Pattern); err != nil {
			return EnvConfig{}, fmt.Errorf("%s: env pass: %w", envSource(r), err)
		}
	}
	out.Deny = append(out.Deny, cfg.Deny...)
	out.Pass = append(out.Pass, cfg.Pass...)
	return out, nil
}

func envSource(r EnvRule) string {
	if r.Source == "" {
		return "env"
	}
	return r.Source
}

// Env returns the effective environment scrub (built-in patterns first).
func (p *Policy) Env() EnvConfig {
	return EnvConfig{Deny: append([]EnvRule(nil), p.env.Deny...), Pass: append([]EnvRule(nil), p.env.Pass...)}
}

// ScrubEnv returns env without the variables the policy removes, and the
// sorted, distinct names it removed (never their values). An entry without
// '=' is kept or removed by its whole text as the name.
func (p *Policy) ScrubEnv(env []string) (kept []string, removed []string) {
	kept = make([]string, 0, len(env))
	seen := map[string]bool{}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if anyEnvMatch(p.env.Deny, name) && !anyEnvMatch(p.env.Pass, name) {
			if !seen[name] {
				seen[name] = true
				removed = append(removed, name)
			}
			continue
		}
		kept = append(kept, kv)
	}
	sort.Strings(removed)
	return kept, removed
}
