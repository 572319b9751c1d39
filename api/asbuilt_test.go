package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
)

// TestAcceptHardwareRoute: accepting a node's machine as built is an
// operator's call, audited as node.accept-hardware naming the node; a
// node with no as-built check to accept is a 409 saying what runs one,
// an unknown node a 404.
func TestAcceptHardwareRoute(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	path := "/api/v1/nodes/" + f.Node + "/as-built/accept"
	if code := f.json(t, "POST", path, f.Token[api.RoleViewer], nil, nil); code != http.StatusForbidden {
		t.Errorf("viewer: %d, want 403", code)
	}
	before, _ := f.Store.LastSeq(t.Context(), "audit")
	code, body := f.do(t, "POST", path, f.Token[api.RoleOperator], "", nil)
	if code != http.StatusConflict || !strings.Contains(string(body), "no as-built check to accept") {
		t.Errorf("no check yet: %d %s, want 409 naming what runs one", code, body)
	}
	recs, err := f.Store.ReadLog(t.Context(), "audit", before, 10)
	if err != nil || len(recs) != 1 {
		t.Fatalf("%d audit records, %v", len(recs), err)
	}
	var rec api.AuditRecord
	if err := json.Unmarshal(recs[0].Value, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Action != "node.accept-hardware" || len(rec.Targets) == 0 || rec.Targets[0] != f.Node {
		t.Errorf("audit record %+v, want node.accept-hardware naming %s", rec, f.Node)
	}
	code, body = f.do(t, "GET", "/api/v1/nodes/"+f.Node+"/as-built", f.Token[api.RoleViewer], "", nil)
	if code != http.StatusNotFound || !strings.Contains(string(body), "has had no as-built check") {
		t.Errorf("GET as-built before any check: %d %s, want 404", code, body)
	}
	if code := f.json(t, "POST", "/api/v1/nodes/no-such-node/as-built/accept", f.Token[api.RoleOperator], nil, nil); code != http.StatusNotFound {
		t.Errorf("unknown node: %d, want 404", code)
	}
}
