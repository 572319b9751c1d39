package firmwarestore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/slipway-dev/slipway/design"
)

// verifyInPlace checks an OS image's file of the image directory where it
// is: no copy (an image of 64 GiB would take its size twice on disk). Its
// file's identity, size and modification time are kept: a file replaced
// or rewritten since is verified again before it is used. (The
// provisioner checks the SHA-256 of what it receives too: MAAS refuses an
// upload whose content differs.)
func (s *Store) verifyInPlace(f *os.File, path string, img design.FirmwareImage, want string, l Label) (string, error) {
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("%s: %w", l.what(img), err)
	}
	got, _, err := hashBounded(f, l.bound(s.cfg.MaxBytes), io.Discard)
	if err != nil {
		return "", fmt.Errorf("%s: %w", l.what(img), err)
	}
	if got != want {
		return "", mismatch(l, img, want, got)
	}
	s.mu.Lock()
	s.stamps[want] = fi
	s.mu.Unlock()
	return path, nil
}

// changed reports whether the file an OS image was verified in place at
// is no longer the one verified (s.mu held).
func (s *Store) changed(sum, path string) bool {
	was, ok := s.stamps[sum]
	if !ok {
		return false
	}
	fi, err := os.Stat(path)
	return err != nil || !os.SameFile(was, fi) || fi.Size() != was.Size() || !fi.ModTime().Equal(was.ModTime())
}

// remember records in the cache's index that image's wanted version is
// sum, and evicts the version it had before when no other image names it
// and no fetch of it runs: the cache keeps the newest version asked of
// each image, not every version ever synced. The index is a file per
// image in the cache directory (.image-<sha256 of the name>), so a
// restart evicts what an earlier run kept.
func (s *Store) remember(image, sum string) {
	if s.cfg.CacheDir == "" {
		return
	}
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	idx := s.indexFile(image)
	prev := readIndex(idx)
	if prev == sum {
		return
	}
	tmp := idx + ".new"
	if os.WriteFile(tmp, []byte(sum+"\n"), 0o600) != nil || os.Rename(tmp, idx) != nil {
		_ = os.Remove(tmp)
		return // kept: evicted at a later call
	}
	if prev == "" || s.indexed(prev) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, running := s.busy[prev]; running {
		return
	}
	if p, ok := s.paths[prev]; ok && filepath.Dir(p) != filepath.Clean(s.cfg.CacheDir) {
		return // a file of the image directory: not the cache's to remove
	}
	delete(s.paths, prev)
	_ = os.Remove(filepath.Join(s.cfg.CacheDir, prev))
}

func (s *Store) indexFile(image string) string {
	h := sha256.Sum256([]byte(image))
	return filepath.Join(s.cfg.CacheDir, ".image-"+hex.EncodeToString(h[:16]))
}

// readIndex is the version an index file names ("" when none or not a
// SHA-256).
func readIndex(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 128))
	sum := strings.TrimSpace(string(b))
	if !hexSHA.MatchString(sum) {
		return ""
	}
	return sum
}

// indexed reports whether some image's index names sum (s.idxMu held).
func (s *Store) indexed(sum string) bool {
	idx, _ := filepath.Glob(filepath.Join(s.cfg.CacheDir, ".image-*"))
	for _, p := range idx {
		if !strings.HasSuffix(p, ".new") && readIndex(p) == sum {
			return true
		}
	}
	return false
}
