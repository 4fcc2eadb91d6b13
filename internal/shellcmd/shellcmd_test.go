package shellcmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestShellScript(t *testing.T) {
	for _, tc := range []struct {
		argv   []string
		script string
		ok     bool
	}{
		{[]string{"bash", "-c", "ls"}, "ls", true},
		{[]string{"/bin/sh", "-ec", "ls"}, "ls", true},
		{[]string{"bash", "-o", "pipefail", "-c", "ls"}, "ls", true},
		{[]string{"bash", "--norc", "-lc", "ls", "arg0"}, "ls", true},
		{[]string{"-bash", "-c", "ls"}, "ls", true},
		{[]string{"bash", "script.sh"}, "", false},
		{[]string{"bash", "-c"}, "", false},
		{[]string{"python3", "-c", "print()"}, "", false},
	} {
		s, _, ok := Script(tc.argv)
		assert.Equal(t, tc.ok, ok, "%q", tc.argv)
		assert.Equal(t, tc.script, s, "%q", tc.argv)
	}
}
