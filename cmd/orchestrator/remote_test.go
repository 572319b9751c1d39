package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// remoteServer serves a real control API over the virtual lab running the
// example site (see apitest). The remote mode's environment is cleared
// once for the whole test process (TestMain), so that the tests using it
// can run in parallel.
func remoteServer(t *testing.T) *apitest.Server {
	t.Helper()
	return apitest.Start(t, apitest.WithSeed(11))
}

// TestRemoteCommands drives the CLI against a served API: apply, tasks
// to a deployed node, the lists, events, audit, refusals.
func TestRemoteCommands(t *testing.T) {
	s := remoteServer(t)
	url, node := s.URL, s.Node
	tokViewer, tokOperator, tokAdmin := s.Token[api.RoleViewer], s.Token[api.RoleOperator], s.Token[api.RoleAdmin]
	var seen bytes.Buffer // every output, to look for tokens
	as := func(tok string, args ...string) (int, string, string) {
		t.Helper()
		code, out, errs := cli(t, append([]string{"--server", url, "--token", tok}, args...)...)
		seen.WriteString(out + errs)
		return code, out, errs
	}
	must := func(tok string, args ...string) string {
		t.Helper()
		code, out, errs := as(tok, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		return out
	}

	// Designs: apply, apply a change, diff, and back.
	site := copyExample(t)
	out := must(tokOperator, "apply", site)
	if !strings.Contains(out, "revision ") {
		t.Fatalf("apply:\n%s", out)
	}
	first := strings.Fields(out)[1]
	p := filepath.Join(site, "nodes-r01.yaml")
	orig, _ := os.ReadFile(p)
	changed := strings.Replace(string(orig), "address: 10.13.0.101", "address: 10.13.0.150", 1)
	if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	out = must(tokOperator, "apply", site)
	if !strings.Contains(out, "stored") || !strings.Contains(out, "Node: 0 added, 0 removed, 1 changed") || !strings.Contains(out, "~ node r01-cmp01: spec.addressing") {
		t.Fatalf("apply of a change:\n%s", out)
	}
	second := strings.Fields(out)[1]
	if out = must(tokViewer, "diff", first, second); !strings.Contains(out, first+" -> "+second) || !strings.Contains(out, "~ node r01-cmp01: spec.addressing") {
		t.Errorf("diff:\n%s", out)
	}
	if err := os.WriteFile(p, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if out = must(tokOperator, "apply", site); !strings.Contains(out, "is current again") {
		t.Errorf("apply of the first design again:\n%s", out)
	}
	if out = must(tokViewer, "designs"); !strings.Contains(out, "*"+first) || !strings.Contains(out, " "+second) {
		t.Errorf("designs:\n%s", out)
	}
	// An invalid design: the findings by local file and line, exit 1.
	bad := filepath.Join(site, "zz-bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: slipway/v1\nkind: Network\nmetadata: {name: extra}\nspec:\n  cidr: 10.50.0.1/24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := as(tokOperator, "apply", site)
	if code != exitInvalid || !strings.Contains(errs, bad+":5: error cidr") || !strings.Contains(errs, "nothing applied") {
		t.Errorf("invalid apply: exit %d\n%s", code, errs)
	}
	os.Remove(bad)

	// A viewer may not deploy: exit 2 with the server's 403.
	code, _, errs = as(tokViewer, "deploy", "--node", node)
	if code != exitUsage || !strings.Contains(errs, "HTTP 403") || !strings.Contains(errs, "(request ") {
		t.Errorf("viewer deploy: exit %d: %s", code, errs)
	}

	// Tasks, followed to the end.
	out = must(tokOperator, "prepare-site")
	if !strings.Contains(out, "prepare_site  succeeded") {
		t.Fatalf("prepare-site:\n%s", out)
	}
	prep := taskID(t, out)
	out = must(tokOperator, "deploy", "--node", node)
	if !strings.Contains(out, "deploy_nodes  succeeded") || !strings.Contains(out, node) || !strings.Contains(out, "deployed") {
		t.Fatalf("deploy:\n%s", out)
	}
	deploy := taskID(t, out)
	if out = must(tokOperator, "rerun", prep, "-o", "json"); !strings.Contains(out, `"status": "succeeded"`) {
		t.Errorf("rerun -o json:\n%s", out)
	}
	if out = must(tokOperator, "task", "verify_site", "--no-wait"); !strings.Contains(out, "stored (verify_site") {
		t.Errorf("task --no-wait:\n%s", out)
	}
	verify := strings.Fields(out)[1]
	if out = must(tokViewer, "wait", verify); !strings.Contains(out, "succeeded") {
		t.Errorf("wait:\n%s", out)
	}

	// The lists.
	var tasks []record.Task
	if err := json.Unmarshal([]byte(must(tokViewer, "tasks", "-o", "json")), &tasks); err != nil || len(tasks) != 3 || tasks[0].ID != prep || tasks[1].ID != deploy {
		t.Errorf("tasks -o json: %v %+v", err, tasks)
	}
	if out = must(tokViewer, "tasks"); !strings.Contains(out, "TASK") || strings.Count(out, "\n") != 4 {
		t.Errorf("tasks:\n%s", out)
	}
	if out = must(tokViewer, "tasks", deploy, "-o", "yaml"); !strings.Contains(out, "status: succeeded") || !strings.Contains(out, "results:") {
		t.Errorf("tasks ID -o yaml:\n%s", out)
	}
	var nodes []api.NodeSummary
	if err := json.Unmarshal([]byte(must(tokViewer, "nodes", "-o", "json")), &nodes); err != nil || len(nodes) != 8 {
		t.Errorf("nodes -o json: %v %d", err, len(nodes))
	}
	nodes = nil
	if err := json.Unmarshal([]byte(must(tokViewer, "nodes", "-o", "json", "--stage", "deployed")), &nodes); err != nil || len(nodes) != 1 || nodes[0].Name != node {
		t.Errorf("nodes --stage deployed: %v %+v", err, nodes)
	}
	if out = must(tokViewer, "nodes", "-o", "table"); !strings.Contains(out, "RACK") || !strings.Contains(out, node) {
		t.Errorf("nodes table:\n%s", out)
	}
	if out = must(tokViewer, "nodes", node); !strings.Contains(out, `"workflow"`) || !strings.Contains(out, `"stage": "deployed"`) {
		t.Errorf("nodes NAME:\n%s", out)
	}
	if out = must(tokViewer, "events", "--task", deploy); !strings.Contains(out, "task succeeded") {
		t.Errorf("events:\n%s", out)
	}

	// Node verbs.
	if out = must(tokOperator, "mark-manual-intervention", node, "--reason", "disk swap"); !strings.Contains(out, `"frozen_reason": "disk swap"`) {
		t.Errorf("mark-manual-intervention:\n%s", out)
	}
	if out = must(tokOperator, "release-manual", node, "-o", "yaml"); strings.Contains(out, "frozen: true") || !strings.Contains(out, "name: "+node) {
		t.Errorf("release-manual:\n%s", out)
	}

	// Power through the server's engine; status needs the BMC from here.
	if out = must(tokOperator, "power", "cycle", "--node", node); !strings.Contains(out, "power_cycle  succeeded") {
		t.Errorf("power cycle:\n%s", out)
	}
	if code, _, errs := as(tokOperator, "power", "status", "--node", node); code != exitUsage || !strings.Contains(errs, "--design") {
		t.Errorf("power status: exit %d: %s", code, errs)
	}

	// Audit: admin only.
	var recs []api.AuditRecord
	if err := json.Unmarshal([]byte(must(tokAdmin, "audit", "-o", "json")), &recs); err != nil || len(recs) < 8 {
		t.Fatalf("audit -o json: %v %d", err, len(recs))
	}
	denied := false
	for _, r := range recs {
		denied = denied || (r.Outcome == "denied" && r.Who.Name == "viewer" && r.Route == "/api/v1/tasks")
	}
	if !denied {
		t.Errorf("the audit lacks the viewer's refused deploy: %+v", recs)
	}
	if out = must(tokAdmin, "audit", "--limit", "2"); strings.Count(out, "\n") != 3 || !strings.Contains(out, "POST /api/v1/designs") {
		t.Errorf("audit --limit 2:\n%s", out)
	}
	if code, _, errs := as(tokOperator, "audit"); code != exitUsage || !strings.Contains(errs, "HTTP 403") {
		t.Errorf("operator audit: exit %d: %s", code, errs)
	}

	// The environment instead of the flags.
	t.Setenv(envServer, url)
	t.Setenv(envToken, tokViewer)
	code, out, errs = cli(t, "tasks")
	seen.WriteString(out + errs)
	if code != 0 || !strings.Contains(out, deploy) {
		t.Errorf("tasks with %s and %s: exit %d\n%s%s", envServer, envToken, code, out, errs)
	}

	for _, tok := range []string{tokViewer, tokOperator, tokAdmin} {
		if strings.Contains(seen.String(), tok) {
			t.Fatalf("a token appears in the output")
		}
	}
}

// taskID is the ID in a followed task's summary line ("task ID  action …"),
// after the progress lines.
func taskID(t *testing.T, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == "task" {
			return f[1]
		}
	}
	t.Fatalf("no task line in:\n%s", out)
	return ""
}

// TestRemoteFollowEvents: events -f streams until interrupted, then exits 0.
func TestRemoteFollowEvents(t *testing.T) {
	t.Parallel()
	s := remoteServer(t)
	url, tokViewer, tokOperator := s.URL, s.Token[api.RoleViewer], s.Token[api.RoleOperator]
	if code, out, errs := cli(t, "--server", url, "--token", tokOperator, "task", "validate_design"); code != 0 {
		t.Fatalf("validate_design: exit %d\n%s%s", code, out, errs)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a hang guard: the interrupt comes once the task's end is out
	defer cancel()
	out := &interruptAt{cancel: cancel, at: []string{"task succeeded"}}
	var errb bytes.Buffer
	code := run(ctx, []string{"--server", url, "--token", tokViewer, "events", "-f", "-o", "json"}, out, &errb)
	if ctx.Err() == context.DeadlineExceeded {
		t.Fatalf("events -f: no \"task succeeded\" within a minute:\n%s", out.String())
	}
	if code != 0 {
		t.Fatalf("events -f: exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var last record.Event
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || !strings.HasPrefix(last.Message, "task succeeded") {
		t.Errorf("events -f -o json: %v\n%s", err, out.String())
	}
}

// interruptAt is a command's output that interrupts it (cancel) once all
// of at have been written.
type interruptAt struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	cancel func()
	at     []string
}

func (w *interruptAt) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	all := true
	for _, a := range w.at {
		all = all && bytes.Contains(w.buf.Bytes(), []byte(a))
	}
	if all {
		w.cancel()
	}
	return n, err
}

func (w *interruptAt) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestRemoteUsage: --server without a token, bad -o, local-only flags.
func TestRemoteUsage(t *testing.T) {
	t.Setenv(envServer, "")
	t.Setenv(envToken, "")
	const tokAdmin = "tok-admin-remote-0c8d5a" // distinctive: it may not show in the output
	state := filepath.Join(t.TempDir(), "s.db")
	if code, _, errs := cli(t, "apply", "--state", state, exampleSite); code != 0 {
		t.Fatalf("apply: %s", errs)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--server", "http://127.0.0.1:1", "deploy"}, "pass --token or set SLIPWAY_TOKEN"},
		{[]string{"--server", "http://127.0.0.1:1", "--token", tokAdmin, "tasks", "-o", "xml"}, "use text (or table), json or yaml"},
		{[]string{"--server", "127.0.0.1:1", "--token", tokAdmin, "tasks"}, "want http(s)://"},
		{[]string{"--server", "http://127.0.0.1:1", "--token", tokAdmin, "tasks"}, "connection refused"},
		{[]string{"events", "-f", "--state", state}, "start `orchestrator serve`"},
	} {
		code, out, errs := cli(t, c.args...)
		if code != exitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", c.args, code, errs, c.want)
		}
		if strings.Contains(out+errs, tokAdmin) {
			t.Errorf("%v: the token appears in the output", c.args)
		}
	}
	if code, out, _ := cli(t, "completion", "bash"); code != 0 || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: exit %d", code)
	}
}
