package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseExports(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"dash", "export A='1'\nexport B='x y'\n", []string{"A=1", "B=x y"}},
		{"dash embedded quote", `export Q='it'"'"'s'` + "\n", []string{"Q=it's"}},
		{"dash newline in value", "export NL='a\nb'\n", []string{"NL=a\nb"}},
		{"exported without value", "export EMPTY=''\nexport UNSET\n", []string{"EMPTY="}},
		{"bash posix mode", `export D="a \"b\" \$c \\ d"` + "\n", []string{`D=a "b" $c \ d`}},
		{"bash", `declare -x H="/root"` + "\n" + `declare -x OLDPWD` + "\n", []string{"H=/root"}},
		{"bash ansi-c", `declare -x C=$'a\tb\x41\101\n'` + "\n", []string{"C=a\tbAA\n"}},
		{"bytes that are not UTF-8", "export BIN='\xff\x01'\n", []string{"BIN=\xff\x01"}},
		{"value with =", "export E='a=b'\n", []string{"E=a=b"}},
		{"empty", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseExports(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	for _, bad := range []string{"export A='unterminated\n", "echo hi\n", "export 1A='x'\n", `export A="x`} {
		_, err := parseExports(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestParseSnapshot(t *testing.T) {
	b := []byte("noise" + carryBegin + "/work/dir\n\x00export A='1'\n" + carryEnd + "trailing")
	st, err := parseSnapshot(b)
	require.NoError(t, err)
	assert.Equal(t, "/work/dir", st.cwd)
	assert.Equal(t, []string{"A=1"}, st.env)

	st, err = parseSnapshot([]byte(carryBegin + "\x00" + carryEnd))
	require.NoError(t, err)
	assert.Empty(t, st.cwd, "pwd failed (removed directory)")

	for _, bad := range []string{"", carryBegin + "/x\n\x00export A='1'\n", "/x\x00" + carryEnd} {
		_, err := parseSnapshot([]byte(bad))
		assert.ErrorIs(t, err, errNoSnapshot, "%q", bad)
	}
}

func TestCarryAfter(t *testing.T) {
	prev := carryState{cwd: "/home", env: []string{"KEEP=session", "PATH=/bin"}}
	tests := []struct {
		name      string
		startDir  string
		overrides []string
		snap      carryState
		want      carryState
	}{
		{"the command moved", "/home", nil, carryState{cwd: "/tmp", env: prev.env}, carryState{cwd: "/tmp", env: prev.env}},
		{"a request dir is not kept", "/", nil, carryState{cwd: "/", env: prev.env}, carryState{cwd: "/home", env: prev.env}},
		{"a request dir the command left is kept", "/", nil, carryState{cwd: "/etc", env: prev.env}, carryState{cwd: "/etc", env: prev.env}},
		{
			"an untouched override reverts", "/home", []string{"KEEP=req", "ONLY=once"},
			carryState{cwd: "/home", env: []string{"KEEP=req", "ONLY=once", "PATH=/bin"}},
			carryState{cwd: "/home", env: []string{"KEEP=session", "PATH=/bin"}},
		},
		{
			"an override the command changed stays", "/home", []string{"KEEP=req"},
			carryState{cwd: "/home", env: []string{"KEEP=mine", "PATH=/bin"}},
			carryState{cwd: "/home", env: []string{"KEEP=mine", "PATH=/bin"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, carryAfter(prev, tc.startDir, tc.overrides, tc.snap))
		})
	}
}

func TestMergeEnv(t *testing.T) {
	assert.Equal(t, []string{"A=2", "B=1", "C=3"}, mergeEnv([]string{"A=1", "B=1"}, []string{"A=2", "C=3"}))
	assert.Nil(t, mergeEnv(nil, nil))
}
