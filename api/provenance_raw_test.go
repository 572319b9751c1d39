package api_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitypes"
)

// rawApply POSTs the example site, one address changed, as a raw tarball
// with query q (the curl way): no CLI, no client package.
func rawApply(t *testing.T, f *fixture, q url.Values, addr string) (int, []byte) {
	t.Helper()
	return f.do(t, "POST", "/api/v1/designs?"+q.Encode(), f.Token[api.RoleOperator], "application/gzip",
		exampleArchive(t, "address: 10.13.0.101", "address: "+addr))
}

// lastApply is the newest entry of GET /designs and GET /designs/{id}.
func lastApply(t *testing.T, f *fixture) (apitypes.RevisionSummary, apitypes.RevisionInfo) {
	t.Helper()
	var h []apitypes.RevisionSummary
	if code := f.json(t, "GET", "/api/v1/designs", f.Token[api.RoleViewer], nil, &h); code != http.StatusOK || len(h) == 0 {
		t.Fatalf("GET /designs: %d, %d entries", code, len(h))
	}
	var info apitypes.RevisionInfo
	if code := f.json(t, "GET", "/api/v1/designs/"+h[len(h)-1].ID, f.Token[api.RoleViewer], nil, &info); code != http.StatusOK {
		t.Fatalf("GET /designs/%s: %d", h[len(h)-1].ID, code)
	}
	return h[len(h)-1], info
}

// TestRawUploadProvenance: a raw POST /designs records the provenance its
// query gives (read back through the API and from the store), and one that
// gives none is recorded as saying so ("provenance": "none").
func TestRawUploadProvenance(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	commit := strings.Repeat("0123456789abcdef", 4)[:40]
	code, b := rawApply(t, f, url.Values{"git_commit": {commit}, "git_dirty": {"true"}, "root": {"https://git.example.net/site.git"}}, "10.13.0.150")
	if code != http.StatusCreated {
		t.Fatalf("raw apply with provenance: %d %s", code, b)
	}
	sum, info := lastApply(t, f)
	if sum.GitCommit != commit || !sum.GitDirty || sum.Provenance != "git" || info.GitCommit != commit || info.Provenance != "git" ||
		len(info.Roots) == 0 || info.Roots[0] != "https://git.example.net/site.git" {
		t.Errorf("with provenance: summary %+v, info %+v", sum, info)
	}
	h, err := f.Store.History(t.Context())
	if err != nil || len(h) == 0 || h[len(h)-1].GitCommit != commit || !h[len(h)-1].GitDirty || h[len(h)-1].Roots[0] != "https://git.example.net/site.git" {
		t.Fatalf("the store's last apply: %v %+v", err, h[len(h)-1:])
	}

	code, b = rawApply(t, f, nil, "10.13.0.151")
	if code != http.StatusCreated {
		t.Fatalf("raw apply without provenance: %d %s", code, b)
	}
	sum, info = lastApply(t, f)
	if sum.Provenance != "none" || info.Provenance != "none" || sum.GitCommit != "" {
		t.Errorf("without provenance: summary %+v, info %+v; want provenance none", sum, info)
	}
	raw, _ := json.Marshal(sum)
	if !strings.Contains(string(raw), `"provenance":"none"`) {
		t.Errorf("the wire summary does not say none: %s", raw)
	}
	h, err = f.Store.History(t.Context())
	if err != nil || h[len(h)-1].GitCommit != "" || h[len(h)-1].ID != sum.ID {
		t.Fatalf("the store's last apply: %v %+v", err, h[len(h)-1:])
	}
}

// TestRawUploadProvenanceBad: provenance that cannot be recorded as given
// (a commit that is not 40 or 64 hex digits, credentials in a URL, an
// oversize root, a git_dirty that is not a boolean or has no commit) is a
// 400 naming the field, the secret is not echoed, and nothing is stored.
func TestRawUploadProvenanceBad(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	before, err := f.Store.History(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q     url.Values
		field string
	}{
		{url.Values{"git_commit": {"abc123"}}, "git_commit"},
		{url.Values{"git_commit": {strings.Repeat("a", 41)}}, "git_commit"},
		{url.Values{"git_commit": {strings.Repeat("A", 40)}}, "git_commit"},
		{url.Values{"root": {"https://deploy:hunter2-s3cret@git.example.net/site.git"}}, "root"},
		{url.Values{"root": {"ssh://deploy:hunter2-s3cret@git.example.net/site.git"}}, "root"},
		{url.Values{"root": {"git:https://deploy:hunter2-s3cret@git.example.net/site.git#main:site"}}, "root"},
		{url.Values{"root": {strings.Repeat("r", 513)}}, "root"},
		{url.Values{"git_dirty": {"maybe"}, "git_commit": {strings.Repeat("a", 40)}}, "git_dirty"},
		{url.Values{"git_dirty": {"true"}}, "git_dirty"},
	} {
		code, b := rawApply(t, f, c.q, "10.13.0.152")
		var p api.Problem
		_ = json.Unmarshal(b, &p)
		if code != http.StatusBadRequest || !strings.Contains(p.Detail, c.field) {
			t.Errorf("?%.80s: %d %s; want 400 naming %s", c.q.Encode(), code, b, c.field)
		}
		if strings.Contains(string(b), "hunter2") {
			t.Errorf("?%.80s: the answer echoes the credential: %s", c.q.Encode(), b)
		}
	}
	after, err := f.Store.History(t.Context())
	if err != nil || len(after) != len(before) {
		t.Fatalf("refused uploads were stored: %d applies, was %d (%v)", len(after), len(before), err)
	}
}
