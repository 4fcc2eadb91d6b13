package tests

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHelpHasExamples(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"doctor", "--help"}, {"version", "--help"}, {"completion", "--help"}} {
		r := cordon(t, args...)
		assert.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stdout, "Example", "%v has an example", args)
	}
	r := cordon(t)
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "Usage:", "no command prints help")
}

func TestVersionAndCompletion(t *testing.T) {
	r := cordon(t, "version")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^cordon \S+ \(go\S+, libseccomp \d+\.\d+\.\d+\)\n$`, r.stdout)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		r := cordon(t, "completion", sh)
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "cordon")
	}
}
