//go:build unix

package bolt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// lockState takes the exclusive lock bbolt takes on a state file it opens
// for writing (flock), without waiting: a process holding the file (serve)
// makes it fail with ErrInUse. No file: nothing to lock.
func lockState(path string) (unlock func(), err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	fd := int(f.Fd())
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, inUse(path)
		}
		return nil, fmt.Errorf("restore: lock %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(fd, syscall.LOCK_UN); f.Close() }, nil
}
