package supervisor

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestFilterCompiles(t *testing.T) {
	raw, err := Filter()
	require.NoError(t, err)
	require.NotEmpty(t, raw)
	assert.Zero(t, len(raw)%8, "a BPF program is a whole number of 8-byte instructions")
	assert.LessOrEqual(t, len(raw)/8, 4096, "BPF_MAXINSNS")

	prog, err := decodeFilter(raw)
	require.NoError(t, err)
	// libseccomp's programs start by loading seccomp_data.arch and end in
	// a return; anything else means the bytes were not decoded as BPF.
	assert.Equal(t, unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: 4}, prog[0], "first instruction")
	assert.Equal(t, uint16(unix.BPF_RET), prog[len(prog)-1].Code&0x07, "last instruction is a return")
}

func TestDecodeFilterRoundTrip(t *testing.T) {
	raw, err := Filter()
	require.NoError(t, err)
	prog, err := decodeFilter(raw)
	require.NoError(t, err)
	require.Len(t, prog, len(raw)/8)
	back := make([]byte, 0, len(raw))
	for _, ins := range prog {
		back = binary.NativeEndian.AppendUint16(back, ins.Code)
		back = append(back, ins.Jt, ins.Jf)
		back = binary.NativeEndian.AppendUint32(back, ins.K)
	}
	assert.Equal(t, raw, back)
}

func TestDecodeFilterRejects(t *testing.T) {
	tests := []struct {
		name string
		size int
		ok   bool
	}{
		{name: "empty", size: 0},
		{name: "partial instruction", size: 7},
		{name: "one and a half instructions", size: 12},
		{name: "one instruction", size: 8, ok: true},
		{name: "BPF_MAXINSNS instructions", size: 4096 * 8, ok: true},
		{name: "over BPF_MAXINSNS", size: 4097 * 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prog, err := decodeFilter(make([]byte, tc.size))
			if tc.ok {
				require.NoError(t, err)
				assert.Len(t, prog, tc.size/8)
				return
			}
			assert.Error(t, err)
		})
	}
}

// TestInstallFilter loads the filter in a child (it cannot be undone) and
// checks what InstallFilter promises: a close-on-exec notify listener, the
// filter and no_new_privs on every thread, and ErrListenerBusy for a second
// listener in the same filter chain.
func TestInstallFilter(t *testing.T) {
	requireSeccompNotify(t)
	c := startChild(t, "install-twice", nil, nil)
	var r installReport
	c.NextJSON(10*time.Second, &r)
	require.Empty(t, r.FirstErr, "first InstallFilter")
	assert.GreaterOrEqual(t, r.Fd, 0)
	assert.True(t, r.CloseOnExec, "listener fd must be close-on-exec")
	assert.Equal(t, "anon_inode:seccomp notify", r.Link)
	assert.True(t, r.NoNewPrivs, "no_new_privs set")
	require.NotEmpty(t, r.ThreadModes)
	for tid, mode := range r.ThreadModes {
		assert.Equal(t, "2", mode, "thread %s must run under the filter (TSYNC)", tid)
	}
	assert.True(t, r.SecondBusy, "second InstallFilter: want ErrListenerBusy, got %q", r.SecondErr)
}
