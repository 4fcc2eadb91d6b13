package proc

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	// A real line, its command name holding spaces and parentheses.
	line := "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 777 1 2 3 " +
		"94000 94500 140000 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 95000 95100 96000 140100 140200 140300 140400 0\n"
	st, err := ParseStat([]byte(line))
	require.NoError(t, err)
	assert.Equal(t, byte('S'), st.State)
	assert.Equal(t, 1, st.PPid)
	assert.Equal(t, uint64(777), st.StartTime)
	assert.Equal(t, [10]uint64{94000, 94500, 140000, 95000, 95100, 96000, 140100, 140200, 140300, 140400}, st.Layout)

	for _, bad := range []string{"", "4242 (a", "4242 (a) S", "4242 (a) S x 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7"} {
		_, err := ParseStat([]byte(bad))
		assert.ErrorIs(t, err, ErrMalformed, "%q", bad)
	}
}

func TestReadStatSelf(t *testing.T) {
	st, err := ReadStat(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, os.Getppid(), st.PPid)
	assert.NotZero(t, st.StartTime)
	assert.NotZero(t, st.Layout[6], "arg_start of a process this one may trace")
}

func TestParseStatus(t *testing.T) {
	st := ParseStatus([]byte("Name:\tx\nTgid:\t900\nPPid:\t7\nTracerPid:\t0\nThreads:\t3\nNStgid:\t900\t12\nNSpid:\t901\t13\n"))
	assert.Equal(t, Status{Tgid: 900, PPid: 7, TracerPid: 0, Threads: 3, NSTgid: 12, NSPid: 13}, st)
	assert.Equal(t, Status{Tgid: -1, PPid: -1, TracerPid: -1, Threads: -1, NSTgid: -1, NSPid: -1}, ParseStatus([]byte("PPid:\n")))

	self, err := ReadStatus(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, os.Getppid(), self.PPid)
	assert.Greater(t, self.Threads, 0)
}

func TestParseChildren(t *testing.T) {
	assert.Equal(t, []int{5, 12, 7}, ParseChildren([]byte("12 7 \n"), []int{5}))
	assert.Empty(t, ParseChildren([]byte(" x -1 0"), nil))
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 5 1 2 3 4 5 6 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 7 8 9 10 11 12 13 0\n"))
	f.Add([]byte("2 ()) )) R 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseStat(b)
		if err == nil && st.State == 0 {
			t.Fatalf("parsed without a state: %q", b)
		}
	})
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte("PPid:\t1\nThreads:\t2\nNStgid:\t3\t4\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = ParseStatus(b) // never panics
	})
}
