package seccomp

import (
	"testing"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
)

func TestStructSizes(t *testing.T) {
	l := CompiledLayout()
	assert.EqualValues(t, 80, l.Sizes.Notif, "struct seccomp_notif")
	assert.EqualValues(t, 24, l.Sizes.NotifResp, "struct seccomp_notif_resp")
	assert.EqualValues(t, 64, l.Sizes.Data, "struct seccomp_data")
	assert.EqualValues(t, 0, l.OffsetNr, "seccomp_data.nr")
	assert.EqualValues(t, 4, l.OffsetArch, "seccomp_data.arch")
	assert.EqualValues(t, 8, l.SockFilter, "struct sock_filter")
	assert.EqualValues(t, 16, l.SockFprog, "struct sock_fprog")
}

// TestStructSizesMatchRunningKernel asks the running kernel for its sizes.
// Both directions matter: the kernel writes its own sizeof(struct
// seccomp_notif) on RECV and reads its own sizeof(struct seccomp_notif_resp)
// on SEND, so a larger kernel struct would overrun ours, and a smaller one
// would mean our layout is not the kernel's.
func TestStructSizesMatchRunningKernel(t *testing.T) {
	testcap.RequireSeccompNotify(t)
	sz, err := GetNotifSizes()
	if err != nil {
		testcap.SkipOrFail(t, "%v", err)
	}
	assert.Equal(t, CompiledLayout().Sizes, sz)
}
