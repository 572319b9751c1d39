package api_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/statestore"
)

// TestAuditReadsPreviousReleaseRecords: an audit record stored with the
// camelCase names (before issue #18) is served with every field, under
// the snake_case names.
func TestAuditReadsPreviousReleaseRecords(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	start := f.lastAudit(t)
	old := `{"time":"2026-01-02T03:04:05Z","requestId":"R1","clientRequestId":"C1","who":{"id":"abcd1234","name":"ci","role":"operator"},` +
		`"method":"POST","route":"/api/v1/tasks","path":"/api/v1/tasks","remote":"10.0.0.9","status":201,"outcome":"ok",` +
		`"action":"deploy_nodes","task":"T1","targets":["n1","n2"],"targetCount":2}`
	if _, err := f.Store.Write(t.Context(), statestore.Append("audit", []byte(old))); err != nil {
		t.Fatal(err)
	}
	code, b := f.do(t, "GET", fmt.Sprintf("/api/v1/audit?since=%d", start), f.Token[api.RoleAdmin], "", nil)
	var p struct {
		Items []api.AuditRecord `json:"items"`
	}
	if err := json.Unmarshal(b, &p); code != 200 || err != nil || len(p.Items) == 0 {
		t.Fatalf("GET /audit: %d %v: %.300s", code, err, b)
	}
	r := p.Items[0]
	if r.RequestID != "R1" || r.ClientRequestID != "C1" || r.TargetCount != 2 || r.Who.Name != "ci" || r.Task != "T1" || len(r.Targets) != 2 {
		t.Errorf("old audit record served as %+v", r)
	}
}
