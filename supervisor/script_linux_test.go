package supervisor

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestShebang pins the #! parser to binfmt_script's rules: what cordon
// decides must be what the kernel runs (the third red team passed "push"
// past a check that saw "push\x00zz", and a 256-byte line without a
// newline).
func TestShebang(t *testing.T) {
	long := "#!/bin/echo push" + strings.Repeat(" ", 300-16)
	tests := []struct {
		name   string
		head   string
		interp string
		args   []string
		ok     bool
	}{
		{"plain", "#!/bin/sh\necho\n", "/bin/sh", nil, true},
		{"argument", "#!/usr/bin/env python3\n", "/usr/bin/env", []string{"python3"}, true},
		{"rest of the line is one argument", "#!/bin/sh -e -x \t\n", "/bin/sh", []string{"-e -x"}, true},
		{"tab separates", "#!/bin/sh\t-e\n", "/bin/sh", []string{"-e"}, true},
		{"leading spaces", "#!  /bin/sh\n", "/bin/sh", nil, true},
		{"argument ends at a NUL", "#!/bin/echo push\x00zz\n", "/bin/echo", []string{"push"}, true},
		{"interpreter ends at a NUL, no argument", "#!/bin/echo\x00 push\n", "/bin/echo", nil, true},
		{"an argument that is only a NUL is passed empty", "#!/bin/echo \x00push\n", "/bin/echo", []string{""}, true},
		{"no newline, short file", "#!/bin/echo push", "/bin/echo", []string{"push"}, true},
		{"no newline in 256 bytes: trailing spaces trimmed", long, "/bin/echo", []string{"push"}, true},
		// The kernel's line ends before the buffer's last byte: the Z is
		// not part of it, and the spaces before it are trimmed.
		{"no newline, the 256th byte is not part of the line", long[:255] + "Z", "/bin/echo", []string{"push"}, true},
		{"interpreter cut short", "#!" + strings.Repeat("a", 300), "", nil, false},
		{"only spaces", "#!   \n", "", nil, false},
		{"no #!", "\x7fELF", "", nil, false},
		{"empty", "", "", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			interp, args, ok := shebang([]byte(tc.head))
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.interp, interp)
			assert.Equal(t, tc.args, args)
		})
	}
}
