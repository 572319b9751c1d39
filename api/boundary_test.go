package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/slipway-dev/slipway/api"
)

// TestBoundaryAdminPaths: every decommission and reconciliation route
// is served under /api/v1/admin with the same role and audit, and its
// earlier path stays served, marked deprecated in the OpenAPI document;
// the admin paths answer, and refuse the roles below theirs.
func TestBoundaryAdminPaths(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	routes := map[string]api.RouteInfo{}
	for _, r := range f.API.Routes() {
		routes[r.Method+" "+r.Path] = r
	}
	doc, err := api.Document()
	if err != nil {
		t.Fatal(err)
	}
	aliases := 0
	for key, old := range routes {
		method, path, _ := strings.Cut(key, " ")
		if !strings.HasPrefix(path, "/api/v1/decommissions") && !strings.HasPrefix(path, "/api/v1/reconciliation") {
			continue
		}
		aliases++
		canon, ok := routes[method+" /api/v1/admin"+strings.TrimPrefix(path, "/api/v1")]
		if !ok || canon.Role != old.Role || canon.Mutating != old.Mutating || canon.Audited != old.Audited {
			t.Errorf("%s: the admin route is %+v (present %v)", key, canon, ok)
		}
		if op := operation(doc, method, path); op == nil || !op.Deprecated {
			t.Errorf("%s is not marked deprecated in the document", key)
		}
		if op := operation(doc, method, canon.Path); op == nil || op.Deprecated {
			t.Errorf("%s %s is missing or deprecated in the document", method, canon.Path)
		}
	}
	if aliases != 7 {
		t.Errorf("%d alias routes, want 7 (3 decommission, 4 reconciliation)", aliases)
	}
	checkAdminAnswers(t, f)
}

// operation is the document's operation at method and path (nil: none).
func operation(doc *openapi3.T, method, path string) *openapi3.Operation {
	item := doc.Paths.Find(path)
	if item == nil {
		return nil
	}
	return item.GetOperation(method)
}

// checkAdminAnswers calls the admin paths with each role.
func checkAdminAnswers(t *testing.T, f *fixture) {
	t.Helper()
	viewer, op, admin := f.Token[api.RoleViewer], f.Token[api.RoleOperator], f.Token[api.RoleAdmin]
	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/api/v1/admin/decommissions", viewer, http.StatusForbidden},
		{"GET", "/api/v1/admin/decommissions", op, http.StatusForbidden},
		{"GET", "/api/v1/admin/decommissions", admin, http.StatusOK},
		{"GET", "/api/v1/decommissions", admin, http.StatusOK},
		{"GET", "/api/v1/admin/decommissions/no-such-task", admin, http.StatusNotFound},
		{"POST", "/api/v1/admin/decommissions/no-such-task/retry", op, http.StatusForbidden},
		{"GET", "/api/v1/admin/reconciliation/status", viewer, http.StatusOK},
		{"GET", "/api/v1/admin/reconciliation/drift", viewer, http.StatusOK},
		{"POST", "/api/v1/admin/reconciliation/run", viewer, http.StatusForbidden},
		{"POST", "/api/v1/admin/reconciliation/run", op, http.StatusOK},
		{"GET", "/api/v1/reconciliation/status", viewer, http.StatusOK},
		{"GET", "/api/v1/admin/nodes/" + f.Node + "/power-credentials", op, http.StatusForbidden},
		{"DELETE", "/api/v1/admin/nodes/" + f.Node + "/power-credentials", viewer, http.StatusForbidden},
	} {
		if code, b := f.do(t, c.method, c.path, c.token, "", nil); code != c.want {
			t.Errorf("%s %s: %d, want %d: %.200s", c.method, c.path, code, c.want, b)
		}
	}
	var page api.AuditPage
	if code := f.json(t, "GET", "/api/v1/audit?limit=1000", admin, nil, &page); code != 200 {
		t.Fatalf("audit: %d", code)
	}
	runs := 0
	for _, r := range page.Items {
		if r.Path == "/api/v1/admin/reconciliation/run" && r.Status == http.StatusOK {
			runs++
		}
	}
	if runs != 1 {
		t.Errorf("%d audit records of the admin path's reconciliation run, want 1", runs)
	}
}
