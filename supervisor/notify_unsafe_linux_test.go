package supervisor

import (
	"testing"
	"unsafe"

	"github.com/cordon-sandbox/cordon/internal/testcap"
	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

func TestKernelStructSizes(t *testing.T) {
	assert.EqualValues(t, 80, sizeofNotif, "struct seccomp_notif")
	assert.EqualValues(t, 24, sizeofNotifResp, "struct seccomp_notif_resp")
}

// seccompNotifSizes mirrors struct seccomp_notif_sizes (linux/seccomp.h).
type seccompNotifSizes struct {
	Notif     uint16
	NotifResp uint16
	Data      uint16
}

// TestKernelStructSizesMatchRunningKernel asks the running kernel for its
// sizes (seccomp(2) SECCOMP_GET_NOTIF_SIZES). Both directions matter: the
// kernel writes its own sizeof(struct seccomp_notif) on RECV and reads its
// own sizeof(struct seccomp_notif_resp) on SEND, so a larger kernel struct
// would overrun ours, and a smaller one would mean our layout is not the
// kernel's.
func TestKernelStructSizesMatchRunningKernel(t *testing.T) {
	requireSeccompNotify(t)
	var sz seccompNotifSizes
	// No x/sys wrapper exists for seccomp(2); see seccomp(2).
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_NOTIF_SIZES, 0, uintptr(unsafe.Pointer(&sz))); e != 0 {
		testcap.SkipOrFail(t, "seccomp(SECCOMP_GET_NOTIF_SIZES): %v", e)
	}
	assert.EqualValues(t, sz.Notif, sizeofNotif, "struct seccomp_notif: kernel %d bytes, ours %d", sz.Notif, sizeofNotif)
	assert.EqualValues(t, sz.NotifResp, sizeofNotifResp, "struct seccomp_notif_resp: kernel %d bytes, ours %d", sz.NotifResp, sizeofNotifResp)
	assert.EqualValues(t, sz.Data, unsafe.Sizeof(seccompData{}), "struct seccomp_data: kernel %d bytes, ours %d", sz.Data, unsafe.Sizeof(seccompData{}))
}
