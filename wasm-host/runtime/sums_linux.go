package runtime

import (
	"os"
	"strconv"
	"syscall"
	"time"
)

// fileIdentity is what tells a module file's content unchanged without
// reading it: device, inode, size, and modification and change times to
// the nanosecond.
func fileIdentity(fi os.FileInfo) (string, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	b := []byte("v1")
	for _, n := range []int64{int64(st.Dev), int64(st.Ino), st.Size, st.Mtim.Nano(), st.Ctim.Nano()} {
		b = strconv.AppendInt(append(b, ' '), n, 10)
	}
	return string(b), true
}

func changeTime(fi os.FileInfo) (time.Time, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(0, st.Ctim.Nano()), true
}
