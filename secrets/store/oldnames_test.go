package store

import (
	"bytes"
	"testing"

	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestReadsPreviousReleaseRecord: a secret stored by the release before
// the snake_case names (its key ID under "keyId") still decrypts.
func TestReadsPreviousReleaseRecord(t *testing.T) {
	ctx := t.Context()
	db := memory.New()
	s := newStore(t, db, testKey(3))
	if err := s.Put(ctx, "bmc", "hunter2-long-enough"); err != nil {
		t.Fatal(err)
	}
	raw, err := db.Get(ctx, coll, "bmc")
	if err != nil {
		t.Fatal(err)
	}
	// That release wrote no schema version, and camelCase names.
	old := bytes.Replace(bytes.Replace(raw, []byte(`{"v":2,`), []byte(`{`), 1), []byte(`"key_id":`), []byte(`"keyId":`), 1)
	if bytes.Equal(old, raw) {
		t.Fatalf("record has no key_id: %s", raw)
	}
	if _, err := db.Write(ctx, statestore.Put(coll, "bmc", old)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "bmc")
	if err != nil || string(got.Reveal()) != "hunter2-long-enough" {
		t.Fatalf("old record: %v", err)
	}
	infos, err := s.List(ctx)
	if err != nil || len(infos) != 1 || infos[0].Created.IsZero() {
		t.Fatalf("list: %v %+v", err, infos)
	}
}
