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

func TestHideRaced(t *testing.T) {
	hidden := []string{"/var/tmp/a b.sock", "/srv/d.sock"}
	for _, tc := range []struct {
		detail string
		want   bool
	}{
		{"bwrap: Can't create file at /var/tmp/a b.sock: Read-only file system\n", true},
		{"bwrap: Can't create file at /srv/d.sock: No such device or address\n", true},
		{"bwrap: Can't bind mount /oldroot/dev/null on /newroot/srv/d.sock: Unable to mount source on destination: No such file or directory\n", true},
		{"bwrap: Can't mkdir parents for /srv/d.sock: Read-only file system\n", true},
		{"bwrap: Can't create file at /home/u/project/x: Read-only file system\n", false},
		{"bwrap: setting up uid map: Permission denied\n", false},
	} {
		_, got := hideRaced(&SetupError{Err: errNotReady, Detail: tc.detail}, hidden)
		if got != tc.want {
			t.Errorf("hideRaced(%q) = %v, want %v", tc.detail, got, tc.want)
		}
	}
	if _, got := hideRaced(nil, hidden); got {
		t.Error("hideRaced(nil) = true")
	}
}
