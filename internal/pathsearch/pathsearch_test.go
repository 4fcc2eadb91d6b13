package pathsearch

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRepeated(t *testing.T) {
	var r Repeats
	push := []string{"git", "push"}
	assert.False(t, r.Repeated(10, "deny", push), "the first denial is news")
	assert.True(t, r.Repeated(10, "deny", push), "the next PATH entry says nothing new")
	assert.False(t, r.Repeated(11, "allow", []string{"ls"}), "a sibling's exec in between")
	assert.True(t, r.Repeated(10, "deny", push), "does not hide the caller's own repeat")
	assert.False(t, r.Repeated(11, "deny", push), "another caller's denial is its own")
	assert.False(t, r.Repeated(10, "allow", push), "another decision on the same argv is news")
	assert.False(t, r.Repeated(10, "allow", []string{"git", "push "}), "argv is compared word by word")
	assert.False(t, r.Repeated(10, "allow", []string{"git push"}))
}

func TestRepeatedBounded(t *testing.T) {
	var r Repeats
	for pid := range maxCallers + 10 {
		r.Repeated(pid, "deny", []string{"x"})
	}
	assert.LessOrEqual(t, len(r.last), maxCallers+1)
}

// TestRepeatedRecycledPid: a process that got a recycled pid is another
// caller, even with the same argv (an exec storm wraps pids around).
func TestRepeatedRecycledPid(t *testing.T) {
	var r Repeats
	self := os.Getpid()
	assert.False(t, r.Repeated(self, "deny", []string{"x"}))
	r.mu.Lock()
	for pid, key := range r.last {
		r.last[pid] = "1" + key // as if the pid's earlier holder started at another time
	}
	r.mu.Unlock()
	assert.False(t, r.Repeated(self, "deny", []string{"x"}), "a recycled pid's first denial is news")
	assert.True(t, r.Repeated(self, "deny", []string{"x"}))
}
