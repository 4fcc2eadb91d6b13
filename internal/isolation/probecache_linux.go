package isolation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The bubblewrap probe (probeBwrap) makes a whole sandbox: about as long as
// the run's own sandbox takes to start, on every run with --isolation auto.
// ChooseCached remembers a probe that succeeded, keyed by everything that
// decides whether bubblewrap can make its namespaces here; a key that
// differs in any part probes again.
//
// Why a stale or forged entry cannot weaken anything: only success is
// remembered, and success only ever picks the bwrap tier, the strongest.
// If bubblewrap then cannot make the sandbox after all (something outside
// the key changed), the run fails with bubblewrap's own error and exit 125;
// no command runs in a weaker tier, and the entry is removed (Forget) so
// the next run probes again and steps down as auto does. A failed probe is
// never remembered: stepping down to landlock is decided fresh every time.
// cordon doctor always probes (Choose).

// probeCacheVersion changes whenever probeBwrap's command line or the key's
// parts change, so an entry written by another cordon is never taken.
const probeCacheVersion = "1"

// probeCachePath is where the entry lives: the user's cache directory,
// which the sandbox sees as an empty private tmpfs (the built-in "private
// home state" rule), so a sandboxed command cannot read or plant it.
func probeCachePath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "cordon", "bwrap-probe"), nil
}

// probeKey is a digest of what decides whether the probe succeeds: the
// boot (a reboot may change sysctls, AppArmor or the kernel), bubblewrap's
// file (a reinstalled or upgraded bwrap has a new inode or times), the
// caller's identity and its namespaces (another container, user namespace
// or mount namespace), its seccomp mode, no_new_privs and capability sets
// (a container runtime's profile), its LSM label, and the sysctls that
// govern unprivileged user namespaces.
func probeKey(bw string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(bw, &st); err != nil {
		return "", fmt.Errorf("stat %s: %w", bw, err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "v%s\nbwrap %s %d %d %d %d %d %d\nuid %d %d\n", probeCacheVersion, bw, st.Dev, st.Ino, st.Size,
		st.Mtim.Nano(), st.Ctim.Nano(), st.Mode, os.Getuid(), os.Geteuid())
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "boot %s\n", strings.TrimSpace(string(boot)))
	for _, ns := range []string{"user", "mnt", "pid", "net", "cgroup"} {
		l, err := os.Readlink("/proc/self/ns/" + ns)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "ns %s\n", l)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, _, _ := strings.Cut(line, ":")
		switch k {
		case "Seccomp", "Seccomp_filters", "NoNewPrivs", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb":
			fmt.Fprintf(h, "%s\n", line)
		}
	}
	for _, p := range []string{
		"/proc/self/attr/current",
		"/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
		"/proc/sys/kernel/unprivileged_userns_clone",
		"/proc/sys/user/max_user_namespaces",
		"/proc/sys/user/max_mnt_namespaces",
		"/proc/sys/user/max_pid_namespaces",
	} {
		b, _ := os.ReadFile(p) // absent on some kernels: absent is part of the key
		fmt.Fprintf(h, "%s %q\n", p, strings.TrimSpace(string(b)))
	}
	fmt.Fprintf(h, "container %q\n", os.Getenv("container"))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ChooseCached is Choose for a run: a bubblewrap probe that succeeded under
// the same key before is taken without probing again (see above). cached
// reports that it was; the caller calls Forget if bubblewrap then fails.
func ChooseCached(ctx context.Context) (c Choice, cached bool) {
	bw, err := findBwrap()
	if err != nil {
		return Choose(ctx), false
	}
	path, perr := probeCachePath()
	key, kerr := probeKey(bw)
	if perr == nil && kerr == nil {
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == key {
			return Choice{Tier: Bwrap, LandlockABI: LandlockABI(), Bwrap: bw}, true
		}
	}
	c = Choose(ctx)
	if c.Tier == Bwrap && perr == nil && kerr == nil {
		_ = writeProbeCache(path, key)
	}
	return c, false
}

// Forget removes the remembered probe: bubblewrap failed although the key
// said it works.
func Forget() {
	if path, err := probeCachePath(); err == nil {
		_ = os.Remove(path)
	}
}

// writeProbeCache writes the entry whole (a temporary file renamed over
// it), readable by the user only.
func writeProbeCache(path, key string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".bwrap-probe-*")
	if err != nil {
		return err
	}
	_, werr := f.WriteString(key + "\n")
	cerr := f.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("writing %s: %v %v", f.Name(), werr, cerr)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return nil
}
