package storetest

import (
	"testing"

	"github.com/slipway-dev/slipway/statestore"
)

// testRecordAttachment: a Write under a context with an attachment
// carries its ops in the same Write (the appends' numbers unchanged); an
// empty Write stays empty, and once the attachment is off Writes go alone.
func testRecordAttachment(t *testing.T, s statestore.Store) {
	ctx := t.Context()
	a := statestore.NewAttachment(statestore.Put("idem", "k", []byte("applied")))
	actx := statestore.WithAttachment(ctx, a)
	seqs, err := s.Write(actx, statestore.Append("events", []byte("e1")))
	if err != nil || len(seqs) != 1 || seqs[0] != 1 {
		t.Fatalf("Write under an attachment: %v %v, want [1]", seqs, err)
	}
	if v, err := s.Get(ctx, "idem", "k"); err != nil || string(v) != "applied" {
		t.Fatalf("the attachment's record: %q %v, want it written with the Write", v, err)
	}
	if _, err := s.Write(ctx, statestore.Delete("idem", "k")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(actx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "idem", "k"); err == nil {
		t.Fatal("an empty Write under an attachment wrote it")
	}
	a.Off()
	if _, err := s.Write(actx, statestore.Append("events", []byte("e2"))); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "idem", "k"); err == nil {
		t.Fatal("a Write after the attachment's Off carried it")
	}
}
