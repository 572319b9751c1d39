package auth

import (
	"bytes"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestTokenRecordVersions: a token record carries its schema version;
// one written by a newer release (version 3) is refused by Verify and
// List with an error naming the record and the version, never read as
// if it were this release's.
func TestTokenRecordVersions(t *testing.T) {
	ctx := t.Context()
	st := memory.New()
	s := NewStore(st)
	plain, tok, err := s.Create(ctx, RoleOperator, "ci")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := st.List(ctx, collTokens, "")
	if err != nil || len(recs) != 1 {
		t.Fatalf("token records: %v %d", err, len(recs))
	}
	raw := recs[0].Value
	if !bytes.HasPrefix(raw, []byte(`{"v":2,`)) {
		t.Errorf("a new token record does not start with its version: %s", raw)
	}
	// A newer release's record: its version first, fields this one knows.
	newer := append([]byte(`{"v":3,`), bytes.TrimPrefix(raw[1:], []byte(`"v":2,`))...)
	if _, err := st.Write(ctx, statestore.Put(collTokens, recs[0].Key, newer)); err != nil {
		t.Fatal(err)
	}
	_, err = s.Verify(ctx, plain)
	if err == nil || !strings.Contains(err.Error(), "version 3") || !strings.Contains(err.Error(), tok.ID) {
		t.Errorf("Verify of a version 3 record: %v; want a refusal naming the token and version 3", err)
	}
	if _, err := s.List(ctx); err == nil || !strings.Contains(err.Error(), "version 3") {
		t.Errorf("List with a version 3 record: %v; want a refusal naming version 3", err)
	}
}
