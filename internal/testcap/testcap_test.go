package testcap

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The gates must not skip on a host that has what they check (the
// development VM and CI have all three); under CI=true a skip would fail.
func TestGates(t *testing.T) {
	RequireSeccompNotify(t)
	assert.NotEmpty(t, RequireBwrap(t))
	RequirePtrace(t)
}
