package siteregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	secretstore "github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/statestore/memory"
)

const key1, key2 = "cons:tok:sekrit-one", "cons:tok:sekrit-two"

func newRegistry(t *testing.T) (*Registry, *memory.Store) {
	t.Helper()
	st := memory.New()
	sec, err := secretstore.New(st, bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return New(st, sec), st
}

// A site's record holds where its MAAS is and its policy; its API key is
// in the secret store, encrypted, never in the record; rotation replaces
// it; Binding gives the engine both, and refuses a disabled site.
func TestRecordsAndCredentials(t *testing.T) {
	ctx := context.Background()
	r, st := newRegistry(t)
	rec, err := r.Create(ctx, Create{Name: "dc1", URL: "http://maas.dc1:5240/MAAS", APIKey: key1, Policy: Policy{MaxConcurrent: 20, Erase: "quick"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rec.ID, "ms-") || rec.Status != StatusEnabled || !rec.Credentials.Set || rec.Kind != KindMAAS {
		t.Fatalf("created %+v", rec)
	}
	raw, _ := st.Get(ctx, coll, rec.ID)
	secrets, _ := st.List(ctx, "secrets", "")
	for _, b := range append([][]byte{raw}, secrets[0].Value) {
		if strings.Contains(string(b), "sekrit") {
			t.Fatalf("the API key is stored in clear: %s", b)
		}
	}
	ep, err := r.Binding(ctx, "dc1")
	if err != nil || ep.APIKey.Reveal() != key1 || ep.Record.URL != rec.URL {
		t.Fatalf("binding: %+v %v", ep.Record, err)
	}
	if _, err := r.SetCredentials(ctx, rec.ID, key2); err != nil {
		t.Fatal(err)
	}
	if ep, _ := r.Binding(ctx, "dc1"); ep.APIKey.Reveal() != key2 {
		t.Fatal("rotation kept the old key")
	}
	out, _ := json.Marshal(ep)
	if strings.Contains(string(out), "sekrit") {
		t.Fatalf("an endpoint marshals its key: %s", out)
	}
	if _, err := r.Disable(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Binding(ctx, "dc1"); !errors.Is(err, ErrDisabled) {
		t.Fatalf("binding a disabled site: %v", err)
	}
	if _, err := r.Binding(ctx, "dc9"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("binding an unknown site: %v", err)
	}
}

// Names are unique DNS labels; bad URLs, keys and policies are refused
// without repeating the key.
func TestValidation(t *testing.T) {
	ctx := context.Background()
	r, _ := newRegistry(t)
	a, err := r.Create(ctx, Create{Name: "dc1", URL: "https://maas.dc1/MAAS", APIKey: key1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.Create(ctx, Create{Name: "dc2", URL: "https://maas.dc2/MAAS", APIKey: key1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		c    Create
		want error
	}{
		{"taken name", Create{Name: "dc1", URL: "http://x/MAAS", APIKey: key1}, ErrConflict},
		{"bad name", Create{Name: "DC_1", URL: "http://x/MAAS", APIKey: key1}, ErrInvalid},
		{"relative url", Create{Name: "dc3", URL: "/MAAS", APIKey: key1}, ErrInvalid},
		{"url with a user", Create{Name: "dc3", URL: "http://u:p@x/MAAS", APIKey: key1}, ErrInvalid},
		{"ftp url", Create{Name: "dc3", URL: "ftp://x/MAAS", APIKey: key1}, ErrInvalid},
		{"bad key", Create{Name: "dc3", URL: "http://x/MAAS", APIKey: "sekrit-only"}, ErrInvalid},
		{"no key", Create{Name: "dc3", URL: "http://x/MAAS"}, ErrInvalid},
		{"bad erase", Create{Name: "dc3", URL: "http://x/MAAS", APIKey: key1, Policy: Policy{Erase: "shred"}}, ErrInvalid},
		{"bad kind", Create{Name: "dc3", Kind: "ironic", URL: "http://x/MAAS", APIKey: key1}, ErrInvalid},
	} {
		_, err := r.Create(ctx, c.c)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "sekrit") {
			t.Errorf("%s: the error repeats the key: %v", c.name, err)
		}
	}
	taken := "dc1"
	if _, err := r.Update(ctx, b.ID, Patch{Name: &taken}); !errors.Is(err, ErrConflict) {
		t.Errorf("renaming onto a taken name: %v", err)
	}
	bad := "paused"
	if _, err := r.Update(ctx, a.ID, Patch{Status: &bad}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a bad status: %v", err)
	}
	if _, err := r.Get(ctx, "ms-nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown ID: %v", err)
	}
	if all, _ := r.List(ctx); len(all) != 2 {
		t.Errorf("%d sites after the refusals, want 2", len(all))
	}
}

func TestReservedSecret(t *testing.T) {
	if !ReservedSecret(CredentialSecret("ms-0123456789")) || ReservedSecret("bmc-admin") {
		t.Fatal("ReservedSecret")
	}
	if err := secretstore.ValidateName(CredentialSecret("ms-0123456789")); err != nil {
		t.Fatalf("a site's secret name is not a valid secret name: %v", err)
	}
}
