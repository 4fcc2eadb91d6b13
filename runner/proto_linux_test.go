package runner

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// connPair returns the two ends of a fresh control socketpair as the
// launcher and the init set them up: host receives with SO_PASSCRED through
// the network poller, peer is the init's blocking end (newInitConn). Both
// ends give up after a few seconds, so a protocol bug fails instead of
// hanging.
func connPair(t *testing.T) (host, peer *frameConn) {
	t.Helper()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	require.NoError(t, unix.SetsockoptInt(pair[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1))
	f := os.NewFile(uintptr(pair[0]), "host")
	defer f.Close() // newFrameConn keeps its own copy
	host, err = newFrameConn(f)
	require.NoError(t, err)
	require.NoError(t, host.c.SetDeadline(time.Now().Add(20*time.Second)))
	t.Cleanup(func() { _ = host.close() })
	peer, err = newInitConn(pair[1])
	require.NoError(t, err)
	limit := unix.NsecToTimeval((20 * time.Second).Nanoseconds())
	for _, opt := range []int{unix.SO_RCVTIMEO, unix.SO_SNDTIMEO} {
		require.NoError(t, unix.SetsockoptTimeval(pair[1], unix.SOL_SOCKET, opt, &limit))
	}
	t.Cleanup(func() {
		_ = peer.close()
		unix.Close(pair[1])
	})
	return host, peer
}

// sendAsync sends from a goroutine (a big frame blocks until it is read).
func sendAsync(fc *frameConn, v any, fds ...int) <-chan error {
	done := make(chan error, 1)
	go func() { done <- fc.send(v, fds...) }()
	return done
}

func TestFrameConnRoundTrip(t *testing.T) {
	bigArgv := make([]string, 50000)
	for i := range bigArgv {
		bigArgv[i] = fmt.Sprintf("%06d-%s", i, strings.Repeat("a", 94))
	}
	tests := []struct {
		name string
		msg  configMsg
	}{
		{name: "small", msg: configMsg{Argv: []string{"git", "status"}, Env: []string{"PATH=/bin"}, Dir: "/work", Filter: []byte{1, 2, 3}, Reap: true}},
		{name: "empty", msg: configMsg{}},
		{name: "quotes, newlines and non-ASCII", msg: configMsg{Argv: []string{"", `"'\`, "new\nline", "héllo 日本", "\u2028"}, Filter: make([]byte, 4096)}},
		{name: "5 MB argv", msg: configMsg{Argv: bigArgv, Filter: make([]byte, 8*400)}},
		// A command's arguments, environment and directory are bytes, not
		// text: a Latin-1 file name must reach the command unchanged.
		{name: "invalid UTF-8 kept byte for byte", msg: configMsg{
			Argv: []string{"rm", "caf\xe9.txt", "\xff\xfe"},
			Env:  []string{"LANG=C", "NAME=\xe9t\xe9"},
			Dir:  "/tmp/r\xe9sum\xe9",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host, peer := connPair(t)
			sent := sendAsync(peer, tc.msg)
			var got configMsg
			fds, err := host.recv(&got)
			require.NoError(t, err)
			require.NoError(t, <-sent)
			assert.Empty(t, fds)
			assertSameStrings(t, "argv", tc.msg.Argv, got.Argv)
			assertSameStrings(t, "env", tc.msg.Env, got.Env)
			assert.Equal(t, tc.msg.Dir, got.Dir, "dir")
			assert.Equal(t, tc.msg.Filter, got.Filter, "filter")
			assert.Equal(t, tc.msg.Reap, got.Reap, "reap")
		})
	}
}

// assertSameStrings compares byte for byte and reports the first
// difference only (a 5 MB argv is no use in a failure message).
func assertSameStrings(t *testing.T, what string, want, got []string) {
	t.Helper()
	if !assert.Len(t, got, len(want), what) {
		return
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s[%d] = %q, want %q", what, i, got[i], want[i])
			return
		}
	}
}

// TestFrameConnFramesStayInOrder: several frames written at once are read
// one per recv, in order, from the buffered bytes.
func TestFrameConnFramesStayInOrder(t *testing.T) {
	host, peer := connPair(t)
	var all []byte
	for i := range 5 {
		b := []byte(fmt.Sprintf(`{"kind":"started","signal":%d}`, i))
		all = binary.BigEndian.AppendUint32(all, uint32(len(b)))
		all = append(all, b...)
	}
	_, err := unix.Write(peer.raw, all)
	require.NoError(t, err)
	for i := range 5 {
		var m initMsg
		_, err := host.recv(&m)
		require.NoError(t, err)
		assert.Equal(t, i, m.Signal)
	}
}

func TestFrameConnPassesFD(t *testing.T) {
	host, peer := connPair(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	sent := sendAsync(peer, initMsg{Kind: msgListener}, int(w.Fd()))
	var m initMsg
	fds, err := host.recv(&m)
	require.NoError(t, err)
	require.NoError(t, <-sent)
	w.Close() // the received copy must work on its own
	require.Len(t, fds, 1)
	assert.Equal(t, msgListener, m.Kind)

	flags, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GETFD, 0)
	require.NoError(t, err)
	assert.NotZero(t, flags&unix.FD_CLOEXEC, "received fd must be close-on-exec")

	got := os.NewFile(uintptr(fds[0]), "received")
	_, err = got.Write([]byte("ping"))
	require.NoError(t, err)
	got.Close()
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	assert.Equal(t, "ping", string(b))
}

func TestFrameConnSenderPid(t *testing.T) {
	t.Run("same process", func(t *testing.T) {
		host, peer := connPair(t)
		sent := sendAsync(peer, initMsg{Kind: msgStarted})
		var m initMsg
		_, err := host.recv(&m)
		require.NoError(t, err)
		require.NoError(t, <-sent)
		assert.Equal(t, int32(os.Getpid()), host.pid)
	})
	t.Run("child process", func(t *testing.T) {
		pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		require.NoError(t, err)
		require.NoError(t, unix.SetsockoptInt(pair[0], unix.SOL_SOCKET, unix.SO_PASSCRED, 1))
		hostFile := os.NewFile(uintptr(pair[0]), "host")
		host, err := newFrameConn(hostFile)
		hostFile.Close()
		require.NoError(t, err)
		defer host.close()
		require.NoError(t, host.c.SetDeadline(time.Now().Add(20*time.Second)))
		childEnd := os.NewFile(uintptr(pair[1]), "child")
		c := startChild(t, "send-frame", nil, childEnd)
		childEnd.Close()

		var m initMsg
		_, err = host.recv(&m)
		require.NoError(t, err)
		assert.Equal(t, "from the child", m.Message)
		assert.Equal(t, int32(c.Cmd.Process.Pid), host.pid, "SCM_CREDENTIALS pid is the sender's")
	})
}

func TestFrameConnPeerClosed(t *testing.T) {
	tests := []struct {
		name  string
		bytes []byte
	}{
		{name: "between frames"},
		{name: "inside a frame header", bytes: []byte{0, 0}},
		{name: "inside a frame body", bytes: []byte{0, 0, 0, 10, '{', '"'}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host, peer := connPair(t)
			if len(tc.bytes) > 0 {
				_, err := unix.Write(peer.raw, tc.bytes)
				require.NoError(t, err)
			}
			require.NoError(t, peer.close())
			var m initMsg
			_, err := host.recv(&m)
			assert.ErrorIs(t, err, io.EOF)
		})
	}
}

func TestFrameConnOversizeFrame(t *testing.T) {
	host, peer := connPair(t)
	_, err := unix.Write(peer.raw, binary.BigEndian.AppendUint32(nil, maxFrame+1))
	require.NoError(t, err)
	var m initMsg
	_, err = host.recv(&m)
	require.Error(t, err)
	assert.Contains(t, err.Error(), strconv.Itoa(maxFrame+1))
}

func TestFrameConnMalformedJSON(t *testing.T) {
	host, peer := connPair(t)
	memfd, err := unix.MemfdCreate("cordon-proto-test", unix.MFD_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(memfd)
	marker := "memfd:cordon-proto-test"
	before := countFDLinks(t, marker)

	body := []byte("{not json")
	frame := append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	_, err = unix.SendmsgN(peer.raw, frame, unix.UnixRights(memfd), nil, 0)
	require.NoError(t, err)
	var m initMsg
	fds, err := host.recv(&m)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "decoding")
	assert.Empty(t, fds)
	assert.Equal(t, before, countFDLinks(t, marker), "the descriptor sent with a bad frame must be closed")

	// The stream is still in step: the next frame decodes.
	sent := sendAsync(peer, initMsg{Kind: msgExited, Status: 256})
	_, err = host.recv(&m)
	require.NoError(t, err)
	require.NoError(t, <-sent)
	assert.Equal(t, initMsg{Kind: msgExited, Status: 256}, m)
}

func countFDLinks(t *testing.T, s string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// TestInitConnReadsFromTheHost: the init's blocking end receives what the
// host sends (a frame larger than the socket's buffer, in pieces; a
// descriptor with the frame) and sees the host's close as EOF, which is how
// the init learns that cordon is gone (hostGone).
func TestInitConnReadsFromTheHost(t *testing.T) {
	host, peer := connPair(t)
	big := configMsg{Argv: []string{strings.Repeat("x", 3<<20)}}
	sent := sendAsync(host, big)
	var got configMsg
	fds, err := peer.recv(&got)
	require.NoError(t, err)
	require.NoError(t, <-sent)
	assert.Empty(t, fds)
	require.Len(t, got.Argv, 1)
	assert.Equal(t, big.Argv[0], got.Argv[0])

	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	sent = sendAsync(host, initMsg{Kind: msgHostGo}, int(w.Fd()))
	var m initMsg
	fds, err = peer.recv(&m)
	require.NoError(t, err)
	require.NoError(t, <-sent)
	w.Close()
	require.Len(t, fds, 1)
	assert.Equal(t, msgHostGo, m.Kind)
	flags, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GETFD, 0)
	require.NoError(t, err)
	assert.NotZero(t, flags&unix.FD_CLOEXEC, "received fd must be close-on-exec")
	unix.Close(fds[0])

	gone := hostGone(peer)
	select {
	case <-gone:
		t.Fatal("hostGone fired while the host is there")
	case <-time.After(50 * time.Millisecond):
	}
	require.NoError(t, host.close())
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the init's end did not see the host's close")
	}
}
