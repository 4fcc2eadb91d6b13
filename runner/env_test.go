package runner

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWorkloadEnv(t *testing.T) {
	in := []string{"CORDON_TOKEN=secret", "PATH=/bin", "CORDON_HOST=unix:///s", "XCORDON_=kept", "CORDON_=", "FOO=bar"}
	assert.Equal(t, []string{"PATH=/bin", "XCORDON_=kept", "FOO=bar"}, WorkloadEnv(in))
	assert.Empty(t, WorkloadEnv(nil))
}
