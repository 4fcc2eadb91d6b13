package tests

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The suite's binary is built with plain "go build" (no Makefile ldflags):
// --version and the version command agree, and say cordon's version from
// the build info.
func TestVersionFlag(t *testing.T) {
	a := cordon(t, "--version")
	b := cordon(t, "version")
	require.Equal(t, 0, a.code, a.stderr)
	require.Equal(t, 0, b.code, b.stderr)
	assert.Equal(t, b.stdout, a.stdout)
	assert.True(t, strings.HasPrefix(a.stdout, "cordon "), a.stdout)
	assert.Contains(t, a.stdout, "libseccomp ")
}

// The binary is built as bin/cordon is (the Makefile's tags) and links
// statically: no program interpreter, so no dynamic loader runs at either of
// a run's two process starts (BENCHMARKS.md, start-up, sixth round).
func TestCordonLinksStatically(t *testing.T) {
	f, err := elf.Open(cordonBin)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "%s asks for a dynamic loader", cordonBin)
	}
}

// A build without cgo stops at compile time with a name that says what to
// install, rather than at libseccomp-golang's "build constraints exclude
// all Go files".
func TestBuildWithoutCgoSaysWhatToInstall(t *testing.T) {
	goBin := requireTool(t, "go")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", filepath.Join(t.TempDir(), "cordon"), "../cmd/cordon")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "a cgo-less build must fail: %s", out)
	assert.Contains(t, string(out), "cordon_needs_cgo_install_gcc_and_libseccomp_dev_then_build_with_CGO_ENABLED_1")
	assert.NotContains(t, string(out), "build constraints exclude all Go files")
}
