package runner

import "testing"

func TestUnixSocketPath(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"0000000000000000: 00000002 00000000 00010000 0001 01 12345 /run/a.sock", "/run/a.sock"},
		{"0000000000000000: 00000002 00000000 00010000 0001 01    77 /var/tmp/my svc.sock", "/var/tmp/my svc.sock"},
		{"0000000000000000: 00000002 00000000 00010000 0001 01 12345 /x/trailing ", "/x/trailing "},
		{"0000000000000000: 00000002 00000000 00010000 0001 01 12345 @abstract", "@abstract"},
		{"0000000000000000: 00000002 00000000 00010000 0001 01 12345", ""},
	} {
		got, ok := unixSocketPath(tc.line)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("unixSocketPath(%q) = %q, %v; want %q", tc.line, got, ok, tc.want)
		}
	}
}
