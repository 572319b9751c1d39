package powercreds_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/powercreds"
	"github.com/slipway-dev/slipway/secrets"
	"github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

func newOverrides(t *testing.T) (*powercreds.Overrides, *store.Store, statestore.Store) {
	t.Helper()
	mem := memory.New()
	sec, err := store.New(mem, bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return powercreds.New(sec), sec, mem
}

// TestRotation: a write is version 1, each rotation one more; Lookup
// reads the latest; Delete leaves none; the state store holds no
// plaintext.
func TestRotation(t *testing.T) {
	o, _, mem := newOverrides(t)
	ctx := t.Context()
	if _, ok, err := o.Lookup(ctx, "r01-cmp01"); ok || err != nil {
		t.Fatalf("Lookup before any: %v %v", ok, err)
	}
	if _, err := o.Info(ctx, "r01-cmp01"); !errors.Is(err, powercreds.ErrNotFound) {
		t.Fatalf("Info before any: %v", err)
	}
	for i, pw := range []string{"first-pass-xyz", "second-pass-xyz"} {
		info, err := o.Put(ctx, "r01-cmp01", "root", pw)
		if err != nil || info.Version != i+1 || !info.Set || info.Rotated.IsZero() {
			t.Fatalf("Put %d: %+v %v", i, info, err)
		}
		c, ok, err := o.Lookup(ctx, "r01-cmp01")
		if err != nil || !ok || c.Username != "root" || c.Password.Reveal() != pw {
			t.Fatalf("Lookup after Put %d: %v %v user %q", i, ok, err, c.Username)
		}
	}
	raw, err := mem.Get(ctx, "secrets", powercreds.SecretName("r01-cmp01"))
	if err != nil || bytes.Contains(raw, []byte("second-pass-xyz")) || bytes.Contains(raw, []byte("root")) {
		t.Fatalf("the stored record: %v, plaintext in it: %s", err, raw)
	}
	if err := o.Delete(ctx, "r01-cmp01"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := o.Lookup(ctx, "r01-cmp01"); ok || err != nil {
		t.Fatalf("Lookup after Delete: %v %v", ok, err)
	}
	if err := o.Delete(ctx, "r01-cmp01"); !errors.Is(err, powercreds.ErrNotFound) {
		t.Fatalf("Delete of none: %v", err)
	}
}

// TestNamesAndBounds: every node name maps to a valid, reserved secret
// name (long or upper-case ones by digest, distinct); bad input is
// ErrInvalid without the password in the error.
func TestNamesAndBounds(t *testing.T) {
	long := strings.Repeat("a", 60)
	for _, n := range []string{"r01-cmp01", "R01-CMP01", long, long + "b"} {
		name := powercreds.SecretName(n)
		if err := store.ValidateName(name); err != nil || !powercreds.Reserved(name) {
			t.Errorf("%s → %s: %v", n, name, err)
		}
	}
	if powercreds.SecretName(long) == powercreds.SecretName(long+"b") || powercreds.SecretName("R01-CMP01") == powercreds.SecretName("r01-cmp01") {
		t.Error("two nodes share a secret name")
	}
	o, _, _ := newOverrides(t)
	const pw = "secret-in-error?"
	for _, c := range [][3]string{
		{"r01", "", pw}, {"r01", "root", ""}, {"r01", strings.Repeat("u", 65), pw}, {"r01", "root", strings.Repeat("p", 257)},
		{"r01", "ro\not", pw}, {"", "root", pw}, {"../x", "root", pw}, {strings.Repeat("n", 254), "root", pw},
	} {
		_, err := o.Put(t.Context(), c[0], c[1], c[2])
		if !errors.Is(err, powercreds.ErrInvalid) || strings.Contains(err.Error(), pw) {
			t.Errorf("Put(%.20q, %.20q): %v", c[0], c[1], err)
		}
	}
}

// TestDesignCannotName: a secret: reference to an override's secret does
// not resolve, though the override is stored.
func TestDesignCannotName(t *testing.T) {
	o, sec, _ := newOverrides(t)
	if _, err := o.Put(t.Context(), "r01-cmp01", "root", "stored-pass-xyz"); err != nil {
		t.Fatal(err)
	}
	r := secrets.Resolver{Store: sec}
	for _, ref := range []string{"secret:" + powercreds.SecretName("r01-cmp01"), "secret:BMC-OVERRIDE.r01-cmp01"} {
		v, err := r.ResolveContext(t.Context(), ref)
		if err == nil || v.Reveal() != "" || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("%s: %v", ref, err)
		}
	}
}
