package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestRemoteNodesLifecycle: `nodes` shows a node's lifecycle apart from
// its last task: deployed, then power_cycle'd, the node is still
// deployed (LIFECYCLE), its last action power_cycle at stage powered;
// --lifecycle filters; `adopt NODE --machine` reaches the API and its
// refusal names the machine.
func TestRemoteNodesLifecycle(t *testing.T) {
	t.Parallel()
	s := remoteServer(t)
	url, node := s.URL, s.Node
	tokViewer, tokOperator := s.Token[api.RoleViewer], s.Token[api.RoleOperator]
	must := func(tok string, args ...string) string {
		t.Helper()
		code, out, errs := cli(t, append([]string{"--server", url, "--token", tok}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		return out
	}
	must(tokOperator, "prepare-site")
	must(tokOperator, "deploy", "--node", node)
	must(tokOperator, "task", "power_cycle", "--node", node)

	var nodes []api.NodeSummary
	if err := json.Unmarshal([]byte(must(tokViewer, "nodes", "-o", "json", "--lifecycle", "deployed")), &nodes); err != nil || len(nodes) != 1 {
		t.Fatalf("nodes --lifecycle deployed: %v %+v", err, nodes)
	}
	if n := nodes[0]; n.Name != node || n.Lifecycle != record.LifecycleDeployed || n.Action != record.ActionPowerCycle || n.Stage != record.StagePowered {
		t.Errorf("node %+v", n)
	}
	out := must(tokViewer, "nodes", "-o", "table")
	if !strings.Contains(out, "LIFECYCLE") || !strings.Contains(out, "LAST ACTION") {
		t.Errorf("nodes table header:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, node+" ") && (!strings.Contains(l, "deployed") || !strings.Contains(l, "power_cycle") || !strings.Contains(l, "powered")) {
			t.Errorf("nodes table row: %s", l)
		}
	}
	code, o, errs := cli(t, "--server", url, "--token", tokOperator, "adopt", node, "--machine", "nosuch")
	if code == 0 || !strings.Contains(o+errs, "nosuch") {
		t.Errorf("adopt --machine nosuch: exit %d\n%s%s", code, o, errs)
	}
}
