package api_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
)

// idemFlood is what TestIdempotencyOneCallerEvictsOnlyItsOwn runs: the
// admin's keyed call, then the operator's calls, then the admin's retry.
func idemFlood(t *testing.T, cfg func(*api.Config), flood func(f *fixture, i int) (int, int)) {
	f := &fixture{apitest.Start(t, apitest.WithSeed(9), apitest.WithConfig(cfg))}
	count := func(coll string) int {
		recs, err := f.Store.List(t.Context(), coll, "")
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	admin, body := f.Token[api.RoleAdmin], `{"action":"validate_design"}`
	tasks := count("tasks")
	if code, _, b := f.keyed(t, "POST", "/api/v1/tasks", admin, "admin-1", body); code != http.StatusCreated {
		t.Fatalf("the admin's task: %d %s", code, b)
	}
	// The expiry index orders keys by the second they expire in: the
	// operator's calls come a second later, so the admin's key is the
	// oldest, whoever's token ID sorts first.
	time.Sleep(1100 * time.Millisecond)
	for i := range 63 { // with the admin's, 64 answers: the sweep runs
		if code, want := flood(f, i); code != want {
			t.Fatalf("the operator's call %d: %d, want %d", i, code, want)
		}
	}
	// The sweep runs after every 64th answer kept, in the background: wait
	// until it has brought the records under the caps (at most 5 s).
	for deadline := time.Now().Add(5 * time.Second); count("idempotency") > 9 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	code, replayed, b := f.keyed(t, "POST", "/api/v1/tasks", admin, "admin-1", body)
	if code != http.StatusCreated || replayed != "true" {
		t.Errorf("the admin's retry after the operator's calls: %d (replayed %q) %s, want its first answer again", code, replayed, b)
	}
	if n := count("tasks") - tasks; n != 1 {
		t.Errorf("the admin's call and its retry made %d tasks, want 1", n)
	}
}

// TestIdempotencyOneCallerEvictsOnlyItsOwn (issue 33 re-audit): the
// records of one principal's keys are bounded per principal, so another
// principal's many keyed calls evict only their own; refusals (4xx) are
// not kept at all (nothing was applied: a retry runs again). Before, an
// operator's keyed calls to cancel tasks that do not exist (404) evicted
// the admin's key, and the admin's retry created a second task.
func TestIdempotencyOneCallerEvictsOnlyItsOwn(t *testing.T) {
	t.Parallel()
	t.Run("refusals are not kept", func(t *testing.T) {
		idemFlood(t, func(c *api.Config) { c.IdempotencyRecords = 8 }, func(f *fixture, i int) (int, int) {
			code, _, _ := f.keyed(t, "POST", fmt.Sprintf("/api/v1/tasks/nonexistent-%d/cancel", i), f.Token[api.RoleOperator], fmt.Sprint("op-", i), "")
			return code, http.StatusNotFound
		})
	})
	t.Run("a cap per principal", func(t *testing.T) {
		idemFlood(t, func(c *api.Config) { c.IdempotencyRecords, c.IdempotencyPrincipalRecords = 40, 8 }, func(f *fixture, i int) (int, int) {
			verb := map[bool]string{true: "mark-manual-intervention", false: "release-manual"}[i%2 == 0]
			code, _, _ := f.keyed(t, "POST", "/api/v1/nodes/"+f.Node+"/"+verb, f.Token[api.RoleOperator], fmt.Sprint("op-", i), "")
			return code, http.StatusOK
		})
	})
}
