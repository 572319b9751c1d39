package api_test

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/introspection"
)

// GET /nodes/{name}/bootdata/{part}: admins only, audited, the part the
// node's current deployment is served, its token redacted.
func TestBootData(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	url := "/api/v1/nodes/" + f.Node + "/bootdata/"
	if code, b := f.do(t, "GET", url+"user-data", f.Token[api.RoleAdmin], "", nil); code != 409 || !strings.Contains(string(b), "no current deployment") {
		t.Errorf("before any deployment: %d %s", code, b)
	}
	// The engine's deploy stage issues the node's token with its user data.
	ud, err := f.Env.Introspection.UserData(t.Context(), designtest.Example(t), f.Node, "1")
	if err != nil {
		t.Fatal(err)
	}
	tok := f.Env.Introspection.Token(f.Node, "1")
	if !strings.Contains(string(ud), tok) {
		t.Fatal("the user data the engine deploys holds no token")
	}
	before, _ := f.Store.LastSeq(t.Context(), "audit")
	code, b := f.do(t, "GET", url+"user-data", f.Token[api.RoleAdmin], "", nil)
	if code != 200 || strings.Contains(string(b), tok) || !strings.Contains(string(b), introspection.RedactedToken) ||
		string(b) != strings.ReplaceAll(string(ud), tok, introspection.RedactedToken) {
		t.Errorf("user-data as admin: %d\n%s", code, b)
	}
	for _, tok := range []string{f.Token[api.RoleOperator], f.Token[api.RoleViewer]} {
		if code, _ := f.do(t, "GET", url+"user-data", tok, "", nil); code != 403 {
			t.Errorf("user-data as a non-admin: %d, want 403", code)
		}
	}
	if after, _ := f.Store.LastSeq(t.Context(), "audit"); after-before != 3 {
		t.Errorf("%d audit records for 3 reads, want 3", after-before)
	}
	if code, b := f.do(t, "GET", url+"secrets", f.Token[api.RoleAdmin], "", nil); code != 404 || !strings.Contains(string(b), "use one of self") {
		t.Errorf("an unknown part: %d %s", code, b)
	}
	if code, b := f.do(t, "GET", url+"self", f.Token[api.RoleAdmin], "", nil); code != 200 || !strings.Contains(string(b), `"deployment":"1"`) {
		t.Errorf("self: %d %s", code, b)
	}
}
