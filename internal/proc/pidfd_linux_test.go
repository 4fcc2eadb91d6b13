package proc

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestPidfdAlive(t *testing.T) {
	cmd := exec.Command("sleep", "10")
	require.NoError(t, cmd.Start())
	fd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	assert.True(t, PidfdAlive(fd))
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	assert.False(t, PidfdAlive(fd), "exited")
	assert.False(t, PidfdAlive(-1), "not a descriptor")
}
