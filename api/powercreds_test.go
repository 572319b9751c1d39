package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// powerTask runs a power task on node and answers how it ended.
func powerTask(t *testing.T, f *fixture, action, node string) record.Task {
	t.Helper()
	var task record.Task
	if code := f.json(t, "POST", "/api/v1/tasks", f.Token[api.RoleOperator], map[string]any{"action": action,
		"node_filter": map[string]any{"sets": []map[string]any{{"names": []string{node}}}}}, &task); code != http.StatusCreated {
		t.Fatalf("%s: %d", action, code)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	got, err := f.Engine.Wait(ctx, task.ID)
	if err != nil {
		t.Fatalf("%s task %s: %v", action, task.ID, err)
	}
	return got
}

// TestPowerCredentialOverride: the lab's BMC takes credentials the
// design no longer has; a power task then fails, and succeeds once an
// admin writes the node's override; a rotation takes effect at the next
// call; a delete puts the design's back. Counted from the lab machine's
// power. Viewers and operators get 403; no answer, audit record or log
// line holds the password.
func TestPowerCredentialOverride(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.Token[api.RoleAdmin]
	m := f.Env.Lab.Machine(f.Node)
	if m == nil || m.IsPoweredOn() {
		t.Fatalf("lab machine of %s: %v", f.Node, m)
	}
	user, pw := m.BMCCredentials()
	// The design's secret no longer fits the lab's BMC.
	if code := f.json(t, "PUT", "/api/v1/secrets/bmc-admin", admin, map[string]string{"value": "not-the-bmc-password"}, nil); code != 200 {
		t.Fatalf("put bmc-admin: %d", code)
	}
	if got := powerTask(t, f, "power_on", f.Node); got.Status != record.TaskFailed || m.IsPoweredOn() {
		t.Fatalf("power_on with the design's wrong credentials: %s, lab machine on: %v", got.Status, m.IsPoweredOn())
	}

	path := "/api/v1/admin/nodes/" + f.Node + "/power-credentials"
	for _, tok := range []string{f.Token[api.RoleViewer], f.Token[api.RoleOperator]} {
		if code := f.json(t, "PUT", path, tok, map[string]string{"username": user, "password": pw}, nil); code != http.StatusForbidden {
			t.Errorf("PUT as a non-admin: %d", code)
		}
		if code := f.json(t, "GET", path, tok, nil, nil); code != http.StatusForbidden {
			t.Errorf("GET as a non-admin: %d", code)
		}
	}
	if code := f.json(t, "GET", path, admin, nil, nil); code != http.StatusNotFound {
		t.Errorf("GET before any override: %d", code)
	}
	put := func(password string, version int) {
		t.Helper()
		var info apitypes.PowerCredentialInfo
		if code := f.json(t, "PUT", path, admin, map[string]string{"username": user, "password": password}, &info); code != 200 ||
			!info.Set || info.Version != version || info.Node != f.Node || info.Rotated.IsZero() {
			t.Fatalf("PUT override: %d %+v, want version %d", code, info, version)
		}
	}
	put(pw, 1)
	if got := powerTask(t, f, "power_on", f.Node); got.Status != record.TaskSucceeded || !m.IsPoweredOn() {
		t.Fatalf("power_on with the override: %s %s, lab machine on: %v", got.Status, got.Message, m.IsPoweredOn())
	}

	// A rotation to credentials the BMC refuses takes effect at once...
	put("rotated-but-wrong", 2)
	if got := powerTask(t, f, "power_off", f.Node); got.Status != record.TaskFailed || !m.IsPoweredOn() {
		t.Fatalf("power_off after a rotation to a wrong password: %s, lab machine on: %v", got.Status, m.IsPoweredOn())
	}
	// ...and so does the next.
	put(pw, 3)
	if got := powerTask(t, f, "power_off", f.Node); got.Status != record.TaskSucceeded || m.IsPoweredOn() {
		t.Fatalf("power_off after rotating back: %s %s, lab machine on: %v", got.Status, got.Message, m.IsPoweredOn())
	}
	code, b := f.do(t, "GET", path, admin, "", nil)
	if code != 200 || !bytes.Contains(b, []byte(`"version":3`)) || bytes.Contains(b, []byte(pw)) || bytes.Contains(b, []byte(user)) {
		t.Errorf("GET override: %d %s", code, b)
	}

	if code := f.json(t, "DELETE", path, admin, nil, nil); code != http.StatusNoContent {
		t.Fatalf("DELETE override: %d", code)
	}
	if code := f.json(t, "GET", path, admin, nil, nil); code != http.StatusNotFound {
		t.Errorf("GET after DELETE: %d", code)
	}
	if got := powerTask(t, f, "power_on", f.Node); got.Status != record.TaskFailed || m.IsPoweredOn() {
		t.Fatalf("power_on after the override's delete: %s, lab machine on: %v", got.Status, m.IsPoweredOn())
	}
	checkPowerAudit(t, f, pw)
}

// checkPowerAudit: the override's writes are audited, by node, and no
// answer or log line holds the password.
func checkPowerAudit(t *testing.T, f *fixture, pw string) {
	t.Helper()
	admin := f.Token[api.RoleAdmin]
	var page api.AuditPage
	if code := f.json(t, "GET", "/api/v1/audit?limit=1000", admin, nil, &page); code != 200 {
		t.Fatalf("audit: %d", code)
	}
	counts := map[string]int{}
	for _, r := range page.Items {
		if strings.HasSuffix(r.Path, "/power-credentials") && r.Outcome == "ok" && len(r.Targets) == 1 && r.Targets[0] == f.Node {
			counts[r.Method+" "+r.Action]++
		}
	}
	if counts["PUT node.power-credentials.put"] != 3 || counts["DELETE node.power-credentials.delete"] != 1 {
		t.Errorf("audit records of the override's writes: %v", counts)
	}
	var all []byte
	for _, p := range []string{"/api/v1/audit?limit=1000", "/api/v1/events?limit=10000", "/api/v1/secrets", "/api/v1/nodes/" + f.Node} {
		_, b := f.do(t, "GET", p, admin, "", nil)
		all = append(all, b...)
	}
	if bytes.Contains(all, []byte(pw)) || bytes.Contains(all, []byte("rotated-but-wrong")) {
		t.Error("a password appears in an answer")
	}
	if logs := f.LogText(); strings.Contains(logs, pw) || strings.Contains(logs, "rotated-but-wrong") {
		t.Error("a password appears in the logs")
	}
}

// TestPowerCredentialBounds: the body is bounded and checked; the names
// of the overrides' secrets are not the secret routes' to write.
func TestPowerCredentialBounds(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	admin := f.Token[api.RoleAdmin]
	path := "/api/v1/admin/nodes/" + f.Node + "/power-credentials"
	for _, body := range []map[string]string{
		{"username": "", "password": "x"},
		{"username": "admin", "password": ""},
		{"username": strings.Repeat("u", 65), "password": "x"},
		{"username": "admin", "password": strings.Repeat("p", 257)},
	} {
		code, b := f.do(t, "PUT", path, admin, "application/json", []byte(fmt.Sprintf(`{"username":%q,"password":%q}`, body["username"], body["password"])))
		if code != http.StatusBadRequest || (body["password"] != "" && bytes.Contains(b, []byte(body["password"]))) {
			t.Errorf("PUT %d/%d bytes: %d %.200s", len(body["username"]), len(body["password"]), code, b)
		}
	}
	if code := f.json(t, "PUT", "/api/v1/secrets/bmc-override."+f.Node, admin, map[string]string{"value": "x"}, nil); code != http.StatusBadRequest {
		t.Errorf("PUT /secrets/bmc-override.NODE: %d", code)
	}
}
