// Package store keeps the orchestrator's secrets, encrypted at rest, in
// the state database: the values of the design's secret:NAME references.
//
// Each value is encrypted with AES-256-GCM under one key, with a fresh
// random nonce and the secret's name as additional data: a ciphertext
// copied to another name does not decrypt. The key is kept outside the
// state database: in a key file (see [LoadOrCreateKey]; by default
// [DefaultKeyFile] next to the state database), or in the environment
// variable [KeyEnv], which takes precedence when set (see [LoadKey]).
// A copy of the state database without the key reveals no value.
//
// Values are only returned by [Store.Get], as a [drivers.Secret] that
// redacts itself when printed or marshalled; [Store.List] gives names and
// dates only. No error holds a value or the key.
//
// # Layout
//
// In the [statestore.Records] given to [New]:
//
//	collection "secrets"
//	    key: the secret's name (see ValidateName)
//	    value: JSON {"key_id": string, "nonce": base64, "ciphertext": base64,
//	           "created": time, "updated": time}
//
// key_id is the first 8 bytes, in hex, of HMAC-SHA256(key, "slipway secret
// key id"): it tells a wrong key from a damaged record without revealing
// the key.
package store

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/statestore"
)

// Records is the part of [statestore.Records] the secret store uses.
type Records = statestore.KeyedRecords

const (
	coll = "secrets"
	// MaxValueLen is the longest secret value, in bytes.
	MaxValueLen = 64 << 10
)

var (
	// ErrNotFound is wrapped by errors for secrets that are not stored.
	ErrNotFound = errors.New("secret not found")
	// ErrWrongKey is wrapped by errors for secrets stored with another key.
	ErrWrongKey = errors.New("wrong secret key")
	// ErrNoKey is wrapped by errors of Put and Get on a Store made without a key.
	ErrNoKey = errors.New("no secret key")
)

// ReservedName is the one valid name Put refuses: secret:key never
// resolves, as its environment fallback would be KeyEnv.
const ReservedName = "key"

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ValidateName reports whether name can name a secret: 1 to 63
// characters from a-z, 0-9, '.', '_' and '-', starting with a letter or
// a digit. Its error does not repeat name.
func ValidateName(name string) error {
	if !nameRE.MatchString(name) {
		// The name is not repeated: it may be a value given by mistake.
		return errors.New("invalid secret name: use 1 to 63 characters a-z, 0-9, '.', '_' and '-', starting with a letter or digit")
	}
	return nil
}

// Info describes a stored secret, without its value.
type Info struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// record is the JSON value of a secret.
type record struct {
	KeyID      string    `json:"key_id"`
	Nonce      []byte    `json:"nonce"`
	Ciphertext []byte    `json:"ciphertext"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
}

// recordKind is a record's stored form: it carries its schema version
// (internal/storedrec).
var recordKind = storedrec.NewKind("secret record", reflect.TypeFor[record]())

// Store keeps secrets encrypted in a statestore.Records. It is safe for
// concurrent use.
type Store struct {
	r     Records
	aead  cipher.AEAD // nil without a key
	keyID string
	now   func() time.Time
	cache valueCache // cache.go
}

// New returns a store keeping its secrets in r, encrypted with key
// (KeySize bytes). key may be nil for a store that only lists and deletes
// secrets; its Put and Get fail with ErrNoKey.
func New(r Records, key []byte) (*Store, error) {
	s := &Store{r: r, now: time.Now}
	if key == nil {
		return s, nil
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("secret key is %d bytes long, want %d: check the key file or %s", len(key), KeySize, KeyEnv)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	if s.aead, err = cipher.NewGCM(block); err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("slipway secret key id"))
	s.keyID = hex.EncodeToString(mac.Sum(nil)[:8])
	return s, nil
}

func (s *Store) needKey(what, name string) error {
	if s.aead == nil {
		return fmt.Errorf("%s secret %s: %w: this store was opened without the key", what, name, ErrNoKey)
	}
	return nil
}

// Put stores value as the secret name, replacing any value it had. The
// value must not be empty.
//
// Put refuses to store a secret when other secrets are stored with another
// key (a key file lost and created again, a wrong SLIPWAY_SECRET_KEY): the
// store would then hold secrets no single key decrypts.
func (s *Store) Put(ctx context.Context, name, value string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if name == ReservedName {
		return fmt.Errorf("store secret %s: the name is reserved (secret:%s would be looked for in %s, which holds this store's key): use another name", name, name, KeyEnv)
	}
	if err := s.needKey("store", name); err != nil {
		return err
	}
	switch {
	case value == "":
		return fmt.Errorf("store secret %s: the value is empty: give a value", name)
	case len(value) > MaxValueLen:
		return fmt.Errorf("store secret %s: the value is %d bytes long: use at most %d", name, len(value), MaxValueLen)
	}
	recs, err := s.records(ctx)
	if err != nil {
		return err
	}
	now := statestore.StoreTime(s.now())
	created := now
	var others []string
	for _, r := range recs {
		if r.name == name {
			created = r.Created
		} else if r.KeyID != s.keyID {
			others = append(others, r.name)
		}
	}
	if len(others) > 0 {
		return wrongKey(fmt.Sprintf("store secret %s: %d stored secrets (%s) were stored with another key (the key file or %s is not the one they were stored with); "+
			"use the key file they were stored with, or delete them (orchestrator secret delete NAME) and set them again",
			name, len(others), shortList(others), KeyEnv))
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return fmt.Errorf("store secret %s: read random bytes: %w", name, err)
	}
	rec := record{
		KeyID:      s.keyID,
		Nonce:      nonce,
		Ciphertext: s.aead.Seal(nil, nonce, []byte(value), []byte(name)),
		Created:    created,
		Updated:    now,
	}
	v, err := recordKind.Encode(rec)
	if err != nil {
		return fmt.Errorf("store secret %s: %w", name, err)
	}
	defer s.cache.forget(name)
	if _, err := s.r.Write(ctx, statestore.Put(coll, name, v)); err != nil {
		return fmt.Errorf("store secret %s: %w", name, err)
	}
	return nil
}

// Get returns the value of the secret name. The error wraps ErrNotFound
// when it is not stored and ErrWrongKey when it was stored with another
// key.
func (s *Store) Get(ctx context.Context, name string) (drivers.Secret, error) {
	if err := ValidateName(name); err != nil {
		return drivers.Secret{}, err
	}
	if err := s.needKey("read", name); err != nil {
		return drivers.Secret{}, err
	}
	if v, ok := s.cache.get(name, s.now()); ok {
		return v, nil
	}
	v, err := s.r.Get(ctx, coll, name)
	if errors.Is(err, statestore.ErrNoRecord) {
		return drivers.Secret{}, notFound(name)
	}
	if err != nil {
		return drivers.Secret{}, fmt.Errorf("read secret %s: %w", name, err)
	}
	var rec record
	if err := recordKind.Decode(name, v, &rec); errors.Is(err, storedrec.ErrNewerVersion) {
		return drivers.Secret{}, fmt.Errorf("read secret %s: %w", name, err)
	} else if err != nil {
		return drivers.Secret{}, fmt.Errorf("read secret %s: unreadable record (%v): set it again (orchestrator secret set %s)", name, err, name)
	}
	if rec.KeyID != s.keyID {
		return drivers.Secret{}, wrongKey(fmt.Sprintf("cannot decrypt secret %s: the key file is not the one it was stored with (when %s is set, its key is used instead of the file): use that key file, or set the secret again (orchestrator secret set %s)", name, KeyEnv, name))
	}
	if len(rec.Nonce) != s.aead.NonceSize() {
		return drivers.Secret{}, damaged(name)
	}
	plain, err := s.aead.Open(nil, rec.Nonce, rec.Ciphertext, []byte(name))
	if err != nil {
		return drivers.Secret{}, damaged(name)
	}
	sec := drivers.NewSecret(string(plain))
	s.cache.put(name, sec, s.now())
	return sec, nil
}

// keyError wraps ErrWrongKey with a message of its own.
type keyError struct{ msg string }

func (e *keyError) Error() string        { return e.msg }
func (e *keyError) Is(target error) bool { return target == ErrWrongKey }

func wrongKey(msg string) error { return &keyError{msg} }

func damaged(name string) error {
	return fmt.Errorf("cannot decrypt secret %s: its record was altered or copied from another secret; set it again (orchestrator secret set %s)", name, name)
}

func notFound(name string) error {
	return fmt.Errorf("%w: %s is not stored: set it with `orchestrator secret set %s` (value on standard input)", ErrNotFound, name, name)
}

// Delete removes the secret name. The error wraps ErrNotFound when it is
// not stored.
func (s *Store) Delete(ctx context.Context, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	_, err := s.r.Get(ctx, coll, name)
	if errors.Is(err, statestore.ErrNoRecord) {
		return notFound(name)
	}
	if err != nil {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	defer s.cache.forget(name)
	if _, err := s.r.Write(ctx, statestore.Delete(coll, name)); err != nil {
		return fmt.Errorf("delete secret %s: %w", name, err)
	}
	return nil
}

// List returns the stored secrets' names and dates, by name. It never
// holds a value.
func (s *Store) List(ctx context.Context) ([]Info, error) {
	recs, err := s.records(ctx)
	if err != nil {
		return nil, err
	}
	infos := make([]Info, len(recs))
	for i, r := range recs {
		infos[i] = Info{Name: r.name, Created: r.Created, Updated: r.Updated}
	}
	return infos, nil
}

type namedRecord struct {
	name string
	record
}

// records returns every stored record, by name.
func (s *Store) records(ctx context.Context) ([]namedRecord, error) {
	raw, err := s.r.List(ctx, coll, "")
	if err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	recs := make([]namedRecord, 0, len(raw))
	for _, r := range raw {
		n := namedRecord{name: r.Key}
		if err := recordKind.Decode(r.Key, r.Value, &n.record); errors.Is(err, storedrec.ErrNewerVersion) {
			return nil, fmt.Errorf("list secrets: %w", err)
		} else if err != nil {
			return nil, fmt.Errorf("list secrets: secret %s has an unreadable record (%v): delete it (orchestrator secret delete %s) and set it again", r.Key, err, r.Key)
		}
		recs = append(recs, n)
	}
	slices.SortFunc(recs, func(a, b namedRecord) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return recs, nil
}

func shortList(names []string) string {
	const show = 5
	s := fmt.Sprint(names[:min(len(names), show)])
	s = s[1 : len(s)-1]
	if len(names) > show {
		s += " …"
	}
	return s
}
