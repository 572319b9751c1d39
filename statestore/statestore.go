// Package statestore defines where the orchestrator keeps its durable state.
//
// The state has two parts. The first is the history of applied designs:
// every design that is applied is stored once as a content-addressed
// [Revision], and every apply appends an entry to the apply history. The
// most recent history entry is the current revision. The second is the
// engine's working state, kept through [Records]: keyed records in named
// collections (e.g. node records, tasks) and append-only logs (e.g.
// events), changed together by atomic writes.
//
// Implementations live in sub-packages: [github.com/slipway-dev/slipway/statestore/bolt]
// keeps the state in a single bbolt file, and
// [github.com/slipway-dev/slipway/statestore/memory] keeps it in memory (for
// tests and dry runs). Both pass the conformance suite in
// [github.com/slipway-dev/slipway/statestore/storetest].
package statestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Revision is one stored, content-addressed design revision.
type Revision struct {
	ID        string    // content address: lowercase hex sha256 of Design (caller computes it)
	Created   time.Time // when this content was first stored
	Roots     []string  // design source roots as given by the operator
	GitCommit string    // HEAD commit of the git work tree holding the roots, "" if none
	GitDirty  bool      // the work tree had uncommitted changes under the roots
	// GitAuthor and GitMessage are the commit's author and the first line
	// of its message (git sync records them; "" otherwise, and in
	// revisions stored before they were).
	GitAuthor  string
	GitMessage string
	Counts     map[string]int // number of documents per kind, e.g. {"Node": 8}
	Design     []byte         // canonical JSON of the resolved design (opaque to the store)
}

// RevisionInfo is one entry of the apply history: the [Revision] without
// its Design bytes, plus when it was applied.
type RevisionInfo struct {
	ID         string
	Created    time.Time // when the content was first stored
	Applied    time.Time // when this apply happened
	Roots      []string
	GitCommit  string
	GitDirty   bool
	GitAuthor  string
	GitMessage string
	Counts     map[string]int
	Seq        uint64 // position in the history; strictly increasing, starts at 1
}

// PutResult says what [Store.PutRevision] did.
type PutResult int

const (
	// Unchanged: the ID is already the current revision; nothing was written.
	Unchanged PutResult = iota
	// Created: new content was stored and made current.
	Created
	// Restored: the content was already stored by an earlier apply; it was
	// made current again and a history entry was appended.
	Restored
)

// String returns "unchanged", "created" or "restored".
func (r PutResult) String() string {
	return enumName("PutResult", int(r), int(Unchanged), "unchanged", "created", "restored")
}

// Store keeps design revisions, the apply history and the engine's
// [Records].
//
// Every method returns ctx.Err() if ctx is already done. Returned values are
// copies: callers may modify them freely.
type Store interface {
	Records

	// PutRevision applies rev: it becomes the current revision.
	// rev.ID must be a lowercase hex sha256 (64 characters) and rev.Design
	// must not be empty. A zero rev.Created is replaced by the apply time.
	// When the content is already stored (Restored), the stored metadata
	// (Created, Roots, Git*, Counts) is kept and rev's metadata is ignored.
	PutRevision(ctx context.Context, rev Revision) (PutResult, error)
	// Revision returns the revision with the given ID or unique ID prefix
	// (at least MinPrefixLen hex characters, case-insensitive). The error
	// wraps ErrNotFound or ErrAmbiguous when no or several revisions match.
	Revision(ctx context.Context, idOrPrefix string) (Revision, error)
	// Current returns the most recently applied revision, or an error
	// wrapping ErrNotFound when nothing was applied yet.
	Current(ctx context.Context) (Revision, error)
	// History returns the apply history, oldest first.
	History(ctx context.Context) ([]RevisionInfo, error)
	// Close releases the store. Calling it again is harmless; other methods
	// fail after Close.
	Close() error
}

var (
	// ErrNotFound is wrapped by errors for revisions that are not stored.
	ErrNotFound = errors.New("design revision not found")
	// ErrAmbiguous is wrapped by errors for ID prefixes matching several revisions.
	ErrAmbiguous = errors.New("ambiguous design revision ID prefix")
)

const (
	// IDLen is the length of a full revision ID (hex sha256).
	IDLen = 64
	// MinPrefixLen is the shortest ID prefix accepted by [Store.Revision].
	MinPrefixLen = 4
)

// Validate reports whether r can be stored: ID must be a lowercase hex
// sha256 and Design must not be empty.
func (r Revision) Validate() error {
	switch {
	case r.ID == "":
		return errors.New("invalid design revision: empty ID")
	case len(r.ID) != IDLen || !isLowerHex(r.ID):
		return fmt.Errorf("invalid design revision ID %q: want %d lowercase hex characters (sha256)", r.ID, IDLen)
	case len(r.Design) == 0:
		return fmt.Errorf("invalid design revision %s: empty design", r.ID)
	}
	return nil
}

// Clone returns a deep copy of r.
func (r Revision) Clone() Revision {
	r.Roots = slices.Clone(r.Roots)
	r.Counts = maps.Clone(r.Counts)
	r.Design = bytes.Clone(r.Design)
	return r
}

// Info returns the history entry for r applied at the given time.
func (r Revision) Info(applied time.Time, seq uint64) RevisionInfo {
	return RevisionInfo{
		ID:        r.ID,
		Created:   r.Created,
		Applied:   applied,
		Roots:     slices.Clone(r.Roots),
		GitCommit: r.GitCommit,
		GitDirty:  r.GitDirty,
		GitAuthor: r.GitAuthor, GitMessage: r.GitMessage,
		Counts: maps.Clone(r.Counts),
		Seq:    seq,
	}
}

// NormalizeRef checks an ID or ID prefix given by a user and returns it in
// lowercase.
func NormalizeRef(idOrPrefix string) (string, error) {
	ref := strings.ToLower(strings.TrimSpace(idOrPrefix))
	switch {
	case len(ref) < MinPrefixLen:
		return "", fmt.Errorf("design revision %q: give at least %d hex characters of the ID", idOrPrefix, MinPrefixLen)
	case len(ref) > IDLen || !isLowerHex(ref):
		return "", fmt.Errorf("design revision %q: not a revision ID (want up to %d hex characters)", idOrPrefix, IDLen)
	}
	return ref, nil
}

// NotFoundError returns an error wrapping ErrNotFound for the ID asked for.
func NotFoundError(idOrPrefix string) error {
	return fmt.Errorf("%w: %q (run `orchestrator designs` to list stored revisions)", ErrNotFound, idOrPrefix)
}

// NoCurrentError returns the error wrapping ErrNotFound that [Store.Current]
// returns when no design was applied yet.
func NoCurrentError() error {
	return fmt.Errorf("%w: no design has been applied yet", ErrNotFound)
}

// AmbiguousError returns an error wrapping ErrAmbiguous for a prefix and the
// IDs it matches.
func AmbiguousError(prefix string, matches []string) error {
	const show = 5
	list := strings.Join(matches[:min(len(matches), show)], ", ")
	if len(matches) > show {
		list += ", …"
	}
	return fmt.Errorf("%w %q: it matches %d revisions (%s); give more characters of the ID",
		ErrAmbiguous, prefix, len(matches), list)
}

// StoreTime returns t ready to be stored: in UTC, without monotonic clock
// reading.
func StoreTime(t time.Time) time.Time {
	return t.Round(0).UTC()
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// CurrentID returns the ID of the most recently applied revision from the
// apply history, without loading the design itself (Current does). The
// error wraps ErrNotFound when nothing was applied yet.
func CurrentID(ctx context.Context, s interface {
	History(ctx context.Context) ([]RevisionInfo, error)
}) (string, error) {
	h, err := s.History(ctx)
	if err != nil {
		return "", err
	}
	if len(h) == 0 {
		return "", NoCurrentError()
	}
	return h[len(h)-1].ID, nil
}

// Watcher is a store that tells of changes to a collection's records as
// they are committed, by this process or another sharing the store.
type Watcher interface {
	// WatchRecords calls fn with the key of every record of coll put or
	// deleted after the call began, in commit order, until ctx ends, and
	// then returns ctx's error. When changes may have been missed (the
	// store compacted the history the watch needed) fn gets "": treat
	// every record of coll as changed. fn must not block long.
	WatchRecords(ctx context.Context, coll string, fn func(key string)) error
}
