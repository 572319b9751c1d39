package main

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

// labMAAS sends a signed request to the lab's MAAS behind Slipway's back
// and decodes the machine it answers.
func labMAAS(t *testing.T, s *apitest.Server, method, path, op string, form url.Values) map[string]any {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	raw, err := s.Env.MAASCall(t.Context(), method, path, op, form)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

// TestReconcileCommands: reconcile, drift and drift resolve through a
// served API, against drift made in the lab's MAAS: roles, one record
// however often it runs, repair and release checked in the lab, the
// resolved event correlated to the request.
func TestReconcileCommands(t *testing.T) {
	t.Parallel()
	s := remoteServer(t)
	viewer, operator := s.Token[api.RoleViewer], s.Token[api.RoleOperator]
	as := func(tok string, args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--server", s.URL, "--token", tok}, args...)...)
	}
	must := func(tok string, args ...string) string {
		t.Helper()
		code, out, errs := as(tok, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		return out
	}
	const off, renamed = "r01-cmp01", "r02-cmp01"
	ctx := t.Context()
	for _, a := range []record.Action{record.ActionPrepareSite, record.ActionDeployNodes} {
		task, err := s.Engine.Submit(ctx, record.Request{Action: a, Requester: "test",
			Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{off, renamed}}}}})
		if err != nil {
			t.Fatal(err)
		}
		if task, err = s.Engine.Wait(ctx, task.ID); err != nil || task.Status != record.TaskSucceeded {
			t.Fatalf("%s: %s, %v", a, task.Status, err)
		}
	}
	if out := must(operator, "reconcile"); !strings.Contains(out, "no open drift") {
		t.Fatalf("reconcile after a clean deploy:\n%s", out)
	}
	ids := map[string]string{}
	for _, n := range []string{off, renamed} {
		rec, err := s.Engine.Node(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		ids[n] = rec.MachineID
	}
	labMAAS(t, s, "POST", "/machines/"+ids[off]+"/", "power_off", url.Values{})
	labMAAS(t, s, "PUT", "/machines/"+ids[renamed]+"/", "", url.Values{"hostname": {"by-hand"}})

	if code, _, errs := as(viewer, "reconcile"); code == 0 || !strings.Contains(errs, "operator") {
		t.Errorf("a viewer ran a reconciliation: exit %d, %s", code, errs)
	}
	out := must(operator, "reconcile")
	if !strings.Contains(out, "detected: "+off+"/power, "+renamed+"/hostname") {
		t.Errorf("reconcile:\n%s", out)
	}
	must(operator, "reconcile")
	var ds []record.DriftRecord
	if err := json.Unmarshal([]byte(must(viewer, "drift", "-o", "json")), &ds); err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].Node != off || ds[0].Kind != record.DriftPower || ds[1].Node != renamed || ds[1].Kind != record.DriftHostname {
		t.Fatalf("drift after two runs: %+v", ds)
	}
	if out = must(viewer, "drift", "--kind", "hostname"); !strings.Contains(out, "by-hand") || strings.Contains(out, off) {
		t.Errorf("drift --kind hostname:\n%s", out)
	}
	if out = must(viewer, "reconcile", "status"); !strings.Contains(out, "open drift: 2 (hostname 1, power 1)") {
		t.Errorf("reconcile status:\n%s", out)
	}

	if code, _, _ := as(viewer, "drift", "resolve", off, "--kind", "power", "--resolution", "repair"); code == 0 {
		t.Error("a viewer resolved drift")
	}
	if code, _, errs := as(operator, "drift", "resolve", off, "--kind", "power", "--resolution", "fix"); code == 0 || !strings.Contains(errs, "accept, repair or release") {
		t.Errorf("an unknown resolution: exit %d, %s", code, errs)
	}
	must(operator, "drift", "resolve", off, "--kind", "power", "--resolution", "repair")
	if m := labMAAS(t, s, "GET", "/machines/"+ids[off]+"/", "", nil); m["power_state"] != "on" {
		t.Errorf("after repair the lab says %s is %v", off, m["power_state"])
	}
	evs, err := s.Engine.Events(ctx, 0, 0, "", off)
	if err != nil {
		t.Fatal(err)
	}
	var resolved *record.Event
	for i := range evs {
		if evs[i].Type == record.EventDriftResolved {
			resolved = &evs[i]
		}
	}
	if resolved == nil || resolved.Correlation == "" {
		t.Fatalf("no resolved event with a correlation ID: %+v", resolved)
	}
	audit, err := s.Store.ReadLog(ctx, "audit", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range audit {
		found = found || strings.Contains(string(a.Value), `"request_id":"`+resolved.Correlation+`"`) && strings.Contains(string(a.Value), "drift.resolve")
	}
	if !found {
		t.Errorf("no drift.resolve audit record with request ID %s", resolved.Correlation)
	}

	out = must(operator, "drift", "resolve", renamed, "--kind", "hostname", "--resolution", "release")
	if !strings.Contains(out, "destroy_nodes task") {
		t.Fatalf("release:\n%s", out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for labMAAS(t, s, "GET", "/machines/"+ids[renamed]+"/", "", nil)["status_name"] != "Ready" {
		if time.Now().After(deadline) {
			t.Fatalf("%s's machine was not released", renamed)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out = must(viewer, "drift"); !strings.Contains(out, "no open drift") {
		t.Errorf("drift after the resolutions:\n%s", out)
	}

	// A deployed node removed from the design: listed, flagged, orphan
	// drift, destroyed without naming the old revision.
	smaller := designtest.Example(t)
	delete(smaller.Nodes, off)
	raw, rev, err := smaller.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.PutRevision(ctx, statestore.Revision{ID: rev, Design: raw, Counts: smaller.Counts(), Roots: []string{"(test)"}}); err != nil {
		t.Fatal(err)
	}
	var ns []api.NodeSummary
	if err := json.Unmarshal([]byte(must(viewer, "nodes", "-o", "json")), &ns); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(ns, func(n api.NodeSummary) bool { return n.Name == off }); i < 0 || !ns[i].Orphan || ns[i].MachineID != ids[off] {
		t.Errorf("nodes after %s left the design: %+v", off, ns)
	}
	if out = must(operator, "reconcile"); !strings.Contains(out, "detected: "+off+"/orphan") {
		t.Errorf("reconcile after %s left the design:\n%s", off, out)
	}
	if code, out, errs := as(operator, "destroy", "--node", off); code != 0 {
		t.Fatalf("destroy --node %s: exit %d\n%s%s", off, code, out, errs)
	}
	if m := labMAAS(t, s, "GET", "/machines/"+ids[off]+"/", "", nil); m["status_name"] != "Ready" {
		t.Errorf("after destroy the lab says %s is %v", off, m["status_name"])
	}
	if out = must(operator, "reconcile"); !strings.Contains(out, "cleared: "+off+"/orphan") || !strings.Contains(out, "no open drift") {
		t.Errorf("reconcile after the orphan's destroy:\n%s", out)
	}
}
