package introspection

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

func events(t *testing.T, e *env) []record.Event {
	t.Helper()
	entries, err := e.st.ReadLog(t.Context(), logEvents, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []record.Event
	for _, en := range entries {
		var ev record.Event
		if err := json.Unmarshal(en.Value, &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func TestReportsAndStatus(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	node := "r01-gpu01"
	tok := e.issue(node, "2")
	acts := signalling(e.d, node)
	if len(acts) < 2 {
		t.Fatalf("the example should give %s two signalling actions, it has %v", node, acts)
	}
	status := func() drivers.Result {
		t.Helper()
		res, err := e.srv.BootstrapStatus(ctx, e.d, node, "2")
		if err != nil {
			t.Fatal(err)
		}
		if !res.Valid() {
			t.Fatalf("invalid result %+v", res)
		}
		return res.Result
	}
	if res := status(); res.Status != drivers.StatusInProgress || res.RetryAfter != 10*time.Second ||
		!strings.Contains(res.Message, acts[0]+" (no report yet)") {
		t.Fatalf("before any report: %+v", res)
	}
	for _, a := range acts {
		if r := e.report(tok, a, "running", "installing"); r.code != 200 {
			t.Fatalf("running: %d %s", r.code, r.body)
		}
	}
	if res := status(); res.Status != drivers.StatusInProgress || !strings.Contains(res.Message, acts[1]+" (running)") {
		t.Fatalf("running: %+v", res)
	}
	r := e.report(tok, acts[0], "success", "done\nwith\x1b[31m colour")
	if r.code != 200 {
		t.Fatalf("success: %d", r.code)
	}
	var rep Report
	if err := json.Unmarshal(r.body, &rep); err != nil || rep.Node != node || rep.Deployment != "2" ||
		rep.Action != acts[0] || rep.Status != "success" || rep.Message != "done with [31m colour" {
		t.Errorf("stored report: %+v %v", rep, err)
	}
	if res := status(); res.Status != drivers.StatusInProgress || strings.Contains(res.Message, acts[0]) {
		t.Fatalf("one success: %+v", res)
	}
	for _, a := range acts[1:] {
		e.report(tok, a, "success", "")
	}
	// A non-signalling action's failure does not matter.
	for _, a := range e.d.BootActionsFor(e.d.Nodes[node]) {
		if !e.d.BootActions[a].Spec.Signaling {
			e.report(tok, a, "failure", "ignored")
		}
	}
	res := status()
	if res.Status != drivers.StatusDone || res.Message != "every signalling boot action reported success: "+strings.Join(acts, ", ") {
		t.Fatalf("all reported: %+v", res)
	}
	// Reports are per deployment: deployment 3 starts over.
	if res, _ := e.srv.BootstrapStatus(ctx, e.d, node, "3"); res.Status != drivers.StatusInProgress {
		t.Errorf("another deployment: %+v", res)
	}
	// A failure fails the bootstrap, with its message.
	e.report(tok, acts[1], "failure", "apt-get install kubeadm: E: Unable to locate package kubeadm")
	res = status()
	if res.Status != drivers.StatusFailed || res.Message != "boot action "+acts[1]+" failed on "+node+": apt-get install kubeadm: E: Unable to locate package kubeadm" {
		t.Errorf("failure: %+v", res)
	}
	// Every change was an event of kind "action" in the engine's log.
	evs := events(t, e)
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	last := evs[len(evs)-1]
	if last.Kind != "action" || last.Node != node || last.Level != "error" || last.Stage != record.StageBootstrap ||
		last.Message != "boot action "+acts[1]+": failure: apt-get install kubeadm: E: Unable to locate package kubeadm" {
		t.Errorf("last event %+v", last)
	}
	if first := evs[0]; first.Level != "info" || first.Message != "boot action "+acts[0]+": running: installing" {
		t.Errorf("first event %+v", first)
	}
	// A retry of the same report writes nothing new.
	n := len(evs)
	e.report(tok, acts[1], "failure", "apt-get install kubeadm: E: Unable to locate package kubeadm")
	if len(events(t, e)) != n {
		t.Error("a repeated report added an event")
	}
}

func TestStatusWithoutSignalling(t *testing.T) {
	e := newEnv(t)
	d := cloneDesign(e.d)
	for name, ba := range e.d.BootActions {
		c := *ba
		c.Spec.Signaling = false
		d.BootActions[name] = &c
	}
	res, err := e.srv.BootstrapStatus(t.Context(), d, "r01-cmp01", "1")
	if err != nil || res.Status != drivers.StatusDone {
		t.Errorf("no signalling actions: %+v %v", res, err)
	}
	if _, err := e.srv.BootstrapStatus(t.Context(), d, "nope", "1"); err == nil || drivers.Classify(err) != drivers.Permanent {
		t.Errorf("unknown node: %v", err)
	}
}

func TestReportRefusals(t *testing.T) {
	e := newEnv(t)
	node := "r01-cmp01"
	tok := e.issue(node, "1")
	act := signalling(e.d, node)[0]
	other := notTargeting(e.d, node)
	if other == "" {
		t.Fatal("the example should have a boot action that does not target " + node)
	}
	for name, c := range map[string]struct {
		action string
		body   string
		want   int
	}{
		"not targeting":     {other, `{"status":"success"}`, 404},
		"unknown action":    {"no-such-action", `{"status":"success"}`, 404},
		"unknown status":    {act, `{"status":"done"}`, 400},
		"no status":         {act, `{"message":"x"}`, 400},
		"unknown field":     {act, `{"status":"success","extra":1}`, 400},
		"trailing data":     {act, `{"status":"success"} {}`, 400},
		"not json":          {act, `status=success`, 400},
		"array":             {act, `[{"status":"success"}]`, 400},
		"null":              {act, `null`, 400},
		"empty":             {act, ``, 400},
		"wrong type":        {act, `{"status":1}`, 400},
		"too large":         {act, `{"status":"success","message":"` + strings.Repeat("x", 70<<10) + `"}`, 413},
		"case of status":    {act, `{"status":"SUCCESS"}`, 400},
		"duplicate allowed": {act, `{"status":"running","message":"a"}`, 200},
	} {
		t.Run(name, func(t *testing.T) {
			r := e.do("POST", "/v1/self/actions/"+c.action, tok, []byte(c.body))
			if r.code != c.want {
				t.Fatalf("status %d, want %d: %s", r.code, c.want, r.body)
			}
			if c.want != 200 {
				if p := r.problem(t); p.Status != c.want || p.Detail == "" {
					t.Errorf("problem %+v", p)
				}
			}
		})
	}
	// Nothing but the accepted report was stored.
	recs, _ := e.st.List(t.Context(), collReports, "")
	if len(recs) != 1 {
		t.Errorf("reports: %v", recs)
	}
	// A long message is kept to maxMessage bytes.
	r := e.report(tok, act, "failure", strings.Repeat("é", 4000))
	var rep Report
	_ = json.Unmarshal(r.body, &rep)
	if r.code != 200 || len(rep.Message) > maxMessage+len("…") || !strings.HasSuffix(rep.Message, "…") {
		t.Errorf("long message: %d, %d bytes", r.code, len(rep.Message))
	}
}
