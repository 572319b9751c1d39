//go:build unix

package localtrust

import (
	"io/fs"
	"syscall"
)

// unixOwners: files have an owner and mode bits to check.
const unixOwners = true

// ownerOf is the file's owner; -1 when the system does not say.
func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
