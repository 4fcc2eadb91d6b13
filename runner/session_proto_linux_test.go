package runner

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Frames sent back to back can come out of one stream read together with
// the descriptors of one of them: each frame must still get its own.
func TestRecvQueuedKeepsDescriptorsWithTheirFrames(t *testing.T) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	a, b := os.NewFile(uintptr(pair[0]), "a"), os.NewFile(uintptr(pair[1]), "b")
	ca, err := newFrameConn(a)
	require.NoError(t, err)
	a.Close()
	defer ca.close()
	cb, err := newFrameConn(b)
	require.NoError(t, err)
	b.Close()
	defer cb.close()

	// Descriptors whose identity the receiver can check: the read ends of
	// pipes, each with a different byte waiting.
	pipe := func(c byte) int {
		var p [2]int
		require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
		_, err := unix.Write(p[1], []byte{c})
		require.NoError(t, err)
		unix.Close(p[1])
		return p[0]
	}
	sent := []struct {
		id  string
		fds []int
	}{
		{"none", nil},
		{"two", []int{pipe('x'), pipe('y')}},
		{"none-again", nil},
		{"one", []int{pipe('z')}},
	}
	for _, s := range sent {
		require.NoError(t, ca.send(sessMsg{Kind: msgSpawned, ID: s.id, NFDs: len(s.fds)}, s.fds...))
		closeAll(s.fds)
	}
	want := map[string]string{"none": "", "two": "xy", "none-again": "", "one": "z"}
	for range sent {
		var m sessMsg
		require.NoError(t, cb.recvQueued(&m))
		fds, err := cb.takeFDs(m.NFDs)
		require.NoError(t, err)
		got := ""
		for _, fd := range fds {
			buf := make([]byte, 1)
			n, _ := unix.Read(fd, buf)
			got += string(buf[:n])
			unix.Close(fd)
		}
		assert.Equal(t, want[m.ID], got, "frame %s", m.ID)
	}
	_, err = cb.takeFDs(1)
	assert.Error(t, err, "a frame that announces more descriptors than arrived")
}

// A large frame with descriptors is delivered whole even when the socket
// takes it in parts.
func TestSendAllLargeFrame(t *testing.T) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	a, b := os.NewFile(uintptr(pair[0]), "a"), os.NewFile(uintptr(pair[1]), "b")
	ca, err := newFrameConn(a)
	require.NoError(t, err)
	a.Close()
	defer ca.close()
	cb, err := newFrameConn(b)
	require.NoError(t, err)
	b.Close()
	defer cb.close()

	big := make([][]byte, 16)
	for i := range big {
		big[i] = make([]byte, 64<<10)
		big[i][0] = byte(i)
	}
	devnull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devnull.Close()
	done := make(chan error, 1)
	go func() { done <- ca.send(sessMsg{Kind: msgSpawn, ID: "big", Argv: big, NFDs: 1}, int(devnull.Fd())) }()
	var m sessMsg
	require.NoError(t, cb.recvQueued(&m))
	require.NoError(t, <-done)
	fds, err := cb.takeFDs(m.NFDs)
	require.NoError(t, err)
	require.Len(t, fds, 1)
	unix.Close(fds[0])
	require.Len(t, m.Argv, 16)
	assert.Equal(t, byte(15), m.Argv[15][0])
}
