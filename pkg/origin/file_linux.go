//go:build linux

package origin

import (
	"io/fs"
	"strconv"
	"syscall"
)

// fileIdentity is the part of a file's version beyond size and mtime:
// "-<inode>-<ctime ns>". A file replaced by rename is a new inode, even
// within one tick of the file clock or on a file system with 1- or 2-second
// timestamps; ctime cannot be set from user space, so a replacement that
// restores the old mtime (cp -p, rsync -t, touch -d) still moves it.
func fileIdentity(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return "-" + strconv.FormatUint(st.Ino, 10) + "-" + strconv.FormatInt(st.Ctim.Nano(), 10)
}
