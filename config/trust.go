package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNoTrustStore is returned when there is nowhere to keep the trust
// store: no $XDG_STATE_HOME and no home directory.
var ErrNoTrustStore = errors.New("no place for the policy trust store: set XDG_STATE_HOME or HOME")

// UntrustedError is returned by Load for a discovered policy file whose
// content the user has not trusted at its path: new, or changed since.
// A workload can write files in its working directory; this is what keeps
// one it wrote from being the next run's policy.
//
// With Hides set, Path is a repository root's .git (Sum is RootSum): the
// search for a project policy stops there, finds none, and so no longer
// reaches Hides, a policy the user trusted for this directory before. A
// workload can create a .git wherever it can write; this is what keeps one
// from switching the next run's policy off.
type UntrustedError struct {
	Path   string
	Origin Origin
	// Sum is the SHA-256 of the content that was read, hex.
	Sum   string
	Hides string
}

// RootSum is what the trust store records for an accepted repository root
// (its .git's path) that hides a policy beyond it.
const RootSum = "repository-root"

func (e *UntrustedError) Error() string {
	if e.Hides != "" {
		root := filepath.Dir(e.Path)
		return fmt.Sprintf("%s is new as a repository root without a policy file (%s): it hides %s, which applied here "+
			"before; if that is meant, run \"cordon policy trust\" in %s (or pass --policy %s to keep it)",
			root, e.Path, e.Hides, root, e.Hides)
	}
	return fmt.Sprintf("%s (%s) is new or changed since you last trusted it: review it, then run "+
		"\"cordon policy trust %s\" (or pass --policy %s)", filepath.Base(e.Path), e.Path, e.Path, e.Path)
}

// Question is what to ask on a terminal before trusting.
func (e *UntrustedError) Question() string {
	if e.Hides != "" {
		return fmt.Sprintf("%s is new as a repository root without a policy file: it hides %s. Run without it? [y/N] ",
			filepath.Dir(e.Path), e.Hides)
	}
	return fmt.Sprintf("%s (%s) is new or changed since you last trusted it. Load it? [y/N] ", filepath.Base(e.Path), e.Path)
}

// Sum returns the hex SHA-256 of data, as the trust store records it.
func Sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// TrustStore is the record of trusted policy files: for each absolute path,
// the SHA-256 of the content the user trusted. It lives outside every
// workspace ($XDG_STATE_HOME/cordon/trusted.json), and the runner binds it
// read-only into any sandbox whose writable binds hold it.
type TrustStore struct {
	// Path is the store's file; "" means there is none (ErrNoTrustStore).
	Path string
}

type trustFile struct {
	Version int               `json:"version"`
	Files   map[string]string `json:"files"` // absolute path -> hex SHA-256
}

// TrustStoreFor returns the trust store opts point to:
// $XDG_STATE_HOME/cordon/trusted.json, else ~/.local/state/cordon/trusted.json.
func TrustStoreFor(opts Options) (*TrustStore, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	return opts.trustStore(), nil
}

func (o *Options) trustStore() *TrustStore {
	if o.StateHome == "" {
		return &TrustStore{}
	}
	return &TrustStore{Path: filepath.Join(o.StateHome, "cordon", "trusted.json")}
}

// Dir is the directory that holds the store, or "".
func (s *TrustStore) Dir() string {
	if s.Path == "" {
		return ""
	}
	return filepath.Dir(s.Path)
}

func (s *TrustStore) read() (*trustFile, error) {
	tf := &trustFile{Version: 1, Files: map[string]string{}}
	if s.Path == "" {
		return tf, nil
	}
	data, err := os.ReadFile(s.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return tf, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the trust store: %w", err)
	}
	if err := json.Unmarshal(data, tf); err != nil {
		return nil, fmt.Errorf("reading the trust store %s: %w", s.Path, err)
	}
	if tf.Files == nil {
		tf.Files = map[string]string{}
	}
	return tf, nil
}

// Trusted reports whether the content with hex SHA-256 sum is trusted at
// path (absolute).
func (s *TrustStore) Trusted(path, sum string) (bool, error) {
	tf, err := s.read()
	if err != nil {
		return false, err
	}
	return tf.Files[filepath.Clean(path)] == sum, nil
}

// Trust records the content with hex SHA-256 sum as trusted at path
// (absolute). The store is rewritten atomically (a temporary file renamed
// over it), mode 0600 in a 0700 directory.
func (s *TrustStore) Trust(path, sum string) error {
	if s.Path == "" {
		return ErrNoTrustStore
	}
	if !filepath.IsAbs(path) {
		return fmt.Errorf("trusting %s: not an absolute path", path)
	}
	tf, err := s.read()
	if err != nil {
		return err
	}
	tf.Version = 1
	tf.Files[filepath.Clean(path)] = sum
	data, err := json.MarshalIndent(tf, "", "  ")
	if err != nil {
		return err
	}
	dir := s.Dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, ".trusted-*.json")
	if err != nil {
		return fmt.Errorf("writing the trust store: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the trust store: %w", err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the trust store: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the trust store: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the trust store: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.Path); err != nil {
		return fmt.Errorf("writing the trust store: %w", err)
	}
	return nil
}
