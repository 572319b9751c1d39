package store

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// testdata/secret-bmc.json is the record the release before schema
// versions stored for secret "bmc" = "hunter2-long-enough" under
// testKey(3) (written by that release's Put).
const fixtureFile = "testdata/secret-bmc.json"

// TestSecretRecordVersions: a secret stored by the release before schema
// versions still decrypts; a new one carries its version; one a newer
// release wrote (version 3) is refused, naming the secret and version.
func TestSecretRecordVersions(t *testing.T) {
	ctx := t.Context()
	old, err := os.ReadFile(fixtureFile)
	if err != nil {
		t.Fatal(err)
	}
	db := memory.New()
	s := newStore(t, db, testKey(3))
	if _, err := db.Write(ctx, statestore.Put(coll, "bmc", bytes.TrimSpace(old))); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "bmc")
	if err != nil || string(got.Reveal()) != "hunter2-long-enough" {
		t.Fatalf("the previous release's record: %v", err)
	}

	if err := s.Put(ctx, "ipmi", "another-long-value"); err != nil {
		t.Fatal(err)
	}
	raw, err := db.Get(ctx, coll, "ipmi")
	if err != nil || !bytes.HasPrefix(raw, []byte(`{"v":2,`)) {
		t.Fatalf("a new record is stored as %s (%v): want its version first", raw, err)
	}
	newer := append([]byte(`{"v":3,`), raw[len(`{"v":2,`):]...)
	if _, err := db.Write(ctx, statestore.Put(coll, "ipmi", newer)); err != nil {
		t.Fatal(err)
	}
	s.cache.forget("ipmi")
	_, err = s.Get(ctx, "ipmi")
	if !errors.Is(err, storedrec.ErrNewerVersion) || !strings.Contains(err.Error(), "ipmi") || !strings.Contains(err.Error(), "version 3") {
		t.Errorf("a version 3 record: %v; want a refusal naming the secret and version 3", err)
	}
	if _, err := s.List(ctx); !errors.Is(err, storedrec.ErrNewerVersion) {
		t.Errorf("list with a version 3 record: %v", err)
	}
}
