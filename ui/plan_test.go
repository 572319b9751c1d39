package ui_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/statestore/memory"
	"github.com/slipway-dev/slipway/ui"
)

// call makes one API call with tok and decodes a JSON answer into out.
func call(t *testing.T, base, tok, method, path, ctype string, body []byte, out any) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

// exampleWithout is the example site as a tar.gz of one root, without
// node's document.
func exampleWithout(t *testing.T, node string) []byte {
	t.Helper()
	files := exampleFiles(t, node)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		s := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(s)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDesignsViewShowsPlan: a node deployed in the lab, a design that
// releases its machine applied with its approval: the designs view
// shows that revision's plan, the destructive action listed and its node
// first in the table, and passes axe-core.
func TestDesignsViewShowsPlan(t *testing.T) {
	t.Parallel()
	srv := apitest.Start(t, apitest.WithSeed(6), apitest.WithConfig(func(c *api.Config) { c.UI = ui.Handler() }))
	op := srv.Token[api.RoleOperator]
	const node = "r01-cmp01"
	deployOne(t, srv, node)
	archive := exampleWithout(t, node)
	if code := call(t, srv.URL, op, "POST", "/api/v1/designs", "application/gzip", archive, nil); code != http.StatusConflict {
		t.Fatalf("unapproved apply: %d, want 409", code)
	}
	var plan struct{ To, Approve string }
	if code := call(t, srv.URL, op, "POST", "/api/v1/designs/plan", "application/gzip", archive, &plan); code != http.StatusOK {
		t.Fatalf("plan: %d", code)
	}
	if code := call(t, srv.URL, op, "POST", "/api/v1/designs?approve="+plan.Approve, "application/gzip", archive, nil); code != http.StatusCreated {
		t.Fatalf("approved apply: %d", code)
	}

	b := newBrowser(t)
	b.signIn(t, srv.URL, srv.Token[api.RoleViewer], len(designtest.Example(t).NodeNames())) // the released node stays until released
	b.run(t, "the designs view with the plan", 30*time.Second,
		chromedp.Navigate(srv.URL+"/ui/#/designs"),
		poll(`(() => { const p = document.querySelector('#plan'); return p && p.textContent.includes('Destructive actions (1)'); })()`, 10*time.Second))
	if h := eval[string](t, b, `document.querySelector('#plan-h').textContent`); !strings.Contains(h, plan.To[:12]) {
		t.Errorf("the plan shown is %q, want revision %s's", h, plan.To[:12])
	}
	if d := eval[string](t, b, `document.querySelector('#plan .destructive li').textContent`); !strings.HasPrefix(d, "release "+node) {
		t.Errorf("the destructive action shown: %q", d)
	}
	first := eval[[]string](t, b, `[...document.querySelectorAll('#plan .plan-nodes tbody tr:first-child > *')].slice(0, 2).map(c => c.textContent)`)
	if len(first) != 2 || first[0] != "release" || first[1] != node {
		t.Errorf("the plan table's first row: %q, want release %s", first, node)
	}
	if cell := eval[string](t, b, `document.querySelector('#view table tbody tr td:last-child').textContent`); !strings.Contains(cell, "1 destructive") {
		t.Errorf("the history's plan cell: %q", cell)
	}
	checkAccessibility(t, b, "the designs view with a plan")
}

// TestNoDesignYet: on a server with no design, the site view and the
// designs view say so and what to do, and pass axe-core.
func TestNoDesignYet(t *testing.T) {
	t.Parallel()
	st := memory.New()
	e, err := orchestrator.New(orchestrator.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	tokens := auth.NewStore(st)
	tok, _, err := tokens.Create(t.Context(), auth.RoleViewer, "viewer")
	if err != nil {
		t.Fatal(err)
	}
	authenticate, _ := api.TokenStore(tokens)
	srv, err := api.New(api.Config{Engine: e, Store: st, Authenticate: authenticate, UI: ui.Handler(), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	b := newBrowser(t)
	b.signIn(t, ts.URL, tok, 0)
	for _, view := range []string{"site", "designs"} {
		b.run(t, "the "+view+" view with no design", 20*time.Second,
			chromedp.Navigate(ts.URL+"/ui/#/"+view),
			poll(`(() => { const p = document.querySelector('#no-design'); return p && p.textContent.startsWith('No design yet'); })()`, 10*time.Second))
		checkAccessibility(t, b, "the "+view+" view with no design")
	}
}
