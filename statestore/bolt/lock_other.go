//go:build !unix

package bolt

import (
	"errors"
	"io/fs"
	"os"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// lockState opens the state file as bbolt does, which fails while another
// process holds it (ErrInUse), and keeps it open until unlock.
func lockState(path string) (unlock func(), err error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		if errors.Is(err, bbolt.ErrTimeout) {
			return nil, inUse(path)
		}
		return nil, err
	}
	return func() { db.Close() }, nil
}
