package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/cordon-sandbox/cordon/policy"
	"github.com/cordon-sandbox/cordon/supervisor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestParseIsolation(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Isolation
		wantErr bool
	}{
		{name: "bwrap", in: "bwrap", want: IsolationBwrap},
		{name: "none", in: "none", want: IsolationNone},
		{name: "landlock", in: "landlock", want: IsolationLandlock},
		{name: "auto", in: "auto", want: IsolationAuto},
		{name: "empty", in: "", wantErr: true},
		{name: "upper case", in: "BWRAP", wantErr: true},
		{name: "unknown", in: "docker", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseIsolation(tc.in)
			if tc.wantErr {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "want auto, bwrap, landlock or none", "the message says what is accepted")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestExecError(t *testing.T) {
	tests := []struct {
		name     string
		err      ExecError
		want     string
		wantCode int
	}{
		{name: "bare name not found", err: ExecError{Path: "foo", Errno: unix.ENOENT}, want: "foo: command not found", wantCode: 127},
		{name: "path not found", err: ExecError{Path: "./foo", Errno: unix.ENOENT}, want: "./foo: no such file or directory", wantCode: 127},
		{name: "absolute path not found", err: ExecError{Path: "/opt/foo", Errno: unix.ENOENT}, want: "/opt/foo: no such file or directory", wantCode: 127},
		{name: "not executable", err: ExecError{Path: "./x", Errno: unix.EACCES}, want: "./x: permission denied", wantCode: 126},
		{name: "bare name not executable", err: ExecError{Path: "x", Errno: unix.EACCES}, want: "x: permission denied", wantCode: 126},
		{name: "denied by policy", err: ExecError{Path: "/usr/bin/git", Errno: unix.EPERM, Denied: true}, want: "/usr/bin/git: denied by policy", wantCode: 126},
		{name: "EPERM not from the policy", err: ExecError{Path: "/usr/bin/git", Errno: unix.EPERM}, want: "/usr/bin/git: operation not permitted", wantCode: 126},
		{name: "bad format", err: ExecError{Path: "./script", Errno: unix.ENOEXEC}, want: "./script: exec format error", wantCode: 126},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.err.Error())
			assert.Equal(t, tc.wantCode, tc.err.ExitCode())
		})
	}
}

func TestSetupError(t *testing.T) {
	cause := errors.New("the sandbox exited before it was ready")
	tests := []struct {
		name string
		err  *SetupError
		want string
	}{
		{
			name: "with bubblewrap's detail",
			err:  &SetupError{Err: cause, Detail: "bwrap: setting up uid map: Permission denied\n"},
			want: "sandbox setup failed: bwrap: setting up uid map: Permission denied (the sandbox exited before it was ready)",
		},
		{
			name: "without detail",
			err:  &SetupError{Err: cause},
			want: "sandbox setup failed: the sandbox exited before it was ready",
		},
		{
			name: "blank detail counts as none",
			err:  &SetupError{Err: cause, Detail: " \n\t"},
			want: "sandbox setup failed: the sandbox exited before it was ready",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error = tc.err
			assert.Equal(t, tc.want, err.Error())
			assert.ErrorIs(t, err, ErrSetup)
			assert.ErrorIs(t, err, cause)
			wrapped := errors.Join(errors.New("running"), err)
			var se *SetupError
			assert.ErrorAs(t, wrapped, &se)
			assert.ErrorIs(t, wrapped, ErrSetup)
		})
	}
}

func TestWriteAudit(t *testing.T) {
	rule := &policy.Rule{Decision: policy.Deny, Pattern: "git push", Source: "--deny"}
	at := time.Date(2025, 1, 2, 3, 4, 5, 6000, time.FixedZone("X", 3600))
	base := supervisor.Verdict{
		Time: at, Pid: 42, Syscall: "execve", Arch: "x86_64",
		Exec:    policy.Exec{Argv: []string{"git", "push", "\xff"}, Path: "/usr/bin/git", Resolved: "/usr/bin/git"},
		Latency: 1500 * time.Microsecond,
	}
	tests := []struct {
		name   string
		mutate func(d *supervisor.Verdict)
		want   map[string]any
	}{
		{
			name: "denied by a rule",
			mutate: func(d *supervisor.Verdict) {
				d.Result = policy.Result{Decision: policy.Deny, Rule: rule}
				d.Errno = unix.EPERM
			},
			want: map[string]any{"decision": "deny", "rule": `deny "git push"`, "rule_id": "--deny", "errno": float64(unix.EPERM)},
		},
		{
			name:   "allowed by default",
			mutate: func(d *supervisor.Verdict) { d.Result = policy.Result{Decision: policy.Allow} },
			want:   map[string]any{"decision": "allow", "rule": "default allow"},
		},
		{
			// JSON strings carry text: bytes that are not UTF-8 read as
			// U+FFFD in argv, so the exact bytes go beside them.
			name: "arguments that are not UTF-8",
			mutate: func(d *supervisor.Verdict) {
				d.Result = policy.Result{Decision: policy.Allow}
				d.Exec.Argv = []string{"rm", "rm-\xff"}
				d.Exec.Path = "/bin/\xfe"
			},
			want: map[string]any{"argv": []any{"rm", "rm-\ufffd"}, "argv_b64": []any{"cm0=", "cm0t/w=="},
				"path": "/bin/\ufffd", "path_b64": "L2Jpbi/+"},
		},
		{
			name:   "refused before the policy: missing file",
			mutate: func(d *supervisor.Verdict) { d.Errno = unix.ENOENT },
			want:   map[string]any{"decision": "error", "rule": "", "error": "ENOENT", "errno": float64(unix.ENOENT)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := base
			tc.mutate(&d)
			var buf bytes.Buffer
			writeAudit(&buf, &d)
			require.True(t, bytes.HasSuffix(buf.Bytes(), []byte("\n")), "one line per record")
			assert.Equal(t, 1, bytes.Count(buf.Bytes(), []byte("\n")))
			var rec map[string]any
			require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
			assert.Equal(t, "2025-01-02T02:04:05.000006Z", rec["time"], "UTC, RFC 3339")
			assert.Equal(t, float64(42), rec["pid"])
			assert.Equal(t, float64(1500), rec["latency_us"])
			for k, v := range tc.want {
				assert.Equal(t, v, rec[k], "field %s", k)
			}
			if _, ok := tc.want["errno"]; !ok {
				assert.NotContains(t, rec, "errno")
			}
			if _, ok := tc.want["argv_b64"]; !ok {
				// The base's third argument is the byte 0xff.
				assert.Equal(t, []any{"Z2l0", "cHVzaA==", "/w=="}, rec["argv_b64"], "the exact bytes beside U+FFFD")
				assert.NotContains(t, rec, "path_b64", "only for a path that is not UTF-8")
			}
			d.Exec.Argv, d.Exec.Path = []string{"git", "push"}, "/usr/bin/git"
			buf.Reset()
			writeAudit(&buf, &d)
			assert.NotContains(t, buf.String(), "_b64", "only for bytes that are not UTF-8")
		})
	}
}
