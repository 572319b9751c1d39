// Package storetest is a conformance suite for [statestore.Store]
// implementations. Call [Run] from the implementation's tests.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/slipway-dev/slipway/statestore"
)

// Run runs the conformance suite. open must return a new, empty store each
// time it is called; Run closes it at the end of each subtest.
func Run(t *testing.T, open func(t *testing.T) statestore.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s statestore.Store)
	}{
		{"Roundtrip", testRoundtrip},
		{"ZeroCreatedIsFilledIn", testZeroCreated},
		{"RePutCurrentIsUnchanged", testUnchanged},
		{"ReapplyOlderIsRestored", testRestored},
		{"PrefixLookup", testPrefix},
		{"AmbiguousPrefix", testAmbiguous},
		{"NotFound", testNotFound},
		{"EmptyStore", testEmpty},
		{"HistoryOrder", testHistory},
		{"CancelledContext", testCancelled},
		{"InvalidInput", testInvalid},
		{"NoAliasing", testNoAliasing},
		{"Concurrent", testConcurrent},
		{"Close", testClose},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

// cmpOpts compare revisions: times by instant (time.Time.Equal), nil and
// empty slices/maps alike.
var cmpOpts = []cmp.Option{cmpopts.EquateEmpty()}

// newRev returns a revision with every field set; its ID is the sha256 of
// the design.
func newRev(design string) statestore.Revision {
	sum := sha256.Sum256([]byte(design))
	return statestore.Revision{
		ID:        hex.EncodeToString(sum[:]),
		Created:   time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.FixedZone("CEST", 2*3600)),
		Roots:     []string{"designs/site-a", "désigns/shared"},
		GitCommit: "0123456789abcdef0123456789abcdef01234567",
		GitDirty:  true,
		Counts:    map[string]int{"Node": 8, "Network": 2},
		Design:    []byte(`{"design":` + fmt.Sprintf("%q", design) + `}`),
	}
}

// withID returns newRev(design) with a crafted ID.
func withID(design, id string) statestore.Revision {
	r := newRev(design)
	r.ID = id
	return r
}

// craftID returns a valid 64-character ID starting with prefix.
func craftID(prefix string, n int) string {
	return prefix + fmt.Sprintf("%0*x", statestore.IDLen-len(prefix), n)
}

func put(t *testing.T, s statestore.Store, r statestore.Revision, want statestore.PutResult) {
	t.Helper()
	got, err := s.PutRevision(t.Context(), r)
	if err != nil {
		t.Fatalf("PutRevision(%.12s): %v", r.ID, err)
	}
	if got != want {
		t.Fatalf("PutRevision(%.12s) = %v, want %v", r.ID, got, want)
	}
}

func get(t *testing.T, s statestore.Store, ref string) statestore.Revision {
	t.Helper()
	r, err := s.Revision(t.Context(), ref)
	if err != nil {
		t.Fatalf("Revision(%q): %v", ref, err)
	}
	return r
}

func current(t *testing.T, s statestore.Store) statestore.Revision {
	t.Helper()
	r, err := s.Current(t.Context())
	if err != nil {
		t.Fatalf("Current: %v", err)
	}
	return r
}

func history(t *testing.T, s statestore.Store) []statestore.RevisionInfo {
	t.Helper()
	h, err := s.History(t.Context())
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	return h
}

func historyIDs(t *testing.T, s statestore.Store) []string {
	t.Helper()
	var ids []string
	for _, h := range history(t, s) {
		ids = append(ids, h.ID)
	}
	return ids
}

func testRoundtrip(t *testing.T, s statestore.Store) {
	want := newRev("roundtrip")
	put(t, s, want, statestore.Created)
	for name, got := range map[string]statestore.Revision{
		"Revision": get(t, s, want.ID),
		"Current":  current(t, s),
	} {
		if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
			t.Errorf("%s mismatch (-put +got):\n%s", name, diff)
		}
		if string(got.Design) != string(want.Design) {
			t.Errorf("%s: design bytes differ", name)
		}
	}
}

func testZeroCreated(t *testing.T, s statestore.Store) {
	r := newRev("zero created")
	r.Created = time.Time{}
	before := time.Now().Round(0)
	put(t, s, r, statestore.Created)
	after := time.Now().Round(0)
	got := get(t, s, r.ID).Created
	if got.Before(before) || got.After(after) {
		t.Errorf("Created = %v, want between %v and %v", got, before, after)
	}
}

func testUnchanged(t *testing.T, s statestore.Store) {
	r := newRev("unchanged")
	put(t, s, r, statestore.Created)
	r2 := r.Clone()
	r2.Roots = []string{"elsewhere"}
	put(t, s, r2, statestore.Unchanged)
	if n := len(history(t, s)); n != 1 {
		t.Errorf("history has %d entries after an unchanged put, want 1", n)
	}
	if diff := cmp.Diff(r, current(t, s), cmpOpts...); diff != "" {
		t.Errorf("Current mismatch (-want +got):\n%s", diff)
	}
}

func testRestored(t *testing.T, s statestore.Store) {
	a, b := newRev("a"), newRev("b")
	put(t, s, a, statestore.Created)
	put(t, s, b, statestore.Created)
	if got := current(t, s).ID; got != b.ID {
		t.Fatalf("Current = %.12s, want b %.12s", got, b.ID)
	}
	again := a.Clone()
	again.Created = time.Now()
	again.GitCommit = "ffffffffffffffffffffffffffffffffffffffff"
	put(t, s, again, statestore.Restored)
	// Stored metadata is kept as it was first stored.
	if diff := cmp.Diff(a, current(t, s), cmpOpts...); diff != "" {
		t.Errorf("Current after restore mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{a.ID, b.ID, a.ID}, historyIDs(t, s)); diff != "" {
		t.Errorf("history IDs (-want +got):\n%s", diff)
	}
}

func testPrefix(t *testing.T, s statestore.Store) {
	beef := withID("beef", craftID("beef", 1))
	cafe := withID("cafe", craftID("cafe", 1))
	put(t, s, beef, statestore.Created)
	put(t, s, cafe, statestore.Created)
	for _, ref := range []string{"beef", "BEEF", beef.ID[:10], beef.ID, strings.ToUpper(beef.ID)} {
		if diff := cmp.Diff(beef, get(t, s, ref), cmpOpts...); diff != "" {
			t.Errorf("Revision(%q) mismatch (-want +got):\n%s", ref, diff)
		}
	}
	if got := get(t, s, "cafe").ID; got != cafe.ID {
		t.Errorf("Revision(cafe) = %s, want %s", got, cafe.ID)
	}
}

func testAmbiguous(t *testing.T, s statestore.Store) {
	one := withID("one", craftID("abcd", 1))
	two := withID("two", craftID("abcd", 2))
	put(t, s, one, statestore.Created)
	put(t, s, two, statestore.Created)
	for _, ref := range []string{"abcd", "abcd00"} {
		_, err := s.Revision(t.Context(), ref)
		if !errors.Is(err, statestore.ErrAmbiguous) {
			t.Errorf("Revision(%q) error = %v, want ErrAmbiguous", ref, err)
		} else if !strings.Contains(err.Error(), ref) {
			t.Errorf("Revision(%q) error %q does not name the prefix", ref, err)
		}
	}
	if got := get(t, s, two.ID).ID; got != two.ID {
		t.Errorf("Revision(full ID) = %s, want %s", got, two.ID)
	}
}

func testNotFound(t *testing.T, s statestore.Store) {
	put(t, s, withID("x", craftID("1234", 1)), statestore.Created)
	for _, ref := range []string{"ffff", "12345", craftID("1234", 2), newRev("never stored").ID} {
		_, err := s.Revision(t.Context(), ref)
		if !errors.Is(err, statestore.ErrNotFound) {
			t.Errorf("Revision(%q) error = %v, want ErrNotFound", ref, err)
		} else if !strings.Contains(err.Error(), ref) {
			t.Errorf("Revision(%q) error %q does not name the ID", ref, err)
		}
	}
}

func testEmpty(t *testing.T, s statestore.Store) {
	if _, err := s.Current(t.Context()); !errors.Is(err, statestore.ErrNotFound) {
		t.Errorf("Current on empty store: error = %v, want ErrNotFound", err)
	}
	if _, err := s.Revision(t.Context(), "abcd"); !errors.Is(err, statestore.ErrNotFound) {
		t.Errorf("Revision on empty store: error = %v, want ErrNotFound", err)
	}
	if h := history(t, s); len(h) != 0 {
		t.Errorf("History on empty store = %v, want none", h)
	}
}

func testHistory(t *testing.T, s statestore.Store) {
	a, b, c := newRev("a"), newRev("b"), newRev("c")
	b.Roots, b.GitDirty, b.Counts = []string{"b"}, false, map[string]int{"Node": 1}
	c.GitCommit = ""
	steps := []struct {
		rev  statestore.Revision
		want statestore.PutResult
	}{
		{a, statestore.Created}, {b, statestore.Created}, {b, statestore.Unchanged},
		{a, statestore.Restored}, {c, statestore.Created}, {b, statestore.Restored},
	}
	var want []statestore.RevisionInfo
	before := time.Now().Round(0)
	for _, st := range steps {
		put(t, s, st.rev, st.want)
		if st.want != statestore.Unchanged {
			want = append(want, st.rev.Info(time.Time{}, 0))
		}
	}
	after := time.Now().Round(0)

	got := history(t, s)
	ignore := cmpopts.IgnoreFields(statestore.RevisionInfo{}, "Applied", "Seq")
	if diff := cmp.Diff(want, got, append(cmpOpts, ignore)...); diff != "" {
		t.Fatalf("History mismatch (-want +got):\n%s", diff)
	}
	for i, h := range got {
		if h.Applied.Before(before) || h.Applied.After(after) {
			t.Errorf("entry %d: Applied = %v, want between %v and %v", i, h.Applied, before, after)
		}
		if i == 0 {
			continue
		}
		if prev := got[i-1]; h.Seq <= prev.Seq {
			t.Errorf("entry %d: Seq %d not after %d", i, h.Seq, prev.Seq)
		} else if h.Applied.Before(prev.Applied) {
			t.Errorf("entry %d: Applied %v before previous %v", i, h.Applied, prev.Applied)
		}
	}
	if got := current(t, s).ID; got != b.ID {
		t.Errorf("Current = %.12s, want last applied %.12s", got, b.ID)
	}
}

func testCancelled(t *testing.T, s statestore.Store) {
	r := newRev("cancelled")
	put(t, s, newRev("stored"), statestore.Created)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	calls := map[string]func() error{
		"PutRevision": func() error { _, err := s.PutRevision(ctx, r); return err },
		"Revision":    func() error { _, err := s.Revision(ctx, newRev("stored").ID); return err },
		"Current":     func() error { _, err := s.Current(ctx); return err },
		"History":     func() error { _, err := s.History(ctx); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with cancelled context: error = %v, want context.Canceled", name, err)
		}
	}
	if n := len(history(t, s)); n != 1 {
		t.Errorf("history has %d entries, want 1: cancelled put must not write", n)
	}
}

func testInvalid(t *testing.T, s statestore.Store) {
	valid := newRev("valid")
	mod := func(f func(r *statestore.Revision)) statestore.Revision {
		r := valid.Clone()
		f(&r)
		return r
	}
	for name, r := range map[string]statestore.Revision{
		"empty ID":     mod(func(r *statestore.Revision) { r.ID = "" }),
		"nil design":   mod(func(r *statestore.Revision) { r.Design = nil }),
		"empty design": mod(func(r *statestore.Revision) { r.Design = []byte{} }),
		"uppercase ID": mod(func(r *statestore.Revision) { r.ID = strings.ToUpper(r.ID) }),
		"short ID":     mod(func(r *statestore.Revision) { r.ID = r.ID[:40] }),
		"non-hex ID":   mod(func(r *statestore.Revision) { r.ID = "zz" + r.ID[2:] }),
	} {
		if res, err := s.PutRevision(t.Context(), r); err == nil {
			t.Errorf("PutRevision(%s) = %v, want error", name, res)
		}
	}
	if n := len(history(t, s)); n != 0 {
		t.Errorf("history has %d entries after invalid puts, want 0", n)
	}
	for _, ref := range []string{"", "abc", "  ", "wxyz", strings.Repeat("a", statestore.IDLen+1)} {
		if _, err := s.Revision(t.Context(), ref); err == nil {
			t.Errorf("Revision(%q) succeeded, want error", ref)
		}
	}
}

func testNoAliasing(t *testing.T, s statestore.Store) {
	in := newRev("aliasing")
	want := in.Clone()
	put(t, s, in, statestore.Created)
	scribble := func(r *statestore.Revision) {
		r.Roots[0] = "scribbled"
		r.Counts["Node"] = -1
		r.Counts["Extra"] = 1
		r.Design[0] = 'X'
	}
	scribble(&in)
	got := get(t, s, want.ID)
	scribble(&got)
	cur := current(t, s)
	scribble(&cur)
	for _, h := range history(t, s) {
		h.Roots[0] = "scribbled"
		h.Counts["Node"] = -1
	}
	if diff := cmp.Diff(want, get(t, s, want.ID), cmpOpts...); diff != "" {
		t.Errorf("stored revision changed by callers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Info(time.Time{}, 0), history(t, s)[0],
		append(cmpOpts, cmpopts.IgnoreFields(statestore.RevisionInfo{}, "Applied", "Seq"))...); diff != "" {
		t.Errorf("history changed by callers (-want +got):\n%s", diff)
	}
}

func testConcurrent(t *testing.T, s statestore.Store) {
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := newRev(fmt.Sprint("concurrent ", i))
			if _, err := s.PutRevision(t.Context(), r); err != nil {
				t.Errorf("PutRevision: %v", err)
			}
			if _, err := s.Revision(t.Context(), r.ID); err != nil {
				t.Errorf("Revision: %v", err)
			}
			if _, err := s.History(t.Context()); err != nil {
				t.Errorf("History: %v", err)
			}
		})
	}
	wg.Wait()
	if got := len(history(t, s)); got != n {
		t.Errorf("history has %d entries, want %d", got, n)
	}
}

func testClose(t *testing.T, s statestore.Store) {
	r := newRev("close")
	put(t, s, r, statestore.Created)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Current(t.Context()); err == nil {
		t.Error("Current after Close succeeded, want error")
	}
	if _, err := s.PutRevision(t.Context(), newRev("after close")); err == nil {
		t.Error("PutRevision after Close succeeded, want error")
	}
}
