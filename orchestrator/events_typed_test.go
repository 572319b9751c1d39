package orchestrator_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// typedByNode returns each node's typed events of the task, in order.
func typedByNode(t *testing.T, e *orchestrator.Engine, task string) map[string][]string {
	t.Helper()
	evs, err := e.Events(t.Context(), 0, 0, task, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, ev := range evs {
		if ev.Type != "" && ev.Node != "" { // a node's (image.sync events are a Site's)
			out[ev.Node] = append(out[ev.Node], ev.Type)
		}
	}
	return out
}

// TestOnboardingEvents: a deploy of four nodes, one whose deployments
// always fail and one frozen for manual intervention, announces each
// node's onboarding once and its end by outcome; every event of the task
// carries the request's correlation ID.
func TestOnboardingEvents(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	names := d.NodeNames()
	good1, good2, bad, frozen := names[0], names[1], names[2], names[3]
	_, e := prepared(t, d, &maas.Faults{Machines: map[string]maas.MachineFaults{bad: {FailDeploy: 9}}})
	if _, err := e.MarkManual(t.Context(), frozen, "cabling", "test"); err != nil {
		t.Fatal(err)
	}
	const corr = "req-0123:abc_D.e"
	task, _ := run(t, e, record.Request{Action: record.ActionDeployNodes, Requester: "test", Correlation: corr,
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{good1, good2, bad, frozen}}}}}, record.TaskPartiallySucceeded)
	if task.Correlation != corr {
		t.Errorf("task correlation %q, want %q", task.Correlation, corr)
	}
	want := map[string][]string{
		good1:  {record.EventOnboardingStarted, record.EventOnboardingCompleted},
		good2:  {record.EventOnboardingStarted, record.EventOnboardingCompleted},
		bad:    {record.EventOnboardingStarted, record.EventOnboardingFailed},
		frozen: {record.EventOnboardingStarted, record.EventOnboardingManual},
	}
	got := typedByNode(t, e, task.ID)
	for n, w := range want {
		if !slices.Equal(got[n], w) {
			t.Errorf("%s: typed events %v, want %v", n, got[n], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("typed events for %d nodes, want %d: %v", len(got), len(want), got)
	}
	evs, err := e.Events(t.Context(), 0, 0, task.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Correlation != corr {
			t.Errorf("event %d (%s, %s): correlation %q, want %q", ev.Seq, ev.Kind, ev.Message, ev.Correlation, corr)
		}
	}

	// A verb continues the task's workflow: its events keep the
	// correlation ID of the request that created the task, the node's
	// start is not announced again, its new end is.
	applyVerb(t, e, task.ID, record.VerbRetry, record.TaskPartiallySucceeded)
	if got := typedByNode(t, e, task.ID)[bad]; !slices.Equal(got, []string{record.EventOnboardingStarted, record.EventOnboardingFailed, record.EventOnboardingFailed}) {
		t.Errorf("%s after a retry: typed events %v", bad, got)
	}
	evs, err = e.Events(t.Context(), 0, 0, task.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Correlation != corr {
			t.Errorf("event %d (%s, %s) after the retry: correlation %q, want %q", ev.Seq, ev.Kind, ev.Message, ev.Correlation, corr)
		}
	}

	// The other actions' workflows are no onboarding: their events stay
	// untyped.
	verify, _ := run(t, e, record.Request{Action: record.ActionVerifyNodes, Requester: "test",
		Filter: record.Filter{Sets: []design.NodeFilter{{Names: []string{good1}}}}}, record.TaskSucceeded)
	if got := typedByNode(t, e, verify.ID); len(got) != 0 {
		t.Errorf("verify_nodes wrote typed events: %v", got)
	}
}

// TestOnboardingEventsOnceAcrossRestart: an engine stopped while the
// nodes onboard and started again on the same store finishes the task;
// each node's onboarding is announced once and ended once.
func TestOnboardingEventsOnceAcrossRestart(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	store := memory.New()
	env := startEnv(t, d, store, nil, nil)
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite, Requester: "test"}, record.TaskSucceeded)
	task, err := e.Submit(t.Context(), record.Request{Action: record.ActionDeployNodes, Requester: "test", Correlation: "req-restart"})
	if err != nil {
		t.Fatal(err)
	}
	// Stop once every node has started (and before the task ends).
	deadline := time.Now().Add(time.Minute)
	for {
		got := typedByNode(t, e, task.ID)
		if len(got) == len(d.Nodes) || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.Close()
	if st, _, err := e.Task(t.Context(), task.ID); err == nil {
		t.Logf("stopped with the task %s", st.Status)
	}
	e2 := engine(t, env)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	done, err := e2.Wait(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != record.TaskSucceeded {
		t.Fatalf("task %s: %s (%s)", task.ID, done.Status, done.Message)
	}
	got := typedByNode(t, e2, task.ID)
	for _, n := range d.NodeNames() {
		if w := []string{record.EventOnboardingStarted, record.EventOnboardingCompleted}; !slices.Equal(got[n], w) {
			t.Errorf("%s: typed events %v, want %v", n, got[n], w)
		}
	}
	evs, err := e2.Events(t.Context(), 0, 0, task.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Type != "" && ev.Correlation != "req-restart" {
			t.Errorf("event %d %s: correlation %q after the restart", ev.Seq, ev.Type, ev.Correlation)
		}
	}
}

// TestCorrelationBounded: a correlation ID is bounded and of a safe
// charset.
func TestCorrelationBounded(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	env := startEnv(t, d, nil, nil, nil)
	e := engine(t, env)
	long := make([]byte, record.MaxCorrelationLen+1)
	for i := range long {
		long[i] = 'a'
	}
	for _, c := range []string{string(long), "a b", "x\ny", "ü"} {
		if _, err := e.Submit(t.Context(), record.Request{Action: record.ActionVerifySite, Correlation: c}); err == nil {
			t.Errorf("correlation %q accepted", c)
		}
	}
}
