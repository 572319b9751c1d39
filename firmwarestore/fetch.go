package firmwarestore

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/design"
)

// fetch downloads img into the cache directory, hashing as it writes; a
// wrong hash removes it. The download is bounded in size, in time (the
// fetch timeout, plus an image of known size at the minimum rate) and in
// idleness (nothing received for the idle timeout stops it).
func (s *Store) fetch(ctx context.Context, img design.FirmwareImage, want string, l Label) (string, error) {
	dst := filepath.Join(s.cfg.CacheDir, want)
	if ok, err := s.cached(dst, want, l); ok || err != nil {
		return dst, err
	}
	limit := s.fetchLimit(l)
	ctx, cancel := context.WithTimeoutCause(ctx, limit, fmt.Errorf("the download took longer than its bound of %v (%s)", limit, s.limitWhy(l)))
	defer cancel()
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	idle := time.AfterFunc(s.cfg.IdleTimeout, func() {
		stop(fmt.Errorf("nothing was received for %v, the idle timeout%s", s.cfg.IdleTimeout, l.knob("imageFetchIdleTimeout")))
	})
	defer idle.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, img.URL, nil)
	if err != nil {
		return "", fmt.Errorf("%s: %s", l.what(img), redactErr(err, img.URL))
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%s: download: %s", l.what(img), stopped(ctx, err, img.URL))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: download answered %s", l.what(img), resp.Status)
	}
	p, err := s.keep(&idleReader{r: resp.Body, t: idle, d: s.cfg.IdleTimeout}, img, want, l)
	if err != nil && ctx.Err() != nil {
		return "", fmt.Errorf("%s: download: %s", l.what(img), stopped(ctx, err, img.URL))
	}
	return p, err
}

// fetchLimit bounds a download of l's image: the fetch timeout, plus its
// size at the minimum rate when it is known.
func (s *Store) fetchLimit(l Label) time.Duration {
	secs := min(l.Size/s.cfg.MinFetchRate, int64(100*365*24*3600))
	return s.cfg.FetchTimeout + time.Duration(secs)*time.Second
}

func (s *Store) limitWhy(l Label) string {
	if l.Size <= 0 {
		return "the fetch timeout"
	}
	return fmt.Sprintf("the fetch timeout %v plus %d bytes at %d bytes/s%s", s.cfg.FetchTimeout, l.Size, s.cfg.MinFetchRate, l.knob("imageFetchMinRate"))
}

// knob names serve's configuration key that sets a bound, for an OS
// image's errors.
func (l Label) knob(key string) string {
	if l.Image == "" {
		return ""
	}
	return " (serve's config key " + key + ")"
}

// stopped is a download's error: why its context stopped it (the idle
// timeout, the time bound, a cancel) when it did, else err; URLs in it
// redacted.
func stopped(ctx context.Context, err error, raw string) string {
	if ctx.Err() != nil {
		if cause := context.Cause(ctx); cause != nil {
			return redactErr(cause, raw)
		}
	}
	return redactErr(err, raw)
}

// idleReader restarts the idle timer t at each byte read.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 {
		ir.t.Reset(ir.d)
	}
	return n, err
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

// urlInText finds the URLs in an error's text (the client names the URL
// it asked, a redirect's too).
var urlInText = regexp.MustCompile(`(?i)https?://[^\s"'<>]+`)

// redactErr is err's text with every URL in it reduced to scheme, host
// and path (redact), and raw's query and password, when it has them,
// taken out.
func redactErr(err error, raw string) string {
	msg := urlInText.ReplaceAllStringFunc(err.Error(), redact)
	// raw's query or fragment wherever else it stands (raw as the
	// library quoted it, when it is no http(s) URL).
	if i := strings.IndexAny(raw, "?#"); i >= 0 && len(raw)-i > 4 {
		msg = strings.ReplaceAll(msg, raw[i+1:], "(redacted)")
	}
	u, perr := url.Parse(raw)
	if perr != nil || u.User == nil {
		return msg
	}
	if pw, ok := u.User.Password(); ok && pw != "" {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return msg
}
