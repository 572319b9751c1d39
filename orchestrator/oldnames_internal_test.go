package orchestrator

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// Records as the release before the snake_case API names wrote them
// (camelCase json tags), field for field.
const (
	oldNode = `{"name":"r01-cmp01","machineId":"m-7","observed":"Deployed","lifecycle":"deployed","task":"T2",
"lastTask":"T1","action":"deploy_nodes","stage":"deploy","step":2,"outcome":"running","attempts":1,"totalAttempts":4,
"rounds":1,"deployment":3,"deploymentEnded":true,"intent":{"op":"deploy","task":"T1","at":"2026-01-02T03:04:05Z"},
"allocatedBy":"T1","class":"transient","reason":"slow","frozen":true,"frozenReason":"operator","stageStarted":"2026-01-02T03:04:06Z",
"budgetFrom":"2026-01-02T03:04:07Z","nextAt":"2026-01-02T03:04:08Z","updated":"2026-01-02T03:04:09Z",
"history":[{"at":"2026-01-02T03:04:05Z","task":"T1","from":"pending","to":"deploy","message":"go"}]}`
	oldTask = `{"id":"T1","action":"deploy_nodes","nodeFilter":{"type":"union","sets":[{"names":["r01-cmp01"],"labels":{"Rack":"r01"}}]},
"designRevision":"abc123","requester":"cli:ops","status":"running","nodes":["r01-cmp01"],"message":"m",
"created":"2026-01-02T03:04:05Z","started":"2026-01-02T03:04:06Z","finished":"2026-01-02T03:04:07Z","cancel":true,
"correlationId":"req-1","options":{"erase":"quick","delete":true}}`
	oldResult = `{"node":"r01-cmp01","stage":"deploy","outcome":"failed","attempts":2,"class":"permanent","reason":"r",
"started":"2026-01-02T03:04:05Z","finished":"2026-01-02T03:04:06Z"}`
	oldEvent = `{"seq":0,"time":"2026-01-02T03:04:05Z","task":"T1","node":"r01-cmp01","stage":"deploy","level":"info",
"kind":"transition","message":"m","type":"node.onboarding.started","correlationId":"req-1"}`
	oldDrift = `{"node":"r01-cmp01","kind":"power","machineId":"m-7","stage":"deploy","expected":"on","observed":"off",
"policy":"report","firstSeen":"2026-01-02T03:04:05Z","lastSeen":"2026-01-02T03:04:06Z","note":"n"}`
)

func at(sec int) time.Time { return time.Date(2026, 1, 2, 3, 4, sec, 0, time.UTC) }

// TestReadsPreviousReleaseRecords: a state database written with the
// camelCase names reads with every field intact.
func TestReadsPreviousReleaseRecords(t *testing.T) {
	ctx := t.Context()
	s := memory.New()
	if _, err := s.Write(ctx, statestore.Put(collNodes, "r01-cmp01", []byte(oldNode)),
		statestore.Put(collTasks, "T1", []byte(oldTask)),
		statestore.Put(collTaskNodes, "T1/r01-cmp01", []byte(oldResult)),
		statestore.Put(collDrift, "r01-cmp01/power", []byte(oldDrift)),
		statestore.Append(logEvents, []byte(oldEvent))); err != nil {
		t.Fatal(err)
	}
	r := records{s: s}

	n, ok, err := r.node(ctx, "r01-cmp01")
	wantNode := record.NodeRecord{Name: "r01-cmp01", MachineID: "m-7", Observed: "Deployed", Lifecycle: "deployed", Task: "T2",
		LastTask: "T1", Action: "deploy_nodes", Stage: "deploy", Step: 2, Outcome: "running", Attempts: 1, Total: 4,
		Rounds: 1, Deployment: 3, DeploymentEnded: true, Intent: &record.Intent{Op: "deploy", Task: "T1", At: at(5)},
		AllocatedBy: "T1", Class: "transient", Reason: "slow", Frozen: true, FrozenWhy: "operator", StageStart: at(6),
		BudgetFrom: at(7), NextAt: at(8), Updated: at(9),
		History: []record.Transition{{At: at(5), Task: "T1", From: "pending", To: "deploy", Message: "go"}}}
	if err != nil || !ok || !reflect.DeepEqual(n, wantNode) {
		t.Errorf("node record: %v %v\n got %+v\nwant %+v", ok, err, n, wantNode)
	}

	tasks, err := r.tasks(ctx)
	wantTask := record.Task{ID: "T1", Action: "deploy_nodes", Revision: "abc123", Requester: "cli:ops", Status: "running",
		Filter: record.Filter{Type: "union", Sets: []design.NodeFilter{{Names: []string{"r01-cmp01"}, Labels: map[string]string{"Rack": "r01"}}}},
		Nodes:  []string{"r01-cmp01"}, Message: "m", Created: at(5), Started: at(6), Finished: at(7), Cancel: true,
		Correlation: "req-1", Options: &record.TaskOptions{Erase: "quick", Delete: true}}
	if err != nil || len(tasks) != 1 || !reflect.DeepEqual(tasks[0], wantTask) {
		t.Errorf("task: %v\n got %+v\nwant %+v", err, tasks, wantTask)
	}

	res, err := r.results(ctx, "T1")
	wantRes := record.NodeResult{Node: "r01-cmp01", Stage: "deploy", Outcome: "failed", Attempts: 2, Class: "permanent", Reason: "r",
		Started: at(5), Finished: at(6)}
	if err != nil || len(res) != 1 || res[0] != wantRes {
		t.Errorf("task node result: %v %+v", err, res)
	}

	evs, err := r.events(ctx, 0, 0, "", "")
	if err != nil || len(evs) != 1 || evs[0].Correlation != "req-1" || evs[0].Type != record.EventOnboardingStarted || evs[0].Seq != 1 {
		t.Errorf("event: %v %+v", err, evs)
	}

	drift, err := r.drift(ctx)
	wantDrift := record.DriftRecord{Node: "r01-cmp01", Kind: "power", MachineID: "m-7", Stage: "deploy", Expected: "on",
		Observed: "off", Policy: "report", FirstSeen: at(5), LastSeen: at(6), Note: "n"}
	if err != nil || drift["r01-cmp01/power"] != wantDrift {
		t.Errorf("drift: %v %+v", err, drift)
	}

	// Written back by this release, the records carry the new names and
	// read the same.
	var b batch
	b.node(n)
	if err := r.write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	raw, _ := s.Get(ctx, collNodes, "r01-cmp01")
	if again, _, _ := r.node(ctx, "r01-cmp01"); !reflect.DeepEqual(again, wantNode) || !strings.Contains(string(raw), `"machine_id":"m-7"`) || !strings.Contains(string(raw), `"total_attempts":4`) {
		t.Errorf("rewritten record: %s", raw)
	}
}
