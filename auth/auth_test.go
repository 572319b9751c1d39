package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

func TestRoleAllows(t *testing.T) {
	want := map[Role][]Role{
		RoleAdmin:    {RoleAdmin, RoleOperator, RoleViewer},
		RoleOperator: {RoleOperator, RoleViewer},
		RoleViewer:   {RoleViewer},
		"root":       {},
		"":           {},
	}
	for have, allowed := range want {
		for _, need := range append(Roles, "root", "") {
			ok := false
			for _, a := range allowed {
				ok = ok || a == need
			}
			if got := have.Allows(need); got != ok {
				t.Errorf("%q.Allows(%q) = %v, want %v", have, need, got, ok)
			}
		}
	}
	for _, s := range []string{"admin", "operator", "viewer"} {
		if r, err := ParseRole(s); err != nil || string(r) != s {
			t.Errorf("ParseRole(%q) = %q, %v", s, r, err)
		}
	}
	for _, s := range []string{"", "Admin", "root"} {
		if _, err := ParseRole(s); err == nil || !strings.Contains(err.Error(), "admin, operator or viewer") {
			t.Errorf("ParseRole(%q): %v", s, err)
		}
	}
}

func TestCreateVerifyRevoke(t *testing.T) {
	ctx := t.Context()
	st := memory.New()
	s := NewStore(st)
	plain, tok, err := s.Create(ctx, RoleOperator, "ci")
	if err != nil {
		t.Fatal(err)
	}
	if len(plain) != TokenLen || !strings.HasPrefix(plain, Prefix) || !wellFormed(plain) {
		t.Fatalf("token %q does not have the token form", plain)
	}
	if tok.ID != hashToken(plain)[:IDLen] || tok.Role != RoleOperator || tok.Name != "ci" || tok.Created.IsZero() {
		t.Errorf("created token: %+v", tok)
	}
	plain2, tok2, err := s.Create(ctx, RoleViewer, "")
	if err != nil {
		t.Fatal(err)
	}
	if plain2 == plain || tok2.ID == tok.ID {
		t.Fatal("two tokens are the same")
	}

	got, err := s.Verify(ctx, plain)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != tok.ID || got.Role != RoleOperator || got.Name != "ci" || got.LastUsed.IsZero() {
		t.Errorf("verified token: %+v, want %+v with LastUsed", got, tok)
	}

	list, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != tok.ID || list[1].ID != tok2.ID {
		t.Fatalf("list: %+v", list)
	}
	if list[0].LastUsed.IsZero() || !list[1].LastUsed.IsZero() {
		t.Errorf("last used: %v, %v; want the first set, the second zero", list[0].LastUsed, list[1].LastUsed)
	}
	b, _ := json.Marshal(list)
	if bytes.Contains(b, []byte(plain)) || bytes.Contains(b, []byte(plain[len(Prefix):])) {
		t.Errorf("the list's JSON holds a token: %s", b)
	}
	if !bytes.Contains(b, []byte(`"last_used"`)) || !bytes.Contains(b, []byte(`"created"`)) {
		t.Errorf("JSON is not snake_case: %s", b)
	}

	for _, id := range []string{"", "xyz", tok.ID[:4], plain} {
		err := s.Revoke(ctx, id)
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("Revoke(%q): %v, want ErrNotFound", id, err)
		}
		if id == plain && strings.Contains(err.Error(), plain) {
			t.Errorf("Revoke's error repeats a token: %v", err)
		}
	}
	if err := s.Revoke(ctx, strings.ToUpper(tok.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(ctx, plain); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("verify of a revoked token: %v, want ErrUnauthorized", err)
	}
	if err := s.Revoke(ctx, tok.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second revoke: %v, want ErrNotFound", err)
	}
	if _, err := s.Verify(ctx, plain2); err != nil {
		t.Errorf("the other token: %v", err)
	}
	if recs, _ := st.List(ctx, collUsed, ""); len(recs) != 1 {
		t.Errorf("tokens_used has %d records after a revoke, want 1", len(recs))
	}
	if list, _ := s.List(ctx); len(list) != 1 || list[0].ID != tok2.ID {
		t.Errorf("list after revoke: %+v", list)
	}
}

func TestVerifyRejects(t *testing.T) {
	ctx := t.Context()
	s := NewStore(memory.New())
	plain, _, err := s.Create(ctx, RoleAdmin, "a")
	if err != nil {
		t.Fatal(err)
	}
	// Same form, another secret.
	other := Prefix + strings.Repeat("A", TokenLen-len(Prefix))
	for name, tok := range map[string]string{
		"empty":     "",
		"unknown":   other,
		"short":     plain[:len(plain)-1],
		"long":      plain + "A",
		"prefix":    "xyz_" + plain[len(Prefix):],
		"no prefix": plain[len(Prefix):],
		"bad chars": Prefix + strings.Repeat("*", TokenLen-len(Prefix)),
		"spaces":    " " + plain,
		"bearer":    "Bearer " + plain,
	} {
		_, err := s.Verify(ctx, tok)
		if !errors.Is(err, ErrUnauthorized) {
			t.Errorf("%s: %v, want ErrUnauthorized", name, err)
			continue
		}
		if tok != "" && strings.Contains(err.Error(), strings.TrimSpace(tok)) || strings.Contains(err.Error(), plain[len(Prefix):]) {
			t.Errorf("%s: the error holds the token: %v", name, err)
		}
	}
}

func TestCreateRejects(t *testing.T) {
	s := NewStore(memory.New())
	if _, _, err := s.Create(t.Context(), "root", ""); err == nil || !strings.Contains(err.Error(), "admin, operator or viewer") {
		t.Errorf("unknown role: %v", err)
	}
	for _, name := range []string{strings.Repeat("n", MaxNameLen+1), "a\nb", "\x00"} {
		if _, _, err := s.Create(t.Context(), RoleViewer, name); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
}

func TestPlaintextNotStored(t *testing.T) {
	ctx := t.Context()
	st := memory.New()
	s := NewStore(st)
	var plains []string
	for _, r := range Roles {
		p, _, err := s.Create(ctx, r, string(r))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Verify(ctx, p); err != nil {
			t.Fatal(err)
		}
		plains = append(plains, p)
	}
	n := 0
	for _, coll := range []string{collTokens, collUsed} {
		recs, err := st.List(ctx, coll, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			n++
			for _, p := range plains {
				secret := p[len(Prefix):]
				if strings.Contains(r.Key, secret) || bytes.Contains(r.Value, []byte(secret)) {
					t.Errorf("record %s/%s holds a token's secret", coll, r.Key)
				}
			}
		}
	}
	if n != 2*len(plains) {
		t.Errorf("scanned %d records, want %d", n, 2*len(plains))
	}
}

func TestVerifyRecordsUseAtMostOnceAMinute(t *testing.T) {
	ctx := t.Context()
	st := &countingRecords{Records: memory.New()}
	s := NewStore(st)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.now = func() time.Time { return now }
	plain, _, err := s.Create(ctx, RoleViewer, "")
	if err != nil {
		t.Fatal(err)
	}
	st.writes = 0
	for range 10 {
		if _, err := s.Verify(ctx, plain); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
	}
	if st.writes != 1 {
		t.Errorf("%d writes for 10 verifies in 10 s, want 1", st.writes)
	}
	now = now.Add(time.Minute)
	if _, err := s.Verify(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if st.writes != 2 {
		t.Errorf("%d writes after a minute, want 2", st.writes)
	}
	list, _ := s.List(ctx)
	if !list[0].LastUsed.Equal(now) {
		t.Errorf("last used %v, want %v", list[0].LastUsed, now)
	}
}

type countingRecords struct {
	statestore.Records
	writes int
}

func (c *countingRecords) Write(ctx context.Context, ops ...statestore.Op) ([]uint64, error) {
	c.writes++
	return c.Records.Write(ctx, ops...)
}

func TestEnsureAdmin(t *testing.T) {
	ctx := t.Context()
	s := NewStore(memory.New())
	dir := filepath.Join(t.TempDir(), "run")
	path := filepath.Join(dir, "admin-token")

	created, err := s.EnsureAdmin(ctx, path)
	if err != nil || !created {
		t.Fatalf("first EnsureAdmin: %v, %v", created, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if di, err := os.Stat(dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("parent directory: %v, %v; want mode 0700", di.Mode().Perm(), err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Verify(ctx, strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("the written token does not verify: %v", err)
	}
	if tok.Role != RoleAdmin || tok.Name != InitialAdminName {
		t.Errorf("initial token: %+v", tok)
	}

	// An admin token exists: nothing happens, even with the file gone.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	created, err = s.EnsureAdmin(ctx, path)
	if err != nil || created {
		t.Fatalf("second EnsureAdmin: %v, %v; want false, nil", created, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("second EnsureAdmin wrote the file: %v", err)
	}
	if list, _ := s.List(ctx); len(list) != 1 {
		t.Errorf("%d tokens, want 1", len(list))
	}

	// No admin token (Revoke keeps the last one: the state is made by
	// hand), but the file exists: refused, file untouched.
	if err := s.revoke(ctx, tok.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Create(ctx, RoleOperator, "op"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	created, err = s.EnsureAdmin(ctx, path)
	if err == nil || created || !strings.Contains(err.Error(), "remove it") || !strings.Contains(err.Error(), "orchestrator token create") {
		t.Errorf("EnsureAdmin over an existing file: %v, %v", created, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "keep me\n" {
		t.Errorf("the existing file was changed: %q", b)
	}
	if list, _ := s.List(ctx); len(list) != 1 || list[0].Role != RoleOperator {
		t.Errorf("tokens after the refusal: %+v", list)
	}
}

// TestRevokeKeepsAnAdmin: the last admin token can't be revoked; with
// another admin token it can, and other roles always can.
func TestRevokeKeepsAnAdmin(t *testing.T) {
	ctx := t.Context()
	s := NewStore(memory.New())
	_, admin, err := s.Create(ctx, RoleAdmin, "first")
	if err != nil {
		t.Fatal(err)
	}
	_, op, _ := s.Create(ctx, RoleOperator, "op")
	err = s.Revoke(ctx, admin.ID)
	if !errors.Is(err, ErrLastAdmin) || !strings.Contains(err.Error(), "create another admin token first") {
		t.Fatalf("revoke of the only admin token: %v", err)
	}
	if list, _ := s.List(ctx); len(list) != 2 {
		t.Fatalf("tokens after the refusal: %+v", list)
	}
	if err := s.Revoke(ctx, op.ID); err != nil {
		t.Fatalf("revoke of an operator token: %v", err)
	}
	_, second, _ := s.Create(ctx, RoleAdmin, "second")
	if err := s.Revoke(ctx, admin.ID); err != nil {
		t.Fatalf("revoke of an admin token with another left: %v", err)
	}
	if err := s.Revoke(ctx, second.ID); !errors.Is(err, ErrLastAdmin) {
		t.Fatalf("revoke of the now last admin token: %v", err)
	}
}

// TestCreateInvalid: a bad role or name is ErrInvalid (the API's 400).
func TestCreateInvalid(t *testing.T) {
	s := NewStore(memory.New())
	for _, c := range []struct {
		role Role
		name string
	}{{"root", "x"}, {RoleViewer, strings.Repeat("n", MaxNameLen+1)}, {RoleViewer, "a\x01b"}} {
		if _, _, err := s.Create(t.Context(), c.role, c.name); !errors.Is(err, ErrInvalid) {
			t.Errorf("Create(%q, %q): %v, want ErrInvalid", c.role, c.name, err)
		}
	}
}

// failingRecords fails every Write, after running before.
type failingRecords struct {
	statestore.Records
	before func()
}

func (f *failingRecords) Write(context.Context, ...statestore.Op) ([]uint64, error) {
	if f.before != nil {
		f.before()
	}
	return nil, errors.New("disk full")
}

// TestEnsureAdminCleansUp: when the token cannot be stored, the file made
// for it is removed; when even that fails, the error says to remove it
// (it would stop the next start).
func TestEnsureAdminCleansUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin-token")
	created, err := NewStore(&failingRecords{Records: memory.New()}).EnsureAdmin(t.Context(), path)
	if err == nil || created || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("EnsureAdmin with a failing store: %v, %v", created, err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the token file was left behind: %v", err)
	}

	// Something puts a non-empty directory where the file was: it can't be
	// removed, and the error names it.
	stuck := &failingRecords{Records: memory.New(), before: func() {
		if err := os.Remove(path); err != nil {
			t.Error(err)
		}
		if err := os.MkdirAll(filepath.Join(path, "x"), 0o700); err != nil {
			t.Error(err)
		}
	}}
	_, err = NewStore(stuck).EnsureAdmin(t.Context(), path)
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "remove "+path+" by hand") {
		t.Errorf("EnsureAdmin whose file can't be removed: %v", err)
	}
}
