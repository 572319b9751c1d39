package labrun_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestAuditCountsFromTheLab: a boot action with signaling off that fails
// does not stop the engine (it does not wait for that report), so the
// engine counts every node deployed; the lab's audit counts the machine
// whose agent reported the failure as failed. (The audit used to count
// machines with an OS installed: all of them.)
func TestAuditCountsFromTheLab(t *testing.T) {
	d := designtest.Example(t)
	bad := d.NodeNames()[0]
	env, err := labrun.Start(t.Context(), labrun.Options{Design: d, Store: memory.New(), TimeScale: 0.001, Seed: 7,
		BootstrapFail: map[string]string{bad: "motd-addresses"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	e, err := env.Engine(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	for _, a := range []record.Action{record.ActionPrepareSite, record.ActionDeployNodes} {
		if task := runTask(t, e, a); task.Status != record.TaskSucceeded {
			t.Fatalf("%s: %s (%s)", a, task.Status, task.Message)
		}
	}
	a, err := env.Audit(t.Context(), e)
	if err != nil {
		t.Fatal(err)
	}
	if a.Deployed != len(d.Nodes)-1 || !slices.Equal(a.Failed, []string{bad}) || len(a.Stuck) != 0 {
		t.Errorf("audit: %d deployed (want %d), failed %v (want [%s]), stuck %v", a.Deployed, len(d.Nodes)-1, a.Failed, bad, a.Stuck)
	}
	if n := len(a.PhaseStarts["deploy"]); n != len(d.Nodes) {
		t.Errorf("%d machines started a deployment, want %d", n, len(d.Nodes))
	}
	rep := a.Report(len(d.Nodes), a.PhaseStarts["commission"][0].Add(-time.Second))
	if sp := rep.PhaseStarts["deploy"]; sp.N != len(d.Nodes) || sp.Min <= 0 || sp.Min > sp.P50 || sp.P50 > sp.Max {
		t.Errorf("deploy starts: %+v", sp)
	}
	installed := 0 // the old audit's "deployed"
	for _, m := range env.Lab.Machines() {
		if m.OS() != "" {
			installed++
		}
	}
	if installed != len(d.Nodes) {
		t.Errorf("%d machines have an OS installed, want all %d (the old count would call them deployed)", installed, len(d.Nodes))
	}
	if len(a.Leaked) != 0 || a.DuplicateDeploys != 0 || a.Floor <= 0 {
		t.Errorf("audit: leaked %v, %d duplicate deploys, floor %v", a.Leaked, a.DuplicateDeploys, a.Floor)
	}

	// A machine allocated with the engine's key but without its agent
	// name is invisible to the driver's Owned() (the old audit's source);
	// the simulator's own state shows it leaked.
	id := allocateStray(t, env)
	if a, err = env.Audit(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Leaked, []string{id}) {
		t.Errorf("leaked %v, want [%s]", a.Leaked, id)
	}
	owned, err := env.Drivers.Server.Owned(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range owned {
		if m.MachineID == id {
			t.Errorf("the driver's Owned() lists the stray %s: the test no longer shows the difference", id)
		}
	}
}

// allocateStray creates, commissions and allocates a machine through the
// lab's MAAS API with no agent name, and returns its system ID.
func allocateStray(t *testing.T, env *labrun.Env) string {
	t.Helper()
	var m struct {
		SystemID string `json:"system_id"`
	}
	maasPost(t, env, "/machines/", "", url.Values{"mac_addresses": {"52:54:00:ff:00:01"}, "commission": {"true"}}, &m)
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(env.Lab.MAAS.Machines(), func(ms maas.MachineState) bool { return ms.SystemID == m.SystemID && ms.Status == "Ready" }) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never got Ready", m.SystemID)
		}
		time.Sleep(10 * time.Millisecond)
	}
	maasPost(t, env, "/machines/", "allocate", url.Values{"system_id": {m.SystemID}}, nil)
	return m.SystemID
}

// maasPost sends a signed form request to the lab's MAAS.
func maasPost(t *testing.T, env *labrun.Env, path, op string, form url.Values, out any) {
	t.Helper()
	info := env.Lab.Info()
	creds, err := maas.ParseAPIKey(info.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "POST", info.MAASURL+"/api/2.0"+path+"?op="+op, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	creds.Sign(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s op=%s: %d %s", path, op, resp.StatusCode, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatal(err)
		}
	}
}

func runTask(t *testing.T, e *orchestrator.Engine, a record.Action) record.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	task, err := e.Submit(ctx, record.Request{Action: a, Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	task, err = e.Wait(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	return task
}
