package firmwarestore

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/slipway-dev/slipway/design"
)

// fetch downloads img into the cache directory (bounded in size and
// time), hashing as it writes; a wrong hash removes it.
func (s *Store) fetch(ctx context.Context, img design.FirmwareImage, want string, l Label) (string, error) {
	dst := filepath.Join(s.cfg.CacheDir, want)
	if ok, err := s.cached(dst, want, l); ok || err != nil {
		return dst, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, img.URL, nil)
	if err != nil {
		return "", fmt.Errorf("%s: %s", l.what(img), redactErr(err, img.URL))
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s: download: %s", l.what(img), redactErr(err, img.URL))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: download answered %s", l.what(img), resp.Status)
	}
	return s.keep(resp.Body, img, want, l)
}

// keep copies r into the cache directory, hashing it as it writes: kept
// under its hash when it is want's, removed when not.
func (s *Store) keep(r io.Reader, img design.FirmwareImage, want string, l Label) (string, error) {
	dst := filepath.Join(s.cfg.CacheDir, want)
	if ok, err := s.cached(dst, want, l); ok || err != nil {
		return dst, err
	}
	tmp, err := os.CreateTemp(s.cfg.CacheDir, ".partial-*")
	if err != nil {
		return "", fmt.Errorf("%s: %w", l.what(img), err)
	}
	defer os.Remove(tmp.Name()) // gone once renamed
	got, _, err := hashBounded(r, l.bound(s.cfg.MaxBytes), tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("%s: read: %s", l.what(img), redactErr(err, img.URL))
	}
	if got != want {
		return "", mismatch(l, img, want, got)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", fmt.Errorf("%s: %w", l.what(img), err)
	}
	return dst, nil
}

// cached reports whether the cache holds the image already (from an
// earlier run): it is hashed again before it is trusted.
func (s *Store) cached(path, want string, l Label) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	got, _, err := hashBounded(f, l.bound(s.cfg.MaxBytes), io.Discard)
	if err != nil || got != want {
		_ = os.Remove(path) // corrupt or partial: fetched again
		return false, nil
	}
	return true, nil
}

// redactErr is err's text with the URL's password, when it has one,
// taken out.
func redactErr(err error, raw string) string {
	msg := err.Error()
	u, perr := url.Parse(raw)
	if perr != nil || u.User == nil {
		return msg
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return msg
}
