package store

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/slipway-dev/slipway/internal/localtrust"
)

const (
	// KeySize is the length of the encryption key in bytes (AES-256).
	KeySize = 32
	// KeyEnv is the environment variable that may hold the key: the
	// standard base64 encoding of KeySize bytes. When it is set it takes
	// precedence over the key file.
	KeyEnv = "SLIPWAY_SECRET_KEY"
	// DefaultKeyFile is the key file's name, in the directory of the
	// state database unless configured otherwise.
	DefaultKeyFile = "slipway.key"
)

// KeyFromEnv returns the key held by the environment variable KeyEnv.
// ok is false when the variable is not set (or empty). Errors never
// repeat the variable's value.
func KeyFromEnv() (key []byte, ok bool, err error) {
	v := os.Getenv(KeyEnv)
	if v == "" {
		return nil, false, nil
	}
	key, err = decodeKey(v)
	if err != nil {
		return nil, true, fmt.Errorf("environment variable %s: %w", KeyEnv, err)
	}
	return key, true, nil
}

// LoadKey returns the key from the environment variable KeyEnv when it is
// set, and otherwise from the key file at path, which LoadOrCreateKey
// creates if it is missing. source says where the key came from (the
// variable's name or the path), for messages.
func LoadKey(path string) (key []byte, source string, err error) {
	key, ok, err := KeyFromEnv()
	if ok || err != nil {
		return key, KeyEnv, err
	}
	key, err = LoadOrCreateKey(path)
	return key, path, err
}

// LoadOrCreateKey reads the key file at path: the standard base64 encoding
// of KeySize bytes, on one line. When the file does not exist it creates
// it with a new random key, with mode 0600 (and its parent directory, if
// missing, with mode 0700), only in a directory KeyRule trusts. It refuses
// a key file that its group or others may read or write, one another user
// owns (root included), a symbolic link another user planted, and one in
// a directory others can write (KeyRule). Errors never hold the key.
//
// Keep the key file (or a copy of it in a safe place): without it the
// stored secrets can't be decrypted.
func LoadOrCreateKey(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("secret key file: no path given")
	}
	key, err := readKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := createKey(path); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	// Created here, or by another process a moment ago.
	return readKey(path)
}

// KeyRule is what a trusted key file looks like: owned by the effective
// user, readable by no one else, in directories no one else can write
// (see localtrust). Root trusts no key file another user owns.
var KeyRule = localtrust.Rule{What: "secret key file", Deny: 0o077,
	Fix: "keep the key in a directory only you can write (mkdir -m 700 DIR)"}

// readKey reads and checks the key file at path. The error wraps
// fs.ErrNotExist when there is no file.
func readKey(path string) ([]byte, error) {
	if err := localtrust.Check(path, KeyRule); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, localtrust.ErrUntrusted) {
			return nil, err
		}
		return nil, fmt.Errorf("secret key file: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secret key file: %w", err)
	}
	key, err := decodeKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("secret key file %s: %w", path, err)
	}
	return key, nil
}

// createKey writes a new key file at path, unless one exists (the error
// then wraps fs.ErrExist). The file appears whole or not at all.
func createKey(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create secret key file: %w", err)
	}
	if err := localtrust.CheckDir(dir, KeyRule); err != nil {
		return err
	}
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("create secret key file: read random bytes: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".slipway-key-*")
	if err != nil {
		return fmt.Errorf("create secret key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file with mode 0600.
	_, werr := tmp.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("create secret key file %s: %w", path, err)
	}
	// Link, unlike Rename, never replaces an existing file.
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fmt.Errorf("create secret key file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func decodeKey(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("not a key: want the base64 encoding of %d bytes on one line (make one with `head -c %d /dev/urandom | base64`)", KeySize, KeySize)
	}
	return key, nil
}
