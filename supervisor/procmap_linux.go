package supervisor

import (
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// procmapQuery is struct procmap_query (include/uapi/linux/fs.h, Linux
// 6.11+): one question to the PROCMAP_QUERY ioctl on /proc/PID/maps about
// the mapping that covers an address.
type procmapQuery struct {
	Size        uint64 // in: sizeof(struct procmap_query)
	QueryFlags  uint64 // in
	QueryAddr   uint64 // in
	VMAStart    uint64 // out
	VMAEnd      uint64 // out
	VMAFlags    uint64 // out: PROCMAP_QUERY_VMA_*
	VMAPageSize uint64 // out
	VMAOffset   uint64 // out
	Inode       uint64 // out
	DevMajor    uint32 // out
	DevMinor    uint32 // out
	VMANameSize uint32 // in/out: 0, no name wanted
	BuildIDSize uint32 // in/out: 0, no build ID wanted
	VMANameAddr uint64 // in
	BuildIDAddr uint64 // in
}

const (
	// procmapQueryIoctl is PROCMAP_QUERY: _IOWR('f', 17, struct procmap_query).
	procmapQueryIoctl = 3<<30 | uint(unsafe.Sizeof(procmapQuery{}))<<16 | 'f'<<8 | 17
	// procmapVMAShared is PROCMAP_QUERY_VMA_SHARED: the mapping is shared
	// (the 's' of maps' permissions).
	procmapVMAShared = 0x08
	// procmapVMAWritable is PROCMAP_QUERY_VMA_WRITABLE (the 'w').
	procmapVMAWritable = 0x02
)

// procmapStep locates addr's mapping with one PROCMAP_QUERY on mapsFD (a
// /proc/PID/maps descriptor): its end, whether it is safe as readMaps
// defines it, anonymous and writable. errno is ENOENT when no mapping covers addr, and ENOTTY or
// EINVAL when the kernel has no PROCMAP_QUERY.
func procmapStep(mapsFD int, addr uint64, sv *sandboxView) (end uint64, safe, anon, writable bool, errno unix.Errno) {
	q := procmapQuery{QueryAddr: addr} // no flags: the mapping covering addr, or ENOENT
	q.Size = uint64(unsafe.Sizeof(q))
	for {
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(mapsFD), uintptr(procmapQueryIoctl), uintptr(unsafe.Pointer(&q)))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, false, false, false, e
		}
		break
	}
	if q.VMAStart > addr || q.VMAEnd <= addr {
		return 0, false, false, false, unix.ENOENT // not what was asked: never trusted
	}
	anon = q.Inode == 0
	writable = q.VMAFlags&procmapVMAWritable != 0
	if q.VMAFlags&procmapVMAShared == 0 {
		if anon {
			safe = true // private anonymous: only the caller writes it
		} else {
			safe = !sv.writableDevice(unix.Mkdev(q.DevMajor, q.DevMinor))
		}
	}
	return q.VMAEnd, safe, anon, writable, 0
}

// unsafeRangeQuery is unsafeRange with PROCMAP_QUERY: one ioctl per mapping
// the ranges touch, instead of reading and parsing the whole of
// /proc/PID/maps (every line formatted by the kernel, every path mangled)
// on every exec. ok is false when the kernel does not have the ioctl (older
// than 6.11) or maps cannot be opened: the caller then reads maps as before.
func unsafeRangeQuery(pid int, ranges []span, sv *sandboxView) (at uint64, why string, pieces []piece, ok bool) {
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/maps", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, "", nil, false
	}
	defer unix.Close(fd)
	for _, r := range ranges {
		at := r.lo
		for at < r.hi {
			end, safe, anon, writable, errno := procmapStep(fd, at, sv)
			switch errno {
			case 0:
			case unix.ENOENT:
				return at, "lie outside any mapping", nil, true
			case unix.ENOTTY, unix.EINVAL:
				return 0, "", nil, false
			default:
				return at, "cannot be located: " + errno.Error(), nil, true
			}
			if !safe {
				return at, "lie in memory another process or a file write could change", nil, true
			}
			pieces = cut(pieces, r, at, end, anon, writable)
			at = end
		}
	}
	return 0, "", pieces, true
}
