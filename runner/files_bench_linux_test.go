package runner

import (
	"os"
	"testing"

	"github.com/cordon-sandbox/cordon/bwrap"
	"github.com/cordon-sandbox/cordon/policy"
)

// BenchmarkPlanFiles expands the built-in files rules for a sandbox whose
// working directory is CORDON_BENCH_TREE (default: this package's module
// root).
func BenchmarkPlanFiles(b *testing.B) {
	dir := os.Getenv("CORDON_BENCH_TREE")
	if dir == "" {
		dir = ".."
	}
	r, w := policy.BuiltinFiles()
	fp := policy.FilePolicy{DenyRead: r, DenyWrite: w}
	home, _ := os.UserHomeDir()
	for i := 0; i < b.N; i++ {
		fl, err := planFiles(fp, bwrap.Spec{Dir: dir}, home, true)
		if err != nil {
			b.Fatal(err)
		}
		fl.cleanup()
	}
}
