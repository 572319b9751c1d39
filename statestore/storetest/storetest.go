// Package storetest is a conformance suite for [statestore.Store]
// implementations, covering design revisions and [statestore.Records].
// Call [Run] from the implementation's tests.
package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
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
		{"RecordPutGetDelete", testRecordPutGet},
		{"RecordOpsInOrder", testRecordOrder},
		{"RecordList", testRecordList},
		{"RecordEmptyAndLargeValues", testRecordValues},
		{"RecordNameAndKeyLimits", testRecordLimits},
		{"RecordWriteAtomic", testRecordAtomic},
		{"RecordInvalidReads", testRecordInvalidReads},
		{"LogAppend", testLogAppend},
		{"ReadLog", testReadLog},
		{"RecordNoAliasing", testRecordNoAliasing},
		{"RecordCancelledContext", testRecordCancelled},
		{"RecordClose", testRecordClose},
		{"RecordConcurrent", testRecordConcurrent},
		{"RecordAttachment", testRecordAttachment},
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
		GitAuthor: "Ada Lovelace <ada@example.net>",
		// GitMessage: the commit's first line, as the API records it.
		GitMessage: "site: move rack 3 to the new VLAN",
		Counts:     map[string]int{"Node": 8, "Network": 2},
		Design:     []byte(`{"design":` + fmt.Sprintf("%q", design) + `}`),
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

// write calls s.Write and fails the test on error.
func write(t *testing.T, s statestore.Store, ops ...statestore.Op) []uint64 {
	t.Helper()
	seqs, err := s.Write(t.Context(), ops...)
	if err != nil {
		t.Fatalf("Write(%d ops): %v", len(ops), err)
	}
	return seqs
}

// getRecord returns the value of coll/key and whether it is stored; other
// errors than ErrNoRecord fail the test.
func getRecord(t *testing.T, s statestore.Store, coll, key string) (string, bool) {
	t.Helper()
	v, err := s.Get(t.Context(), coll, key)
	if errors.Is(err, statestore.ErrNoRecord) {
		return "", false
	}
	if err != nil {
		t.Fatalf("Get(%q, %q): %v", coll, key, err)
	}
	if v == nil {
		t.Errorf("Get(%q, %q) returned nil value and no error, want a non-nil (possibly empty) value", coll, key)
	}
	return string(v), true
}

// wantRecord checks that coll/key holds want.
func wantRecord(t *testing.T, s statestore.Store, coll, key, want string) {
	t.Helper()
	if got, ok := getRecord(t, s, coll, key); !ok {
		t.Errorf("Get(%q, %q): not found, want %q", coll, key, want)
	} else if got != want {
		t.Errorf("Get(%q, %q) = %q, want %q", coll, key, got, want)
	}
}

// wantNoRecord checks that coll/key is absent and that the error names it.
func wantNoRecord(t *testing.T, s statestore.Store, coll, key string) {
	t.Helper()
	v, err := s.Get(t.Context(), coll, key)
	switch {
	case err == nil:
		t.Errorf("Get(%q, %q) = %q, want ErrNoRecord", coll, key, v)
	case !errors.Is(err, statestore.ErrNoRecord):
		t.Errorf("Get(%q, %q) error = %v, want ErrNoRecord", coll, key, err)
	case !strings.Contains(err.Error(), coll) || !strings.Contains(err.Error(), key):
		t.Errorf("Get(%q, %q) error %q does not name the collection and key", coll, key, err)
	}
}

// kv is a record or log entry with a string value, for readable diffs.
type kv struct {
	Key   string
	Seq   uint64
	Value string
}

func list(t *testing.T, s statestore.Store, coll, prefix string) []kv {
	t.Helper()
	recs, err := s.List(t.Context(), coll, prefix)
	if err != nil {
		t.Fatalf("List(%q, %q): %v", coll, prefix, err)
	}
	out := []kv{}
	for _, r := range recs {
		out = append(out, kv{Key: r.Key, Value: string(r.Value)})
	}
	return out
}

func listKeys(t *testing.T, s statestore.Store, coll, prefix string) []string {
	t.Helper()
	keys := []string{}
	for _, r := range list(t, s, coll, prefix) {
		keys = append(keys, r.Key)
	}
	return keys
}

func readLog(t *testing.T, s statestore.Store, log string, after uint64, limit int) []kv {
	t.Helper()
	entries, err := s.ReadLog(t.Context(), log, after, limit)
	if err != nil {
		t.Fatalf("ReadLog(%q, %d, %d): %v", log, after, limit, err)
	}
	out := []kv{}
	for _, e := range entries {
		out = append(out, kv{Seq: e.Seq, Value: string(e.Value)})
	}
	return out
}

func lastSeq(t *testing.T, s statestore.Store, log string) uint64 {
	t.Helper()
	seq, err := s.LastSeq(t.Context(), log)
	if err != nil {
		t.Fatalf("LastSeq(%q): %v", log, err)
	}
	return seq
}

// entries returns log entries with the given seqs and values.
func entries(seqValues ...any) []kv {
	out := []kv{}
	for i := 0; i < len(seqValues); i += 2 {
		out = append(out, kv{Seq: uint64(seqValues[i].(int)), Value: seqValues[i+1].(string)})
	}
	return out
}

func testRecordPutGet(t *testing.T, s statestore.Store) {
	wantNoRecord(t, s, "nodes", "n1") // unknown collection
	if seqs := write(t, s,
		statestore.Put("nodes", "n1", []byte("v1")),
		statestore.Put("nodes", "n2", []byte("v2")),
	); len(seqs) != 0 {
		t.Errorf("Write of puts returned seqs %v, want none", seqs)
	}
	wantRecord(t, s, "nodes", "n1", "v1")
	wantRecord(t, s, "nodes", "n2", "v2")
	wantNoRecord(t, s, "nodes", "n3") // known collection, unknown key

	write(t, s, statestore.Put("nodes", "n1", []byte("v1, second version")))
	wantRecord(t, s, "nodes", "n1", "v1, second version")
	wantRecord(t, s, "nodes", "n2", "v2")

	// Same key, other collection: independent.
	write(t, s, statestore.Put("tasks", "n1", []byte("task")))
	wantRecord(t, s, "tasks", "n1", "task")
	wantRecord(t, s, "nodes", "n1", "v1, second version")

	write(t, s, statestore.Delete("nodes", "n1"))
	wantNoRecord(t, s, "nodes", "n1")
	wantRecord(t, s, "nodes", "n2", "v2")
	wantRecord(t, s, "tasks", "n1", "task")
	if diff := cmp.Diff([]kv{{Key: "n2", Value: "v2"}}, list(t, s, "nodes", "")); diff != "" {
		t.Errorf("List after delete (-want +got):\n%s", diff)
	}

	// Deleting what is not there is not an error.
	write(t, s, statestore.Delete("nodes", "n1"))
	write(t, s, statestore.Delete("never-written", "k"))
	wantNoRecord(t, s, "never-written", "k")

	// A deleted key can be put again.
	write(t, s, statestore.Put("nodes", "n1", []byte("v1, third version")))
	wantRecord(t, s, "nodes", "n1", "v1, third version")
}

func testRecordOrder(t *testing.T, s statestore.Store) {
	const c = "order"
	write(t, s, statestore.Put(c, "k", []byte("1")), statestore.Put(c, "k", []byte("2")))
	wantRecord(t, s, c, "k", "2")
	write(t, s, statestore.Put(c, "k", []byte("3")), statestore.Delete(c, "k"))
	wantNoRecord(t, s, c, "k")
	write(t, s, statestore.Delete(c, "k2"), statestore.Put(c, "k2", []byte("x")))
	wantRecord(t, s, c, "k2", "x")

	// Put and Delete in one Write on a collection that did not exist.
	write(t, s, statestore.Put("fresh", "a", []byte("a")), statestore.Delete("fresh", "a"))
	wantNoRecord(t, s, "fresh", "a")
	if got := list(t, s, "fresh", ""); len(got) != 0 {
		t.Errorf("List(fresh) = %v, want none", got)
	}
}

func testRecordList(t *testing.T, s statestore.Store) {
	const c = "list"
	keys := []string{
		"node-10", "node-2", "node-1", "node-1/x", "node", "nod", "nodf",
		"a", "a/b", "a0", "Z", "z", "é", "éa", "\x00", "\xff", "\xff\xff", " ",
	}
	var ops []statestore.Op
	for _, k := range keys {
		ops = append(ops, statestore.Put(c, k, []byte("value of "+k)))
	}
	write(t, s, ops...)
	// Noise in other collections and a log of the same name.
	write(t, s,
		statestore.Put("lis", "node-3", nil),
		statestore.Put("list2", "node-3", nil),
		statestore.Append(c, []byte("node-4")),
	)

	sorted := slices.Clone(keys)
	slices.Sort(sorted) // Go orders strings by bytes
	if diff := cmp.Diff(sorted, listKeys(t, s, c, "")); diff != "" {
		t.Errorf("List(%q, \"\") keys (-want +got):\n%s", c, diff)
	}
	for _, r := range list(t, s, c, "") {
		if r.Value != "value of "+r.Key {
			t.Errorf("List: record %q has value %q", r.Key, r.Value)
		}
	}
	for prefix, want := range map[string][]string{
		"node":     {"node", "node-1", "node-1/x", "node-10", "node-2"},
		"node-":    {"node-1", "node-1/x", "node-10", "node-2"},
		"node-1":   {"node-1", "node-1/x", "node-10"}, // '/' < '0'
		"node-1/":  {"node-1/x"},
		"node-1/x": {"node-1/x"},
		"nod":      {"nod", "node", "node-1", "node-1/x", "node-10", "node-2", "nodf"},
		"a":        {"a", "a/b", "a0"},
		"Z":        {"Z"},
		"é":        {"é", "éa"},
		"\xff":     {"\xff", "\xff\xff"},
		"\x00":     {"\x00"},
		"zz":       {},
		"node-10x": {},
		"b":        {},
	} {
		if diff := cmp.Diff(want, listKeys(t, s, c, prefix)); diff != "" {
			t.Errorf("List(%q, %q) keys (-want +got):\n%s", c, prefix, diff)
		}
	}
	if got := list(t, s, "never-written", ""); len(got) != 0 {
		t.Errorf("List of unknown collection = %v, want none", got)
	}
	if got := list(t, s, "never-written", "node"); len(got) != 0 {
		t.Errorf("List of unknown collection with prefix = %v, want none", got)
	}
}

func testRecordValues(t *testing.T, s statestore.Store) {
	const c = "values"
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	large := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	seqs := write(t, s,
		statestore.Put(c, "nil", nil),
		statestore.Put(c, "empty", []byte{}),
		statestore.Put(c, "all-bytes", all),
		statestore.Put(c, "large", large),
		statestore.Append("log", nil),
		statestore.Append("log", []byte{}),
		statestore.Append("log", large),
	)
	if diff := cmp.Diff([]uint64{1, 2, 3}, seqs); diff != "" {
		t.Errorf("Write seqs (-want +got):\n%s", diff)
	}
	wantRecord(t, s, c, "nil", "")
	wantRecord(t, s, c, "empty", "")
	wantRecord(t, s, c, "all-bytes", string(all))
	if got, _ := getRecord(t, s, c, "large"); got != string(large) {
		t.Errorf("large value: got %d bytes back, want the %d bytes written", len(got), len(large))
	}
	if diff := cmp.Diff([]string{"all-bytes", "empty", "large", "nil"}, listKeys(t, s, c, "")); diff != "" {
		t.Errorf("List keys (-want +got):\n%s", diff)
	}
	got := readLog(t, s, "log", 0, 0)
	if diff := cmp.Diff(entries(1, "", 2, ""), got[:min(2, len(got))]); diff != "" {
		t.Errorf("ReadLog empty values (-want +got):\n%s", diff)
	}
	if len(got) != 3 || got[2].Value != string(large) {
		t.Errorf("ReadLog: want 3 entries, the last the large value; got %d entries", len(got))
	}
}

func testRecordLimits(t *testing.T, s statestore.Store) {
	longName := strings.Repeat("a", statestore.MaxNameLen)
	longKey := strings.Repeat("k", statestore.MaxKeyLen)
	names := []string{"0", "a", "task_nodes", "node-records", "a-b_c-9", longName}
	for _, name := range names {
		write(t, s, statestore.Put(name, longKey, []byte(name)), statestore.Append(name, []byte(name)))
		if got, _ := getRecord(t, s, name, longKey); got != name {
			t.Errorf("Get(%.20q…, long key) = %q, want %q", name, got, name)
		}
		if got := lastSeq(t, s, name); got != 1 {
			t.Errorf("LastSeq(%.20q…) = %d, want 1", name, got)
		}
	}
}

// invalidOps are ops that Write must reject.
func invalidOps() map[string]statestore.Op {
	v := []byte("v")
	return map[string]statestore.Op{
		"empty collection":         statestore.Put("", "k", v),
		"uppercase collection":     statestore.Put("Nodes", "k", v),
		"slash in collection":      statestore.Put("a/b", "k", v),
		"space in collection":      statestore.Put("a b", "k", v),
		"dot in collection":        statestore.Put("a.b", "k", v),
		"non-ASCII collection":     statestore.Put("nöde", "k", v),
		"too long collection":      statestore.Put(strings.Repeat("a", statestore.MaxNameLen+1), "k", v),
		"empty key":                statestore.Put("nodes", "", v),
		"too long key":             statestore.Put("nodes", strings.Repeat("k", statestore.MaxKeyLen+1), v),
		"delete with empty key":    statestore.Delete("nodes", ""),
		"delete, invalid coll":     statestore.Delete("NODES", "k"),
		"delete with value":        {Kind: statestore.OpDelete, Coll: "nodes", Key: "k", Value: v},
		"append to empty log name": statestore.Append("", v),
		"append to invalid log":    statestore.Append("Events", v),
		"append with key":          {Kind: statestore.OpAppend, Coll: "events", Key: "k", Value: v},
		"zero kind":                {Coll: "nodes", Key: "k", Value: v},
		"unknown kind":             {Kind: 99, Coll: "nodes", Key: "k", Value: v},
	}
}

func testRecordAtomic(t *testing.T, s statestore.Store) {
	write(t, s,
		statestore.Put("nodes", "keep", []byte("old")),
		statestore.Put("nodes", "doomed", []byte("old")),
		statestore.Append("events", []byte("e1")),
	)
	valid := []statestore.Op{
		statestore.Put("nodes", "keep", []byte("new")),
		statestore.Put("nodes", "added", []byte("x")),
		statestore.Delete("nodes", "doomed"),
		statestore.Put("new-coll", "k", []byte("x")),
		statestore.Append("events", []byte("e2")),
		statestore.Append("new-log", []byte("n")),
	}
	for name, bad := range invalidOps() {
		for _, pos := range []int{0, 3, len(valid)} {
			ops := slices.Insert(slices.Clone(valid), pos, bad)
			seqs, err := s.Write(t.Context(), ops...)
			if err == nil {
				t.Errorf("Write with %s at %d = %v, want error", name, pos, seqs)
			} else if errors.Is(err, statestore.ErrNoRecord) {
				t.Errorf("Write with %s: error %v wraps ErrNoRecord", name, err)
			}
		}
	}
	wantRecord(t, s, "nodes", "keep", "old")
	wantRecord(t, s, "nodes", "doomed", "old")
	wantNoRecord(t, s, "nodes", "added")
	wantNoRecord(t, s, "new-coll", "k")
	if got := list(t, s, "new-coll", ""); len(got) != 0 {
		t.Errorf("List(new-coll) = %v, want none after failed writes", got)
	}
	if diff := cmp.Diff(entries(1, "e1"), readLog(t, s, "events", 0, 0)); diff != "" {
		t.Errorf("events after failed writes (-want +got):\n%s", diff)
	}
	if got := lastSeq(t, s, "new-log"); got != 0 {
		t.Errorf("LastSeq(new-log) = %d after failed writes, want 0", got)
	}
	// Failed writes used no sequence numbers.
	if diff := cmp.Diff([]uint64{2, 1}, write(t, s, valid...)); diff != "" {
		t.Errorf("seqs of the valid write after failed ones (-want +got):\n%s", diff)
	}
	wantRecord(t, s, "nodes", "keep", "new")
	wantNoRecord(t, s, "nodes", "doomed")
}

func testRecordInvalidReads(t *testing.T, s statestore.Store) {
	write(t, s, statestore.Put("nodes", "k", []byte("v")), statestore.Append("events", []byte("e")))
	ctx := t.Context()
	calls := map[string]func() error{
		"Get empty collection":   func() error { _, err := s.Get(ctx, "", "k"); return err },
		"Get invalid collection": func() error { _, err := s.Get(ctx, "No/des", "k"); return err },
		"Get empty key":          func() error { _, err := s.Get(ctx, "nodes", ""); return err },
		"List empty collection":  func() error { _, err := s.List(ctx, "", ""); return err },
		"List invalid":           func() error { _, err := s.List(ctx, "NODES", "k"); return err },
		"ReadLog empty name":     func() error { _, err := s.ReadLog(ctx, "", 0, 0); return err },
		"ReadLog invalid":        func() error { _, err := s.ReadLog(ctx, "ev ents", 0, 0); return err },
		"LastSeq empty name":     func() error { _, err := s.LastSeq(ctx, ""); return err },
		"LastSeq invalid":        func() error { _, err := s.LastSeq(ctx, "Events"); return err },
	}
	for name, call := range calls {
		if err := call(); err == nil {
			t.Errorf("%s succeeded, want error", name)
		} else if errors.Is(err, statestore.ErrNoRecord) {
			t.Errorf("%s: error %v wraps ErrNoRecord, want a validation error", name, err)
		}
	}
}

func testLogAppend(t *testing.T, s statestore.Store) {
	if got := lastSeq(t, s, "events"); got != 0 {
		t.Errorf("LastSeq of unknown log = %d, want 0", got)
	}
	check := func(want []uint64, ops ...statestore.Op) {
		t.Helper()
		if diff := cmp.Diff(want, write(t, s, ops...), cmpOpts...); diff != "" {
			t.Errorf("Write seqs (-want +got):\n%s", diff)
		}
	}
	check([]uint64{1}, statestore.Append("events", []byte("a")))
	check([]uint64{2, 3}, statestore.Append("events", []byte("b")), statestore.Append("events", []byte("c")))
	check([]uint64{1}, statestore.Append("audit", []byte("x"))) // logs are independent
	check([]uint64{2, 4, 3},
		statestore.Put("nodes", "n", []byte("v")),
		statestore.Append("audit", []byte("y")),
		statestore.Put("nodes", "m", []byte("w")),
		statestore.Append("events", []byte("d")),
		statestore.Append("audit", []byte("z")),
	)
	check(nil, statestore.Put("nodes", "o", []byte("u")))
	check(nil) // no ops at all

	// A collection named like a log is another thing.
	check(nil, statestore.Put("events", "k", []byte("record")))
	wantRecord(t, s, "events", "k", "record")
	if got := list(t, s, "audit", ""); len(got) != 0 {
		t.Errorf("List(audit) = %v, want none: audit is a log, not a collection", got)
	}

	for log, want := range map[string]uint64{"events": 4, "audit": 3, "nodes": 0} {
		if got := lastSeq(t, s, log); got != want {
			t.Errorf("LastSeq(%q) = %d, want %d", log, got, want)
		}
	}
	if diff := cmp.Diff(entries(1, "a", 2, "b", 3, "c", 4, "d"), readLog(t, s, "events", 0, 0)); diff != "" {
		t.Errorf("ReadLog(events) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(entries(1, "x", 2, "y", 3, "z"), readLog(t, s, "audit", 0, 0)); diff != "" {
		t.Errorf("ReadLog(audit) (-want +got):\n%s", diff)
	}
	check([]uint64{5}, statestore.Append("events", []byte("e")))
	if got := lastSeq(t, s, "events"); got != 5 {
		t.Errorf("LastSeq(events) = %d, want 5", got)
	}
}

func testReadLog(t *testing.T, s statestore.Store) {
	const n = 10
	for i := 1; i <= n; {
		var ops []statestore.Op
		for range min(i, n-i+1) { // writes of 1, 2, 3 and 4 entries
			ops = append(ops, statestore.Append("events", fmt.Appendf(nil, "e%d", i)))
			i++
		}
		write(t, s, ops...)
	}
	seqs := func(from, to int) []kv {
		out := []kv{}
		for i := from; i <= to; i++ {
			out = append(out, kv{Seq: uint64(i), Value: fmt.Sprintf("e%d", i)})
		}
		return out
	}
	for _, tt := range []struct {
		after uint64
		limit int
		want  []kv
	}{
		{0, 0, seqs(1, n)},
		{0, -1, seqs(1, n)},
		{0, 1, seqs(1, 1)},
		{0, 3, seqs(1, 3)},
		{0, n, seqs(1, n)},
		{0, 100, seqs(1, n)},
		{3, 0, seqs(4, n)},
		{3, 2, seqs(4, 5)},
		{9, 5, seqs(10, 10)},
		{n, 0, nil},
		{n + 1, 1, nil},
		{math.MaxUint64 - 1, 0, nil},
		{math.MaxUint64, 0, nil},
		{math.MaxUint64, 5, nil},
	} {
		if diff := cmp.Diff(tt.want, readLog(t, s, "events", tt.after, tt.limit), cmpOpts...); diff != "" {
			t.Errorf("ReadLog(events, after %d, limit %d) (-want +got):\n%s", tt.after, tt.limit, diff)
		}
	}

	checkPagedReadLog(t, s, seqs(1, n))

	write(t, s, statestore.Put("coll-only", "k", []byte("v")))
	for _, log := range []string{"never-written", "coll-only"} {
		if got := readLog(t, s, log, 0, 0); len(got) != 0 {
			t.Errorf("ReadLog(%q) = %v, want none", log, got)
		}
	}
}

// checkPagedReadLog reads the events log in pages of 3, each after the
// last seq of the one before: together they must be want.
func checkPagedReadLog(t *testing.T, s statestore.Store, want []kv) {
	var paged []kv
	for after := uint64(0); ; {
		page := readLog(t, s, "events", after, 3)
		if len(page) == 0 {
			break
		}
		if len(page) > 3 {
			t.Fatalf("ReadLog with limit 3 returned %d entries", len(page))
		}
		paged = append(paged, page...)
		after = page[len(page)-1].Seq
	}
	if diff := cmp.Diff(want, paged); diff != "" {
		t.Errorf("log read in pages of 3 (-want +got):\n%s", diff)
	}
}

func testRecordNoAliasing(t *testing.T, s statestore.Store) {
	const c = "aliasing"
	in := []byte("record")
	ev := []byte("event")
	ops := []statestore.Op{statestore.Put(c, "k", in), statestore.Append("log", ev)}
	write(t, s, ops...)
	// Big neighbours, so that a store keeping small collections or logs in
	// a special way (e.g. bbolt inline buckets) is also tested the usual way.
	filler := bytes.Repeat([]byte{'f'}, 8<<10)
	write(t, s, statestore.Put(c, "l", filler), statestore.Put(c, "m", filler), statestore.Append("log", filler))
	in[0], ev[0] = 'X', 'X'
	ops[0].Value[1], ops[1].Value[1] = 'Y', 'Y'

	got, err := s.Get(t.Context(), c, "k")
	if err != nil {
		t.Fatal(err)
	}
	got[2] = 'Z'
	recs, err := s.List(t.Context(), c, "")
	if err != nil || len(recs) != 3 {
		t.Fatalf("List = %d records, %v; want 3", len(recs), err)
	}
	for i := range recs {
		recs[i].Value[0] = 'Z'
		recs[i].Key = "scribbled"
	}
	es, err := s.ReadLog(t.Context(), "log", 0, 0)
	if err != nil || len(es) != 2 {
		t.Fatalf("ReadLog = %d entries, %v; want 2", len(es), err)
	}
	for i := range es {
		es[i].Value[0] = 'Z'
		es[i].Seq = 99
	}

	wantRecord(t, s, c, "k", "record")
	wantRecord(t, s, c, "l", string(filler))
	if diff := cmp.Diff([]kv{{Key: "k", Value: "record"}, {Key: "l", Value: string(filler)}, {Key: "m", Value: string(filler)}},
		list(t, s, c, "")); diff != "" {
		t.Errorf("List after callers scribbled (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(entries(1, "event", 2, string(filler)), readLog(t, s, "log", 0, 0)); diff != "" {
		t.Errorf("ReadLog after callers scribbled (-want +got):\n%s", diff)
	}

	// Values read stay valid while the store changes and grows.
	got, err = s.Get(t.Context(), c, "k")
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte{'b'}, 1<<20)
	for i := range 4 {
		write(t, s, statestore.Put(c, "k", []byte("changed")), statestore.Put("filler", fmt.Sprint(i), big))
	}
	if string(got) != "record" {
		t.Errorf("value returned by Get changed to %.20q… after later writes", got)
	}
}

func testRecordCancelled(t *testing.T, s statestore.Store) {
	write(t, s, statestore.Put("nodes", "k", []byte("v")), statestore.Append("events", []byte("e")))
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancel2 := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel2()
	for ctx, want := range map[context.Context]error{cancelled: context.Canceled, expired: context.DeadlineExceeded} {
		calls := map[string]func() error{
			"Write": func() error {
				_, err := s.Write(ctx, statestore.Put("nodes", "new", []byte("v")), statestore.Append("events", []byte("e2")))
				return err
			},
			"Write no ops": func() error { _, err := s.Write(ctx); return err },
			"Get":          func() error { _, err := s.Get(ctx, "nodes", "k"); return err },
			"List":         func() error { _, err := s.List(ctx, "nodes", ""); return err },
			"ReadLog":      func() error { _, err := s.ReadLog(ctx, "events", 0, 0); return err },
			"LastSeq":      func() error { _, err := s.LastSeq(ctx, "events"); return err },
		}
		for name, call := range calls {
			if err := call(); !errors.Is(err, want) {
				t.Errorf("%s with done context: error = %v, want %v", name, err, want)
			}
		}
	}
	wantNoRecord(t, s, "nodes", "new")
	if got := lastSeq(t, s, "events"); got != 1 {
		t.Errorf("LastSeq(events) = %d, want 1: cancelled writes must not write", got)
	}
}

func testRecordClose(t *testing.T, s statestore.Store) {
	write(t, s, statestore.Put("nodes", "k", []byte("v")), statestore.Append("events", []byte("e")))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := t.Context()
	calls := map[string]func() error{
		"Write":        func() error { _, err := s.Write(ctx, statestore.Put("nodes", "k2", []byte("v"))); return err },
		"Write append": func() error { _, err := s.Write(ctx, statestore.Append("events", []byte("e"))); return err },
		"Write no ops": func() error { _, err := s.Write(ctx); return err },
		"Get":          func() error { _, err := s.Get(ctx, "nodes", "k"); return err },
		"List":         func() error { _, err := s.List(ctx, "nodes", ""); return err },
		"ReadLog":      func() error { _, err := s.ReadLog(ctx, "events", 0, 0); return err },
		"LastSeq":      func() error { _, err := s.LastSeq(ctx, "events"); return err },
	}
	for name, call := range calls {
		if err := call(); err == nil {
			t.Errorf("%s after Close succeeded, want error", name)
		} else if errors.Is(err, statestore.ErrNoRecord) {
			t.Errorf("%s after Close: error %v wraps ErrNoRecord", name, err)
		}
	}
}

// concurrentResult is what one writer of testRecordConcurrent was told:
// the seqs of its two events entries and of its own log's entry.
type concurrentResult struct{ events, own []uint64 }

const (
	concurrentWriters = 50
	concurrentLogs    = 5 // writer i also appends to log "log-<i%concurrentLogs>"
)

func testRecordConcurrent(t *testing.T, s statestore.Store) {
	const writers, logs = concurrentWriters, concurrentLogs
	results := make([]concurrentResult, writers)
	var (
		writersWG, readersWG sync.WaitGroup
		done                 = make(chan struct{})
	)
	for range 4 { // readers, racing with the writers
		readersWG.Go(func() { readWhileWriting(t, s, done) })
	}
	for i := range writers {
		writersWG.Go(func() {
			seqs, err := s.Write(t.Context(),
				statestore.Put("nodes", fmt.Sprintf("node-%02d", i), fmt.Appendf(nil, "record %d", i)),
				statestore.Append("events", fmt.Appendf(nil, "%d.a", i)),
				statestore.Append(fmt.Sprint("log-", i%logs), fmt.Appendf(nil, "%d", i)),
				statestore.Append("events", fmt.Appendf(nil, "%d.b", i)),
			)
			if err != nil {
				t.Errorf("writer %d: Write: %v", i, err)
				return
			}
			if len(seqs) != 3 {
				t.Errorf("writer %d: Write returned %d seqs %v, want 3", i, len(seqs), seqs)
				return
			}
			results[i] = concurrentResult{events: []uint64{seqs[0], seqs[2]}, own: seqs[1:2]}
			if v, err := s.Get(t.Context(), "nodes", fmt.Sprintf("node-%02d", i)); err != nil || string(v) != fmt.Sprintf("record %d", i) {
				t.Errorf("writer %d: Get own record after Write = %q, %v", i, v, err)
			}
		})
	}
	writersWG.Wait()
	close(done)
	readersWG.Wait()
	if t.Failed() {
		return
	}

	if got := len(list(t, s, "nodes", "")); got != writers {
		t.Errorf("List(nodes) has %d records, want %d", got, writers)
	}
	checkConcurrentLogs(t, s, results)
}

// readWhileWriting lists, reads the events log and its last seq until done
// is closed: what a reader sees must be whole (seqs 1, 2, ... in order).
func readWhileWriting(t *testing.T, s statestore.Store, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		default:
		}
		if _, err := s.List(t.Context(), "nodes", "node-"); err != nil {
			t.Errorf("List: %v", err)
		}
		es, err := s.ReadLog(t.Context(), "events", 0, 0)
		if err != nil {
			t.Errorf("ReadLog: %v", err)
		}
		for i, e := range es {
			if e.Seq != uint64(i+1) {
				t.Errorf("ReadLog while writing: entry %d has Seq %d", i, e.Seq)
				break
			}
		}
		if _, err := s.LastSeq(t.Context(), "events"); err != nil {
			t.Errorf("LastSeq: %v", err)
		}
	}
}

// checkConcurrentLogs checks the logs testRecordConcurrent's writers left
// against the seqs each was told.
func checkConcurrentLogs(t *testing.T, s statestore.Store, results []concurrentResult) {
	const writers, logs = concurrentWriters, concurrentLogs
	// Every events entry is where its writer was told it is; the two
	// appends of one Write are consecutive.
	want := map[uint64]string{}
	for i, r := range results {
		if r.events[1] != r.events[0]+1 {
			t.Errorf("writer %d: events seqs %v, want consecutive", i, r.events)
		}
		for j, seq := range r.events {
			if prev, dup := want[seq]; dup {
				t.Errorf("events seq %d given to %q and %d", seq, prev, i)
			}
			want[seq] = fmt.Sprintf("%d.%c", i, 'a'+j)
		}
	}
	got := map[uint64]string{}
	for _, e := range readLog(t, s, "events", 0, 0) {
		got[e.Seq] = e.Value
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events log vs seqs returned by Write (-returned +log):\n%s", diff)
	}
	if got := lastSeq(t, s, "events"); got != 2*writers {
		t.Errorf("LastSeq(events) = %d, want %d", got, 2*writers)
	}
	for l := range logs {
		log := fmt.Sprint("log-", l)
		want := map[uint64]string{}
		for i := l; i < writers; i += logs {
			want[results[i].own[0]] = fmt.Sprint(i)
		}
		got := map[uint64]string{}
		for j, e := range readLog(t, s, log, 0, 0) {
			if e.Seq != uint64(j+1) {
				t.Errorf("%s entry %d has Seq %d, want %d", log, j, e.Seq, j+1)
			}
			got[e.Seq] = e.Value
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s vs seqs returned by Write (-returned +log):\n%s", log, diff)
		}
	}
}
