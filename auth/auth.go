// Package auth keeps the API's bearer tokens and their roles.
//
// A token is "slw_" followed by 43 characters: the unpadded base64url
// encoding of 32 random bytes. It is shown once, when it is created; the
// state keeps only its SHA-256 hash, so the state file (or a backup of it)
// holds nothing that can be presented as a token. A token is checked by
// hashing the presented string and looking the hash up: the lookup
// compares hashes, never the secret, so its timing says nothing useful
// about the secret.
//
// A token's ID is the first 8 hex characters of its hash. It names the
// token in lists, logs and audit records and is what [Store.Revoke] takes;
// it can't be turned back into the token.
//
// # Layout
//
// In the [statestore.Records] given to [NewStore]:
//
//	collection "tokens"
//	    key: lowercase hex SHA-256 of the token string (64 characters)
//	    value: JSON [Token] (without last_used), its schema version
//	           first ({"v":2,...}; internal/storedrec)
//	collection "tokens_used"
//	    key: as in "tokens"
//	    value: JSON time: when the token was last verified, written at
//	           most once a minute per token (see [Store.Verify])
//
// Nothing in this package logs, and no error or value it returns holds a
// token's plaintext, except the one returned by [Store.Create].
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/statestore"
)

// Records is the part of [statestore.Records] the token store uses.
type Records = statestore.KeyedRecords

const (
	// Prefix starts every token.
	Prefix = "slw_"
	// TokenLen is the length of a token: Prefix and 43 base64url characters.
	TokenLen = len(Prefix) + 43
	// IDLen is the length of a token ID (hex characters of its hash).
	IDLen = 8
	// MaxNameLen is the longest token name, in bytes.
	MaxNameLen = 64
	// InitialAdminName names the token EnsureAdmin creates.
	InitialAdminName = "initial-admin"

	collTokens = "tokens"
	collUsed   = "tokens_used"
	secretLen  = 32
	// usedEvery is how often Verify records a token's use at most.
	usedEvery = time.Minute
)

// tokenKind is the stored form of a token (collection tokens, by hash):
// it carries its schema version (internal/storedrec). The tokens_used
// records are bare timestamps, without one.
var tokenKind = storedrec.NewKind("API token", reflect.TypeFor[Token]())

var (
	// ErrUnauthorized is wrapped by Verify's errors for a missing,
	// malformed, unknown or revoked token.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrNotFound is wrapped by Revoke's error when no token has the ID.
	ErrNotFound = errors.New("token not found")
	// ErrInvalid is wrapped by Create's error for an unknown role or a
	// name ValidateName refuses.
	ErrInvalid = errors.New("invalid token request")
	// ErrLastAdmin is wrapped by Revoke's error when the token is the
	// last admin token: revoking it would leave nobody able to manage
	// tokens and secrets.
	ErrLastAdmin = errors.New("last admin token")
)

// Token describes an API token. It never holds the token's secret.
type Token struct {
	ID       string    `json:"id"` // first IDLen hex characters of the token's SHA-256
	Name     string    `json:"name"`
	Role     Role      `json:"role"`
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used,omitzero"` // zero: never verified (or not recorded yet)
}

// Store creates, verifies, lists and revokes tokens. It is safe for
// concurrent use.
type Store struct {
	r   Records
	now func() time.Time

	mu   sync.Mutex
	used map[string]time.Time // hash -> when its use was last written
	// revokeMu makes Revoke's check for another admin token and its
	// delete one step.
	revokeMu sync.Mutex
}

// NewStore returns a token store keeping its records in r.
func NewStore(r Records) *Store {
	return &Store{r: r, now: time.Now, used: map[string]time.Time{}}
}

func hashToken(plaintext string) string {
	h := sha256.Sum256([]byte(plaintext))
	return hex.EncodeToString(h[:])
}

// wellFormed reports whether s has the form of a token.
func wellFormed(s string) bool {
	if len(s) != TokenLen || !strings.HasPrefix(s, Prefix) {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(s[len(Prefix):])
	return err == nil && len(b) == secretLen
}

// ValidateName reports whether name can name a token: at most MaxNameLen
// bytes of printable UTF-8 (empty is allowed).
func ValidateName(name string) error {
	if len(name) > MaxNameLen {
		return fmt.Errorf("token name is %d bytes long: use at most %d", len(name), MaxNameLen)
	}
	if !utf8.ValidString(name) || strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return fmt.Errorf("token name %q has control or invalid characters: use printable text", name)
	}
	return nil
}

// Create makes a new token with the given role and name and returns its
// plaintext, which is shown to nobody else and can't be recovered later.
func (s *Store) Create(ctx context.Context, role Role, name string) (string, Token, error) {
	if !role.Valid() {
		return "", Token{}, fmt.Errorf("create token: %w: unknown role %q: use admin, operator or viewer", ErrInvalid, role)
	}
	if err := ValidateName(name); err != nil {
		return "", Token{}, fmt.Errorf("create token: %w: %w", ErrInvalid, err)
	}
	for range 5 {
		b := make([]byte, secretLen)
		if _, err := rand.Read(b); err != nil {
			return "", Token{}, fmt.Errorf("create token: read random bytes: %w", err)
		}
		plain := Prefix + base64.RawURLEncoding.EncodeToString(b)
		h := hashToken(plain)
		// Keep IDs unique, so that an ID names one token.
		same, err := s.r.List(ctx, collTokens, h[:IDLen])
		if err != nil {
			return "", Token{}, fmt.Errorf("create token: %w", err)
		}
		if len(same) > 0 {
			continue
		}
		t := Token{ID: h[:IDLen], Name: name, Role: role, Created: statestore.StoreTime(s.now())}
		v, err := tokenKind.Encode(t)
		if err != nil {
			return "", Token{}, fmt.Errorf("create token: %w", err)
		}
		if _, err := s.r.Write(ctx, statestore.Put(collTokens, h, v)); err != nil {
			return "", Token{}, fmt.Errorf("create token: %w", err)
		}
		return plain, t, nil
	}
	return "", Token{}, errors.New("create token: the new token's ID was taken 5 times in a row: check the system's random source")
}

// Verify returns the token whose plaintext is given. A missing, malformed,
// unknown or revoked token gives an error wrapping ErrUnauthorized; other
// errors are the state's. Neither the error nor anything else holds the
// plaintext.
//
// Verify records when a token was last used (see [Token.LastUsed]), at
// most once a minute per token; a failure to record it is ignored.
func (s *Store) Verify(ctx context.Context, plaintext string) (Token, error) {
	if plaintext == "" {
		return Token{}, fmt.Errorf("%w: no API token given: ask an admin for one (orchestrator token create)", ErrUnauthorized)
	}
	if !wellFormed(plaintext) {
		return Token{}, fmt.Errorf("%w: malformed API token: a token is %q followed by 43 characters, as printed by `orchestrator token create`", ErrUnauthorized, Prefix)
	}
	h := hashToken(plaintext)
	v, err := s.r.Get(ctx, collTokens, h)
	if errors.Is(err, statestore.ErrNoRecord) {
		return Token{}, fmt.Errorf("%w: unknown or revoked API token: ask an admin for a new one (orchestrator token create)", ErrUnauthorized)
	}
	if err != nil {
		return Token{}, fmt.Errorf("check API token: %w", err)
	}
	var t Token
	if err := tokenKind.Decode(h[:IDLen], v, &t); errors.Is(err, storedrec.ErrNewerVersion) {
		return Token{}, fmt.Errorf("check API token: %w", err)
	} else if err != nil {
		return Token{}, fmt.Errorf("check API token: token %s has an unreadable record: %v; revoke it (orchestrator token revoke %s) and create a new one", h[:IDLen], err, h[:IDLen])
	}
	t.ID = h[:IDLen]
	t.LastUsed = s.touch(ctx, h)
	return t, nil
}

// touch records that the token with hash h is used now, unless that was
// recorded less than usedEvery ago.
func (s *Store) touch(ctx context.Context, h string) time.Time {
	now := statestore.StoreTime(s.now())
	s.mu.Lock()
	last, ok := s.used[h]
	if ok && now.Sub(last) < usedEvery {
		s.mu.Unlock()
		return now
	}
	s.used[h] = now
	s.mu.Unlock()
	v, _ := json.Marshal(now)
	if _, err := s.r.Write(ctx, statestore.Put(collUsed, h, v)); err != nil {
		s.mu.Lock()
		if s.used[h].Equal(now) {
			if ok {
				s.used[h] = last
			} else {
				delete(s.used, h)
			}
		}
		s.mu.Unlock()
	}
	return now
}

// List returns every token, oldest first. It holds no secrets.
func (s *Store) List(ctx context.Context) ([]Token, error) {
	recs, err := s.r.List(ctx, collTokens, "")
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	usedRecs, err := s.r.List(ctx, collUsed, "")
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	used := make(map[string]time.Time, len(usedRecs))
	for _, u := range usedRecs {
		var at time.Time
		if json.Unmarshal(u.Value, &at) == nil { // a timestamp: no fields, no version
			used[u.Key] = at
		}
	}
	toks := make([]Token, 0, len(recs))
	for _, r := range recs {
		var t Token
		if err := tokenKind.Decode(r.Key[:min(len(r.Key), IDLen)], r.Value, &t); errors.Is(err, storedrec.ErrNewerVersion) {
			return nil, fmt.Errorf("list tokens: %w", err)
		} else if err != nil {
			return nil, fmt.Errorf("list tokens: token %s has an unreadable record: %v; revoke it (orchestrator token revoke %s)", r.Key[:min(len(r.Key), IDLen)], err, r.Key[:min(len(r.Key), IDLen)])
		}
		t.ID = r.Key[:min(len(r.Key), IDLen)]
		t.LastUsed = used[r.Key]
		toks = append(toks, t)
	}
	slices.SortStableFunc(toks, func(a, b Token) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return toks, nil
}

// Revoke deletes the token with the given ID (as shown by List; a longer
// prefix of the hash works too). The error wraps ErrNotFound when no
// token has that ID, and ErrLastAdmin when it is the last admin token
// (create another admin token first).
func (s *Store) Revoke(ctx context.Context, id string) error {
	return s.revoke(ctx, id, true)
}

// ValidID reports whether ref has the form of a token ID (IDLen or more
// lower-case hex characters, at most a whole hash), as Revoke takes it. A
// caller checks it before it logs or records ref: what is not an ID may be
// a token pasted by mistake.
func ValidID(ref string) bool {
	return len(ref) >= IDLen && len(ref) <= sha256.Size*2 && strings.Trim(ref, "0123456789abcdef") == ""
}

// revoke is Revoke; keepAdmin false lets it revoke the last admin token
// (EnsureAdmin's cleanup).
func (s *Store) revoke(ctx context.Context, id string, keepAdmin bool) error {
	ref := strings.ToLower(strings.TrimSpace(id))
	if !ValidID(ref) {
		// The input is not repeated: it may be a token pasted by mistake.
		return fmt.Errorf("%w: not a token ID: give the %d-character hex ID shown by `orchestrator token list`", ErrNotFound, IDLen)
	}
	s.revokeMu.Lock()
	defer s.revokeMu.Unlock()
	recs, err := s.r.List(ctx, collTokens, ref)
	if err != nil {
		return fmt.Errorf("revoke token %s: %w", ref, err)
	}
	switch len(recs) {
	case 0:
		return fmt.Errorf("%w: no token has ID %s: run `orchestrator token list` to see the IDs", ErrNotFound, ref)
	case 1:
	default:
		return fmt.Errorf("revoke token %s: the ID matches %d tokens: give more characters of the token's hash", ref, len(recs))
	}
	h := recs[0].Key
	if keepAdmin {
		if err := s.anotherAdmin(ctx, recs[0]); err != nil {
			return err
		}
	}
	if _, err := s.r.Write(ctx, statestore.Delete(collTokens, h), statestore.Delete(collUsed, h)); err != nil {
		return fmt.Errorf("revoke token %s: %w", ref, err)
	}
	s.mu.Lock()
	delete(s.used, h)
	s.mu.Unlock()
	return nil
}

// anotherAdmin returns an error wrapping ErrLastAdmin when rec is an
// admin token and no other admin token is readable.
func (s *Store) anotherAdmin(ctx context.Context, rec statestore.Record) error {
	var t Token
	if tokenKind.Decode(rec.Key[:min(len(rec.Key), IDLen)], rec.Value, &t) != nil || t.Role != RoleAdmin {
		return nil // an unreadable record can always be revoked
	}
	all, err := s.r.List(ctx, collTokens, "")
	if err != nil {
		return fmt.Errorf("revoke token %s: %w", rec.Key[:min(len(rec.Key), IDLen)], err)
	}
	for _, o := range all {
		var ot Token
		if o.Key != rec.Key && tokenKind.Decode(o.Key, o.Value, &ot) == nil && ot.Role == RoleAdmin {
			return nil
		}
	}
	return fmt.Errorf("%w: token %s is the only admin token, and without one nobody can manage tokens and secrets: "+
		"create another admin token first (`orchestrator token create --role admin`, or POST /api/v1/tokens as an admin), then revoke this one",
		ErrLastAdmin, rec.Key[:min(len(rec.Key), IDLen)])
}

// EnsureAdmin makes sure there is an admin token. When there is none (at
// the first start), it creates one named InitialAdminName and writes its
// plaintext, followed by a newline, to a new file at path with mode 0600
// (creating the parent directory with mode 0700). It refuses to overwrite
// an existing file. When an admin token exists, it does nothing and
// returns false.
func (s *Store) EnsureAdmin(ctx context.Context, path string) (created bool, err error) {
	toks, err := s.List(ctx)
	if err != nil {
		return false, err
	}
	for _, t := range toks {
		if t.Role == RoleAdmin {
			return false, nil
		}
	}
	if path == "" {
		return false, errors.New("create the initial admin token: no file to write it to: give a path for it")
	}
	exists := fmt.Errorf("create the initial admin token: %s already exists: remove it (after saving anything you need from it) and start again, or create an admin token with `orchestrator token create --role admin`", path)
	if _, err := os.Lstat(path); err == nil {
		return false, exists
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("create the initial admin token: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, exists
	}
	if err != nil {
		return false, fmt.Errorf("create the initial admin token: %w", err)
	}
	plain, tok, err := s.Create(ctx, RoleAdmin, InitialAdminName)
	if err != nil {
		_ = f.Close() // empty, and removed next
		return false, discardTokenFile(path, err)
	}
	_, werr := f.WriteString(plain + "\n")
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		err = fmt.Errorf("create the initial admin token: write %s: %w", path, err)
		if rerr := s.revoke(ctx, tok.ID, false); rerr != nil {
			err = fmt.Errorf("%w; revoke token %s with `orchestrator token revoke %s`", err, tok.ID, tok.ID)
		}
		return false, discardTokenFile(path, err)
	}
	return true, nil
}

// discardTokenFile removes the file a failed EnsureAdmin created and
// returns err, saying so when the file stays: it would make the next start
// refuse to write the token.
func discardTokenFile(path string, err error) error {
	if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return fmt.Errorf("%w; remove %s by hand before the next start (%v)", err, path, rerr)
	}
	return err
}
