package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
)

// TestApprovalBoundToPlan: an approval is of the destructive actions the
// approver was shown, not of a revision whatever it does. The 409 of a
// design dropping two nodes names the release of the one deployed; then
// the other is deployed too, and the same approval must not pass: the
// apply now releases a machine nobody approved (409 naming both, nothing
// stored, the lab's MAAS still says Deployed). The new approval passes.
func TestApprovalBoundToPlan(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const a, b = "r01-cmp01", "r01-cmp02"
	deployed(t, f, a)
	archive := exampleWithout(t, a, b)
	op := f.Token[api.RoleOperator]
	refusal := func(want int) api.Problem {
		t.Helper()
		code, body := f.do(t, "POST", "/api/v1/designs", op, "application/gzip", archive)
		var p api.Problem
		if err := json.Unmarshal(body, &p); err != nil || code != http.StatusConflict || len(p.Destructive) != want || len(p.Approve) != 64 {
			t.Fatalf("apply: %d %s; want 409 naming %d destructive actions", code, body, want)
		}
		return p
	}
	first := refusal(1)
	if !strings.Contains(first.Destructive[0], "release "+a) {
		t.Fatalf("the refusal names %q, want the release of %s", first.Destructive, a)
	}
	deployed(t, f, b)
	code, body := f.do(t, "POST", "/api/v1/designs?approve="+first.Approve, op, "application/gzip", archive)
	if code != http.StatusConflict || !strings.Contains(string(body), "release "+b) {
		t.Fatalf("the approval of one release applied a design that releases two: %d %s; want 409 naming the release of %s", code, body, b)
	}
	if st, _ := labMachine(f, b); st != "Deployed" {
		t.Fatalf("the lab says %s is %q", b, st)
	}
	second := refusal(2)
	if second.Approve == first.Approve {
		t.Fatalf("the approval is the same for another set of destructive actions: %s", second.Approve)
	}
	if code, body := f.do(t, "POST", "/api/v1/designs?approve="+second.Approve, op, "application/gzip", archive); code != http.StatusCreated {
		t.Fatalf("approved: %d %s", code, body)
	}
}
