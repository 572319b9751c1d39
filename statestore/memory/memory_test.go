package memory_test

import (
	"errors"
	"testing"

	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
	"github.com/slipway-dev/slipway/statestore/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) statestore.Store { return memory.New() })
}

func TestViewRecord(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	if _, err := s.Write(ctx, statestore.Put("c", "k", []byte("v1"))); err != nil {
		t.Fatal(err)
	}
	view := func(key string) (string, error) {
		var got string
		err := s.ViewRecord(ctx, "c", key, func(v []byte) error { got = string(v); return nil })
		return got, err
	}
	if got, err := view("k"); err != nil || got != "v1" {
		t.Fatalf("ViewRecord: %q, %v", got, err)
	}
	if _, err := s.Write(ctx, statestore.Put("c", "k", []byte("v2"))); err != nil {
		t.Fatal(err)
	}
	if got, err := view("k"); err != nil || got != "v2" {
		t.Fatalf("ViewRecord after Put: %q, %v", got, err)
	}
	if _, err := s.Write(ctx, statestore.Delete("c", "k")); err != nil {
		t.Fatal(err)
	}
	if _, err := view("k"); !errors.Is(err, statestore.ErrNoRecord) {
		t.Fatalf("ViewRecord after Delete: %v, want ErrNoRecord", err)
	}
	mine := errors.New("mine")
	_, _ = s.Write(ctx, statestore.Put("c", "k", nil))
	if err := s.ViewRecord(ctx, "c", "k", func([]byte) error { return mine }); err != mine {
		t.Fatalf("fn's error: %v", err)
	}
	if err := s.ViewRecord(ctx, "Bad", "k", func([]byte) error { return nil }); err == nil {
		t.Fatal("invalid collection name accepted")
	}
}
