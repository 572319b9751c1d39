package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
)

// TestApplyApproval: `plan` prints the approval of its destructive
// actions; `apply --approval` with another one is refused (exit 1,
// nothing stored, the lab's MAAS still says Deployed), with the one the
// plan printed it is stored; --approve and --approval together are a
// usage error.
func TestApplyApproval(t *testing.T) {
	t.Parallel()
	s := remoteServer(t)
	op := s.Token[api.RoleOperator]
	as := func(args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--server", s.URL, "--token", op}, args...)...)
	}
	const node = "r01-cmp01"
	for _, args := range [][]string{{"prepare-site"}, {"deploy", "--node", node}} {
		if code, out, errs := as(args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	site := withoutNode(t, node)
	code, out, errs := as("plan", site)
	m := regexp.MustCompile(`--approval ([0-9a-f]{64})\)`).FindStringSubmatch(out)
	if code != exitPlanChanges || m == nil {
		t.Fatalf("plan: exit %d, want 2 and the approval printed\n%s%s", code, out, errs)
	}
	before, err := s.Store.History(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errs := as("apply", "--approval", strings.Repeat("0", 64), site); code != exitInvalid || !strings.Contains(errs, "not the one approved") {
		t.Fatalf("apply with another approval: exit %d\n%s%s", code, out, errs)
	}
	if h, err := s.Store.History(t.Context()); err != nil || len(h) != len(before) || labStatus(s, node) != "Deployed" {
		t.Fatalf("a refused apply was stored (%d → %d, %v) or the machine changed (%s)", len(before), len(h), err, labStatus(s, node))
	}
	if code, out, errs := as("apply", "--approve", "--approval", m[1], site); code != exitUsage {
		t.Errorf("--approve with --approval: exit %d, want a usage error\n%s%s", code, out, errs)
	}
	if code, out, errs := as("apply", "--approval", m[1], site); code != 0 || !strings.HasPrefix(out, "revision ") {
		t.Fatalf("apply with the plan's approval: exit %d\n%s%s", code, out, errs)
	}
}
