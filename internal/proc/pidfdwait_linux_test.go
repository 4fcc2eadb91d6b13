package proc

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestPidfdWait(t *testing.T) {
	long := exec.Command("sleep", "30")
	require.NoError(t, long.Start())
	t.Cleanup(func() { _ = long.Process.Kill(); _ = long.Wait() })
	fd, err := unix.PidfdOpen(long.Process.Pid, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	assert.False(t, PidfdWait(fd, time.Now().Add(20*time.Millisecond)), "still running at the deadline")
	assert.False(t, PidfdWait(fd, time.Now().Add(-time.Second)), "a deadline already past")

	short := exec.Command("sleep", "0.05")
	require.NoError(t, short.Start())
	sfd, err := unix.PidfdOpen(short.Process.Pid, 0)
	require.NoError(t, err)
	defer unix.Close(sfd)
	assert.True(t, PidfdWait(sfd, time.Now().Add(10*time.Second)), "exits before the deadline")
	assert.False(t, PidfdAlive(sfd))
	_ = short.Wait()
	assert.True(t, PidfdWait(-1, time.Now()))
}
