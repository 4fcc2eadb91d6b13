package supervisor

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKernelStructSizes(t *testing.T) {
	assert.EqualValues(t, 80, sizeofNotif, "struct seccomp_notif")
	assert.EqualValues(t, 24, sizeofNotifResp, "struct seccomp_notif_resp")
}
