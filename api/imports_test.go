package api

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// api is a leaf: its non-test files import the standard library only, so a
// program that talks to the daemon builds without cgo and on any OS.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			path := strings.Trim(imp.Path.Value, `"`)
			first, _, _ := strings.Cut(path, "/")
			assert.NotContains(t, first, ".", "%s imports %s: api may import the standard library only", name, path)
			assert.NotEqual(t, "C", path, "%s uses cgo", name)
		}
		n++
	}
	require.NotZero(t, n)
}

// The same, as the build sees it: no cordon package among api's
// dependencies, for any OS.
func TestDependsOnNoCordonPackage(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		testcap.SkipOrFail(t, "no go command on PATH (%v); TestImportsOnlyTheStandardLibrary covers the direct imports", err)
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		cmd := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", ".")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		for _, dep := range strings.Fields(string(out)) {
			if dep == "github.com/cordon-sandbox/cordon/api" {
				continue
			}
			assert.False(t, strings.HasPrefix(dep, "github.com/cordon-sandbox/cordon"), "GOOS=%s: api depends on %s", goos, dep)
			first, _, _ := strings.Cut(dep, "/")
			assert.NotContains(t, first, ".", "GOOS=%s: api depends on %s, outside the standard library", goos, dep)
		}
	}
}
