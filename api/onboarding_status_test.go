package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/siteregistry"
)

// TestOnboardingStatusFollowsNode: an onboarded node whose first four
// deployments fail in the lab leaves its onboarding failed (its task's
// run and retry fail, and so do a later deploy_nodes task's); `rerun` of
// that later task deploys the node (the lab's MAAS says Deployed) and the
// onboarding, whose own task is still failed, then reads succeeded, in GET
// and in the ?status= filter. A destroy of the node makes it released.
func TestOnboardingStatusFollowsNode(t *testing.T) {
	t.Parallel()
	const host, bmc = "r02-cmp01", "10.10.0.111"
	f := &fixture{apitest.Start(t, apitest.WithSeed(9),
		apitest.WithFaults(&maas.Faults{Machines: map[string]maas.MachineFaults{host: {FailDeploy: 4}}}))}
	admin, op := f.Token[api.RoleAdmin], f.Token[api.RoleOperator]
	var rec siteregistry.Record
	if code := f.json(t, "POST", "/api/v1/admin/maas-sites", admin, map[string]any{"name": "lab", "url": f.Env.Lab.Info().MAASURL,
		"api_key": f.Env.Lab.Info().APIKey}, &rec); code != http.StatusCreated {
		t.Fatalf("site: %d", code)
	}
	if code, b := f.do(t, "POST", "/api/v1/designs", op, "application/gzip", exampleWithout(t, host)); code != http.StatusCreated {
		t.Fatalf("apply without %s: %d %s", host, code, b)
	}
	var task record.Task
	if code := f.json(t, "POST", "/api/v1/tasks", op, map[string]any{"action": "prepare_site"}, &task); code != http.StatusCreated {
		t.Fatalf("prepare_site: %d", code)
	}
	wait(t, f, task.ID)
	w := onboardOne(t, f, rec.ID, host, bmc)
	if got := waitTask(t, f, w.Task.ID); got.Status != record.TaskFailed {
		t.Fatalf("the onboarding's deploy of %s: task %s, want failed (the lab fails its first four deployments)", host, got.Status)
	}
	checkOnboardingStatus(t, f, w.ID, "failed")

	nodes := map[string]any{"sets": []map[string]any{{"names": []string{host}}}}
	if code := f.json(t, "POST", "/api/v1/tasks", op, map[string]any{"action": "deploy_nodes", "node_filter": nodes}, &task); code != http.StatusCreated {
		t.Fatalf("deploy_nodes: %d", code)
	}
	if got := waitTask(t, f, task.ID); got.Status != record.TaskFailed {
		t.Fatalf("the second deploy of %s: task %s, want failed (deployments 3 and 4 fail)", host, got.Status)
	}
	if st, _ := labMachine(f, host); st == "Deployed" {
		t.Fatalf("the lab says %s is Deployed after two failed tasks", host)
	}
	checkOnboardingStatus(t, f, w.ID, "failed")
	if code := f.json(t, "POST", "/api/v1/tasks/"+task.ID+"/rerun", op, nil, nil); code != http.StatusAccepted {
		t.Fatalf("rerun: %d", code)
	}
	if got := waitTask(t, f, task.ID); got.Status != record.TaskSucceeded {
		t.Fatalf("rerun of %s: %s %s", task.ID, got.Status, got.Message)
	}
	if st, _ := labMachine(f, host); st != "Deployed" {
		t.Fatalf("after rerun the lab says %s is %q, want Deployed", host, st)
	}
	checkOnboardingStatus(t, f, w.ID, "succeeded")

	if code := f.json(t, "POST", "/api/v1/tasks", op, map[string]any{"action": "destroy_nodes", "node_filter": nodes}, &task); code != http.StatusCreated {
		t.Fatalf("destroy: %d", code)
	}
	wait(t, f, task.ID)
	if st, _ := labMachine(f, host); st == "Deployed" {
		t.Fatalf("the lab says %s is still Deployed after destroy_nodes", host)
	}
	checkOnboardingStatus(t, f, w.ID, "released")
}

func onboardOne(t *testing.T, f *fixture, site, host, bmc string) apitypes.Onboarding {
	t.Helper()
	var prof siteregistry.Profile // profile_id is required
	if code := f.json(t, "POST", "/api/v1/admin/maas-sites/"+site+"/profiles", f.Token[api.RoleAdmin], map[string]any{"name": "std"}, &prof); code != http.StatusCreated {
		t.Fatalf("create a site profile: %d", code)
	}
	var w apitypes.Onboarding
	one := map[string]any{"site_id": site, "profile_id": prof.ID, "sku_id": "supermicro-as2024", "host_profile": "compute", "hostname": host, "ipmi_ip": bmc,
		"rack": "r02", "addresses": map[string]string{"mgmt": "10.12.0.111", "storage": "10.13.0.111"}}
	if code := f.json(t, "POST", "/api/v1/admin/onboardings", f.Token[api.RoleAdmin], one, &w); code != http.StatusCreated || w.Task == nil {
		t.Fatalf("onboard: %d %+v", code, w)
	}
	return w
}

// waitTask waits up to a minute for the task to end, however it ends.
func waitTask(t *testing.T, f *fixture, id string) record.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	got, err := f.Engine.Wait(ctx, id)
	if err != nil {
		t.Fatalf("task %s: %v", id, err)
	}
	return got
}

// checkOnboardingStatus: GET says want, and of the lists filtered by
// status only want's holds the onboarding.
func checkOnboardingStatus(t *testing.T, f *fixture, id, want string) {
	t.Helper()
	admin := f.Token[api.RoleAdmin]
	var got apitypes.Onboarding
	if code := f.json(t, "GET", "/api/v1/admin/onboardings/"+id, admin, nil, &got); code != http.StatusOK || got.Status != want {
		t.Fatalf("GET onboarding %s: %d status %q, want %q", id, code, got.Status, want)
	}
	for _, status := range []string{"failed", "succeeded", "released"} {
		n := 0
		if status == want {
			n = 1
		}
		var page apitypes.Page[apitypes.Onboarding]
		if code := f.json(t, "GET", "/api/v1/admin/onboardings?status="+status, admin, nil, &page); code != http.StatusOK || page.Total != n {
			t.Errorf("list ?status=%s: %d, %d onboardings, want %d", status, code, page.Total, n)
		}
	}
}
