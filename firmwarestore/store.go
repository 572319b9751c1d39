// Package firmwarestore keeps the firmware images of hardware profiles'
// baselines: it fetches an image from its URL, or reads it from the
// firmware directory, checks its SHA-256 before any BMC sees it, keeps it
// by that hash and serves it over HTTP at /firmware/<sha256>, the URL the
// engine gives the BMCs (drivers.FirmwareUpdate.ImageURL).
package firmwarestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/design"
)

// Defaults.
const (
	// DefaultMaxBytes bounds one image (a BMC or GPU image is tens to
	// hundreds of MiB; a full system bundle some GiB).
	DefaultMaxBytes = 4 << 30
	// DefaultFetchTimeout bounds one download (of an image of known
	// size: plus its size at DefaultMinFetchRate).
	DefaultFetchTimeout = 30 * time.Minute
	// DefaultIdleTimeout fails a download that receives nothing for this
	// long.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMinFetchRate (bytes/s) scales the bound of a download of
	// known size: a 64 GiB OS image has 30 min + 4.6 h.
	DefaultMinFetchRate = 4 << 20
	// Path is the URL path prefix images are served under.
	Path = "/firmware/"
)

// Config configures a Store.
type Config struct {
	// Dir is the firmware directory: an image's `file:` names a file in
	// it ("" when the design's images are URLs only).
	Dir string
	// CacheDir keeps the images fetched from URLs, each named by its
	// SHA-256 (required when a design names a URL).
	CacheDir string
	// BaseURL is where the BMCs reach this store's handler (e.g.
	// http://10.0.0.5:8702); an image's URL is BaseURL/firmware/<sha256>.
	BaseURL string
	// MaxBytes bounds an image (0: DefaultMaxBytes); FetchTimeout a
	// download (0: DefaultFetchTimeout).
	MaxBytes     int64
	FetchTimeout time.Duration
	// IdleTimeout fails a download that receives nothing for this long
	// (0: DefaultIdleTimeout). MinFetchRate (bytes/s; 0:
	// DefaultMinFetchRate) scales the bound of a download of known size
	// (an OS image's): FetchTimeout plus its size at that rate.
	IdleTimeout  time.Duration
	MinFetchRate int64
	// Client fetches URLs (nil: a client without a global timeout,
	// FetchTimeout bounding each download).
	Client *http.Client
}

// Label names what an image is for, in errors: the hardware profile and
// the baseline's component.
type Label struct {
	Profile   string
	Component string
	// Image, when set, names an OS image (an Image document) instead:
	// its errors name it, and Size is the exact size it must have (the
	// read stops past it).
	Image string
	Size  int64
}

// bound is how many bytes an image of l may have.
func (l Label) bound(max int64) int64 {
	if l.Size > 0 {
		return min(l.Size, max)
	}
	return max
}

// sawIt names who never saw a refused image.
func (l Label) sawIt() string {
	if l.Image != "" {
		return "refused before the provisioner saw a byte (fix the image file or URL, or the sha256 and size of Image " + l.Image + ")"
	}
	return "refused before any BMC saw it (fix the image or its sha256 in the profile)"
}

// Image is a verified image.
type Image struct {
	SHA256 string
	Size   int64
	// URL is where the BMCs fetch it (BaseURL/firmware/<sha256>).
	URL string
	// Path is where its verified bytes are on disk.
	Path string
}

// Store keeps verified images by SHA-256. It is safe for concurrent use;
// an image is fetched and verified once, whoever asks for it meanwhile
// waiting for that fetch.
type Store struct {
	cfg Config
	mu  sync.Mutex
	// paths: verified images, by hash, where their bytes are.
	paths map[string]string
	// busy: fetches in flight, by hash; closed when done.
	busy map[string]chan struct{}
	// stamps: the files of OS images verified where they are (in the
	// image directory), by hash: a file changed since is verified again.
	stamps map[string]os.FileInfo
	// idxMu serializes the cache's index of OS images (evict.go).
	idxMu sync.Mutex
	// fetches counts the downloads and file reads (tests).
	fetches int
}

// ErrChecksum is wrapped by Get's error when an image's SHA-256 is not
// the one the design gives.
var ErrChecksum = errors.New("firmware image checksum mismatch")

var hexSHA = regexp.MustCompile(`^[0-9a-f]{64}$`)

// New makes a store.
func New(cfg Config) (*Store, error) {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = DefaultFetchTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MinFetchRate <= 0 {
		cfg.MinFetchRate = DefaultMinFetchRate
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	cfg.BaseURL = strings.TrimSuffix(cfg.BaseURL, "/")
	if cfg.CacheDir != "" {
		if err := os.MkdirAll(cfg.CacheDir, 0o750); err != nil {
			return nil, fmt.Errorf("firmware cache directory: %w", err)
		}
		// Downloads a killed process left behind (up to MaxBytes each).
		left, _ := filepath.Glob(filepath.Join(cfg.CacheDir, ".partial-*"))
		for _, p := range left {
			_ = os.Remove(p)
		}
	}
	return &Store{cfg: cfg, paths: map[string]string{}, busy: map[string]chan struct{}{}, stamps: map[string]os.FileInfo{}}, nil
}

// Fetches is how many times the store read or downloaded an image.
func (s *Store) Fetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches
}

// ImageURL is Get's URL: what the engine gives the BMC.
func (s *Store) ImageURL(ctx context.Context, img design.FirmwareImage, profile, component string) (string, error) {
	im, err := s.Get(ctx, img, Label{Profile: profile, Component: component})
	return im.URL, err
}

// Get returns img verified: read from the firmware directory or fetched
// from its URL once per hash, its SHA-256 checked against the design's.
// A wrong checksum is an error wrapping ErrChecksum naming the profile,
// component, file or URL, and both hashes; the image is not kept.
func (s *Store) Get(ctx context.Context, img design.FirmwareImage, l Label) (Image, error) {
	want := strings.ToLower(img.SHA256)
	if !hexSHA.MatchString(want) {
		return Image{}, fmt.Errorf("%s: sha256 %.80q is not 64 hex digits", l.what(img), img.SHA256)
	}
	if err := s.check(img, l); err != nil {
		return Image{}, err
	}
	for {
		s.mu.Lock()
		p, ok := s.paths[want]
		if ok && s.changed(want, p) {
			delete(s.paths, want)
			delete(s.stamps, want)
			ok = false
		}
		if ok {
			s.mu.Unlock()
			return s.image(want, p)
		}
		ch, running := s.busy[want]
		if !running {
			ch = make(chan struct{})
			s.busy[want] = ch
			s.fetches++
		}
		s.mu.Unlock()
		if running {
			select {
			case <-ch:
				continue // done (or failed: then this caller tries itself)
			case <-ctx.Done():
				return Image{}, ctx.Err()
			}
		}
		p, err := s.load(ctx, img, want, l)
		s.mu.Lock()
		if err == nil {
			s.paths[want] = p
		}
		delete(s.busy, want)
		close(ch)
		s.mu.Unlock()
		if err != nil {
			return Image{}, err
		}
		return s.image(want, p)
	}
}

func (s *Store) image(sum, path string) (Image, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Image{}, fmt.Errorf("firmware image %s: %w", sum, err)
	}
	return Image{SHA256: sum, Size: fi.Size(), URL: s.cfg.BaseURL + Path + sum, Path: path}, nil
}

// what names an image in errors: profile, component, file or URL (its
// scheme, host and path only: see redact).
func (l Label) what(img design.FirmwareImage) string {
	src := "file " + img.File
	if img.URL != "" {
		src = "url " + redact(img.URL)
	}
	if l.Image != "" {
		return fmt.Sprintf("image %s (%s)", l.Image, src)
	}
	return fmt.Sprintf("firmware image of hardware profile %s, component %s (%s)", l.Profile, l.Component, src)
}

// redact is a URL as errors, logs, events and API answers may show it:
// scheme, host and path. Its user info, query and fragment may carry a
// secret (a password, a signed URL's X-Amz-Signature, ?token=) and are
// left out.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return "(an unparsable URL)"
	}
	out := u.Scheme + "://" + u.Host + u.EscapedPath()
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		out += "?(redacted)"
	}
	return out
}

// check refuses an image the store cannot take, before anything is
// looked up: both or neither of file and url, a file that is a path, a
// URL that is not http(s).
func (s *Store) check(img design.FirmwareImage, l Label) error {
	switch {
	case img.File != "" && img.URL != "":
		return fmt.Errorf("%s: give file or url, not both", l.what(img))
	case img.File != "":
		if !fs.ValidPath(img.File) || img.File == "." || strings.ContainsAny(img.File, "\\\x00") {
			return fmt.Errorf("%s: a file is a relative name inside the firmware directory (dell/x.bin), not a path out of it", l.what(img))
		}
		if s.cfg.Dir == "" && l.Image != "" {
			return fmt.Errorf("%s: no image directory is configured (serve --image-dir DIR)", l.what(img))
		}
		if s.cfg.Dir == "" {
			return fmt.Errorf("%s: no firmware directory is configured (serve --firmware-dir DIR)", l.what(img))
		}
	case img.URL != "":
		u, err := url.Parse(img.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s: the url is not an http(s) URL", l.what(img))
		}
		if s.cfg.CacheDir == "" {
			if l.Image != "" {
				return fmt.Errorf("%s: no image cache directory is configured (serve --image-cache DIR)", l.what(img))
			}
			return fmt.Errorf("%s: no firmware cache directory is configured", l.what(img))
		}
	default:
		return fmt.Errorf("%s: the image names neither a file nor a url", l.what(img))
	}
	return nil
}

// load reads or fetches img (checked) and checks its hash; the path of
// its bytes.
func (s *Store) load(ctx context.Context, img design.FirmwareImage, want string, l Label) (string, error) {
	if img.File != "" {
		return s.loadFile(img, want, l)
	}
	return s.fetch(ctx, img, want, l)
}

// loadFile checks a file of the firmware directory: a firmware image is
// copied into the cache when there is one (and served from there), else
// served from where it is; an OS image is verified where it is.
func (s *Store) loadFile(img design.FirmwareImage, want string, l Label) (string, error) {
	p := filepath.Join(s.cfg.Dir, filepath.FromSlash(img.File))
	// Opened within the directory: a symbolic link leading out of it is
	// refused.
	f, err := os.OpenInRoot(s.cfg.Dir, filepath.FromSlash(img.File))
	if err != nil {
		return "", fmt.Errorf("%s: %w (put the image in the firmware directory %s)", l.what(img), err, s.cfg.Dir)
	}
	defer f.Close()
	if l.Image != "" {
		return s.verifyInPlace(f, p, img, want, l)
	}
	if s.cfg.CacheDir != "" {
		// A copy is kept and served: a file replaced later in the
		// directory is not served unchecked.
		return s.keep(f, img, want, l)
	}
	got, _, err := hashBounded(f, l.bound(s.cfg.MaxBytes), io.Discard)
	if err != nil {
		return "", fmt.Errorf("%s: %w", l.what(img), err)
	}
	if got != want {
		return "", mismatch(l, img, want, got)
	}
	return p, nil
}

func mismatch(l Label, img design.FirmwareImage, want, got string) error {
	return fmt.Errorf("%s: %w: expected sha256 %s, the image has %s: %s",
		l.what(img), ErrChecksum, want, got, l.sawIt())
}

// hashBounded copies r to w, hashing it, and fails past max bytes.
func hashBounded(r io.Reader, max int64, w io.Writer) (string, int64, error) {
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(h, w), io.LimitReader(r, max+1))
	if err != nil {
		return "", n, err
	}
	if n > max {
		return "", n, fmt.Errorf("the image is larger than the bound of %d bytes", max)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// ImagePath verifies an OS image's content (an Image document's custom
// source) as Get does, its exact size bounding the read, and returns
// where its verified bytes are: a file of the image directory where it
// is (never copied), a URL's download in the cache. The cache keeps one
// version per image: the one asked last (remember).
func (s *Store) ImagePath(ctx context.Context, image string, src design.FirmwareImage, size int64) (string, error) {
	im, err := s.Get(ctx, src, Label{Image: image, Size: size})
	if err != nil {
		return "", err
	}
	if im.Size != size {
		return "", fmt.Errorf("image %s: its content is %d bytes, the Image document says %d: refused before the provisioner saw a byte (fix the size)", image, im.Size, size)
	}
	s.remember(image, im.SHA256)
	return im.Path, nil
}

// CheckImage refuses an OS image's source the store cannot take, before
// anything is read: both or neither of file and url, a file that is a
// path or with no image directory configured, a URL that is not http(s)
// or with no cache directory.
func (s *Store) CheckImage(image string, src design.FirmwareImage) error {
	return s.check(src, Label{Image: image})
}
