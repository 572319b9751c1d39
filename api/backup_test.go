package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// gatedBackup backs up a bbolt store, each backup waiting for release
// after it says it has begun.
type gatedBackup struct {
	s                 *bolt.Store
	keys              []bolt.BackupKey
	started, released chan struct{}
}

func (g *gatedBackup) Backup(ctx context.Context, w io.Writer) error {
	g.started <- struct{}{}
	select {
	case <-g.released:
	case <-ctx.Done():
		return ctx.Err()
	}
	_, err := g.s.Backup(ctx, w, g.keys)
	return err
}

// TestStoreBackupRoute: GET /admin/store/backup streams a backup archive
// (octet-stream) to admins only, audited, one at a time (another gets a
// 503 with Retry-After while one runs), and the archive restores into a
// state holding the records.
func TestStoreBackupRoute(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Write(ctx, statestore.Put("things", "a", []byte("1"))); err != nil {
		t.Fatal(err)
	}
	g := &gatedBackup{s: st, keys: []bolt.BackupKey{{Name: "secret", Fingerprint: "sha256:" + strings.Repeat("ab", 32)}},
		started: make(chan struct{}, 4), released: make(chan struct{})}
	f := &fixture{apitest.Start(t, apitest.WithSeed(9), apitest.WithConfig(func(c *api.Config) { c.Backup = g }))}
	const path = "/api/v1/admin/store/backup"
	before := f.lastAudit(t)
	for _, token := range []string{"", "tok-bogus"} {
		if code, _ := f.do(t, "GET", path, token, "", nil); code != http.StatusUnauthorized {
			t.Errorf("backup with token %q: %d, want 401", token, code)
		}
	}
	for _, role := range []api.Role{api.RoleViewer, api.RoleOperator} {
		if code, _ := f.do(t, "GET", path, f.Token[role], "", nil); code != http.StatusForbidden {
			t.Errorf("backup as %s: %d, want 403", role, code)
		}
	}

	type answer struct {
		resp *http.Response
		body []byte
	}
	first := make(chan answer, 1)
	go func() {
		var a answer
		req, _ := http.NewRequestWithContext(ctx, "GET", f.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+f.Token[api.RoleAdmin])
		var err error
		if a.resp, err = http.DefaultClient.Do(req); err == nil {
			a.body, _ = io.ReadAll(a.resp.Body)
			a.resp.Body.Close()
		} else {
			a.resp = &http.Response{StatusCode: -1, Status: err.Error()}
		}
		first <- a
	}()
	<-g.started
	resp, b := f.request(t, "GET", path, f.Token[api.RoleAdmin], nil, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a second backup while one runs: %d (Retry-After %q) %s; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	close(g.released)
	a := <-first
	if a.resp.StatusCode != http.StatusOK || a.resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("backup: %d %q", a.resp.StatusCode, a.resp.Header.Get("Content-Type"))
	}
	restored := filepath.Join(t.TempDir(), "restored.db")
	res, err := bolt.Restore(ctx, bytes.NewReader(a.body), restored, nil)
	if err != nil {
		t.Fatalf("the streamed backup does not restore: %v", err)
	}
	if res.Manifest.Key("secret") != g.keys[0].Fingerprint {
		t.Errorf("manifest keys %v, want %v", res.Manifest.Keys, g.keys)
	}
	r, err := bolt.Open(restored, bolt.Options{Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if v, err := r.Get(ctx, "things", "a"); err != nil || string(v) != "1" {
		t.Errorf("restored record: %q %v", v, err)
	}

	var got []string
	for _, e := range f.auditAfter(t, before) {
		got = append(got, auditLine(t, e.Value))
	}
	want := []string{path + " 401  ", path + " 401  ", path + " 403 viewer ", path + " 403 operator ", path + " 503 admin store.backup", path + " 200 admin store.backup"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("audit records %v, want %v", got, want)
	}
}

// auditLine is an audit record's route, status, caller and action.
func auditLine(t *testing.T, raw []byte) string {
	t.Helper()
	var r api.AuditRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s %d %s %s", r.Route, r.Status, r.Who.Name, r.Action)
}

// TestStoreBackupUnsupported: a server without an online backup (etcd)
// answers 501 saying what to use.
func TestStoreBackupUnsupported(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	code, b := f.do(t, "GET", "/api/v1/admin/store/backup", f.Token[api.RoleAdmin], "", nil)
	if code != http.StatusNotImplemented || !strings.Contains(string(b), "etcdctl snapshot save") {
		t.Errorf("backup without a backend: %d %s", code, b)
	}
}
