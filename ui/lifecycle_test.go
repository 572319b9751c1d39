package ui_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
	"github.com/slipway-dev/slipway/ui"
)

// seeded is a control API over a design whose node records a test
// writes itself (an engine that is not started answers the reads).
type seeded struct {
	URL   string
	Token string // a viewer's
	Store statestore.Store
	Names []string
}

// serveSeeded serves a generated design of n nodes with no record yet.
func serveSeeded(t *testing.T, n int) seeded {
	t.Helper()
	d, err := labrun.Generated(t.Context(), t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	putRevision(t, st, d)
	e, err := orchestrator.New(orchestrator.Config{Store: st}) // not started: it answers reads
	if err != nil {
		t.Fatal(err)
	}
	tokens := auth.NewStore(st)
	tok, _, err := tokens.Create(t.Context(), auth.RoleViewer, "viewer")
	if err != nil {
		t.Fatal(err)
	}
	authenticate, _ := api.TokenStore(tokens)
	srv, err := api.New(api.Config{Engine: e, Store: st, Authenticate: authenticate, UI: ui.Handler(), Log: zerolog.Nop(), EventPoll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return seeded{URL: ts.URL, Token: tok, Store: st, Names: d.NodeNames()}
}

func putRevision(t *testing.T, st statestore.Store, d *design.Design) {
	t.Helper()
	raw, id, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PutRevision(t.Context(), statestore.Revision{ID: id, Design: raw, Counts: d.Counts()}); err != nil {
		t.Fatal(err)
	}
}

// tileCase is a node record and what its tile must show: the lifecycle
// colour and the last task's mark ("" for none).
type tileCase struct {
	rec       record.NodeRecord
	lifecycle string
	mark      string
	label     []string // in the tile's accessible name
}

func lifecycleCases() []tileCase {
	deployedThen := func(to record.Stage) []record.Transition {
		return []record.Transition{{From: record.StageBootstrap, To: record.StageDeployed}, {From: record.StageDeployed, To: to}}
	}
	return []tileCase{
		{rec: record.NodeRecord{Lifecycle: "deployed", Action: record.ActionVerifyNodes, Stage: record.StageVerified, Outcome: record.OutcomeSucceeded,
			History: deployedThen(record.StageVerified)}, lifecycle: "deployed", label: []string{"deployed", "last task verify_nodes succeeded"}},
		// A record written before the lifecycle was kept: the API derives it.
		{rec: record.NodeRecord{Action: record.ActionVerifyNodes, Stage: record.StageVerified, Outcome: record.OutcomeSucceeded,
			History: deployedThen(record.StageVerified)}, lifecycle: "deployed", label: []string{"deployed", "last task verify_nodes succeeded"}},
		{rec: record.NodeRecord{Lifecycle: "deployed", Action: record.ActionPowerCycle, Stage: record.StagePower, Outcome: record.OutcomeFailed,
			Reason: "the BMC did not answer", History: deployedThen(record.StagePower)}, lifecycle: "deployed", mark: "failed",
			label: []string{"deployed", "last task power_cycle failed", "the BMC did not answer"}},
		{rec: record.NodeRecord{Lifecycle: "failed", Action: record.ActionDeployNodes, Stage: record.StageDeploy, Outcome: record.OutcomeFailed,
			Reason: "Failed deployment"}, lifecycle: "failed", mark: "failed", label: []string{"failed", "last task deploy_nodes failed"}},
		{rec: record.NodeRecord{Lifecycle: "failed", Action: record.ActionDeployNodes, Stage: record.StageCommission, Outcome: record.OutcomeManual},
			lifecycle: "failed", mark: "manual-intervention", label: []string{"failed", "last task deploy_nodes manual-intervention"}},
		{rec: record.NodeRecord{Lifecycle: "deploying", Action: record.ActionDeployNodes, Stage: record.StageCommission, Outcome: record.OutcomeRunning},
			lifecycle: "deploying", mark: "running", label: []string{"deploying", "last task deploy_nodes running"}},
		{rec: record.NodeRecord{Lifecycle: "cancelled", Action: record.ActionDeployNodes, Stage: record.StageDeploy, Outcome: record.OutcomeCancelled},
			lifecycle: "cancelled", mark: "cancelled", label: []string{"cancelled", "last task deploy_nodes cancelled"}},
		{rec: record.NodeRecord{Lifecycle: "released", Action: record.ActionDestroyNodes, Stage: record.StageReleased, Outcome: record.OutcomeSucceeded},
			lifecycle: "released", label: []string{"released", "last task destroy_nodes succeeded"}},
		{rec: record.NodeRecord{Lifecycle: "ready", Action: record.ActionPrepareNodes, Stage: record.StageReady, Outcome: record.OutcomeSucceeded},
			lifecycle: "ready", label: []string{"ready", "last task prepare_nodes succeeded"}},
		{lifecycle: "new", label: []string{"new", "no task yet"}}, // no record
		// An old record whose history no longer reaches a lifecycle stage.
		{rec: record.NodeRecord{MachineID: "m-old", Action: record.ActionVerifyNodes, Stage: record.StageVerified, Outcome: record.OutcomeSucceeded},
			lifecycle: "unknown", label: []string{"unknown", "last task verify_nodes succeeded"}},
	}
}

// TestSiteViewColoursByLifecycle: a node's tile is coloured by its
// lifecycle state, not by its last task: a deployed node that was then
// verified is deployed (not "preparing"), a node whose deployment failed
// is failed, a deployed node whose power cycle failed is deployed with a
// "failed" mark. Each tile's computed colour and mark are the legend's
// for its lifecycle and outcome (the legend's colours are distinct), its
// accessible name says both in words, the counts are per lifecycle, the
// lifecycle filter finds them, and the node view says the same. Both
// views pass axe-core.
func TestSiteViewColoursByLifecycle(t *testing.T) {
	t.Parallel()
	cases := lifecycleCases()
	s := serveSeeded(t, len(cases))
	var ops []statestore.Op
	for i, c := range cases {
		if c.rec.Action == "" {
			continue
		}
		c.rec.Name, c.rec.LastTask, c.rec.Updated = s.Names[i], fmt.Sprintf("task-%d", i), time.Now().UTC()
		raw, err := json.Marshal(c.rec)
		if err != nil {
			t.Fatal(err)
		}
		ops = append(ops, statestore.Put("nodes", c.rec.Name, raw))
	}
	if _, err := s.Store.Write(t.Context(), ops...); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	b.signIn(t, s.URL, s.Token, len(cases))
	checkLegend(t, b)
	for i, c := range cases {
		checkTile(t, b, s.Names[i], c)
	}
	counts := eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll('#counts li[data-lifecycle]')].map(l => [l.dataset.lifecycle, l.textContent]))`)
	want := map[string]string{"deployed": "deployed 3", "failed": "failed 2", "deploying": "deploying 1", "cancelled": "cancelled 1", "released": "released 1", "ready": "ready 1", "new": "new 1", "unknown": "unknown 1"}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("counts per lifecycle %v, want %v", counts, want)
	}
	b.run(t, "filter by lifecycle", 10*time.Second, chromedp.SendKeys(chromedp.ID("filter"), "lifecycle:deployed"),
		poll(`[...document.querySelectorAll('#sites .tile')].filter(t => !t.hidden).length === 3`, 5*time.Second))
	checkAccessibility(t, b, "the site view coloured by lifecycle")

	// Live: a power cycle starts on the deployed, verified node.
	live := cases[0].rec
	live.Name, live.LastTask, live.Action, live.Stage, live.Outcome = s.Names[0], "task-live", record.ActionPowerCycle, record.StagePower, record.OutcomeRunning
	rec, _ := json.Marshal(live)
	ev, _ := json.Marshal(record.Event{Time: time.Now().UTC(), Task: "task-live", Node: live.Name, Stage: live.Stage, Level: "info", Kind: "transition", Message: "power_cycle started"})
	if _, err := s.Store.Write(t.Context(), statestore.Put("nodes", live.Name, rec), statestore.Append("events", ev)); err != nil {
		t.Fatal(err)
	}
	b.run(t, "the tile follows the event stream", 20*time.Second, poll(fmt.Sprintf(`(() => { const t = document.querySelector('#sites .tile[data-n=%q]');
		return t.className === 'tile lc-deployed lt-running' && t.getAttribute('aria-label') === '%s: deployed; last task power_cycle running at stage power'; })()`, live.Name, live.Name), 15*time.Second))

	b.run(t, "the node view of the deployed node whose power cycle failed", 20*time.Second,
		chromedp.Navigate(s.URL+"/ui/#/node/"+s.Names[2]), chromedp.WaitVisible(chromedp.Search(`//h2[text()="Events"]`)))
	kv := eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll('dl.kv dt')].map(e => [e.textContent, e.nextElementSibling.textContent]))`)
	if kv["lifecycle"] != "deployed" || kv["last task"] != "task-2 (power_cycle) failed at stage power" {
		t.Errorf("the node view shows lifecycle %q, last task %q (want deployed; task-2 (power_cycle) failed at stage power)", kv["lifecycle"], kv["last task"])
	}
	badge := eval[string](t, b, `(() => { const s = document.querySelector('#node-state .swatch'); return s ? s.className + ' | ' + s.parentElement.textContent : ''; })()`)
	if !strings.Contains(badge, "lc-deployed") || !strings.Contains(badge, "lt-failed") || !strings.Contains(badge, "deployed") {
		t.Errorf("the node view's heading mark: %q (want the deployed colour with the failed mark, and the word)", badge)
	}
	checkAccessibility(t, b, "the node view with a lifecycle mark")
}

// checkLegend: the legend names every lifecycle state and last-task
// mark in visible text, and no two lifecycle colours are the same.
func checkLegend(t *testing.T, b *browser) {
	t.Helper()
	got := eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll('.legend [data-lifecycle]')].map(l =>
		[l.dataset.lifecycle, l.textContent + ' | ' + getComputedStyle(l.querySelector('.swatch')).backgroundColor + ' | ' + (l.closest('[aria-hidden="true"]') ? 'hidden' : 'shown')]))`)
	seen := map[string]string{}
	for _, lc := range []string{"new", "preparing", "ready", "deploying", "deployed", "releasing", "released", "failed", "cancelled", "deleted", "unknown"} {
		parts := strings.Split(got[lc], " | ")
		if len(parts) != 3 || parts[0] != lc || parts[2] != "shown" {
			t.Errorf("legend entry for %s: %q (want its name, shown to everyone)", lc, got[lc])
			continue
		}
		if other, dup := seen[parts[1]]; dup {
			t.Errorf("lifecycles %s and %s have the same colour %s", other, lc, parts[1])
		}
		seen[parts[1]] = lc
	}
	marks := eval[string](t, b, `[...document.querySelectorAll('.legend [data-mark]')].map(l => l.dataset.mark).join()`)
	if marks != "running,failed,cancelled,manual-intervention" {
		t.Errorf("legend marks %q", marks)
	}
}

// checkTile: the node's tile has its lifecycle's colour and its last
// task's mark (the legend's), and says both in its accessible name.
func checkTile(t *testing.T, b *browser, name string, c tileCase) {
	t.Helper()
	js := fmt.Sprintf(`(() => {
		const t = document.querySelector('#sites .tile[data-n=%q]'), ts = getComputedStyle(t);
		const se = document.querySelector('.legend [data-lifecycle=%q] .swatch'), sw = se ? getComputedStyle(se) : {backgroundColor: 'no legend entry'};
		const mk = document.querySelector('.legend [data-mark=%q] .swatch');
		const ms = mk ? getComputedStyle(mk) : {backgroundImage: 'none', boxShadow: 'none'};
		return [t.className, t.getAttribute('aria-label'), String(ts.backgroundColor === sw.backgroundColor),
			String(ts.backgroundImage === ms.backgroundImage && ts.boxShadow === ms.boxShadow), ts.backgroundColor, ts.backgroundImage + ' ' + ts.boxShadow];
	})()`, name, c.lifecycle, c.mark)
	got := eval[[]string](t, b, js)
	if !strings.Contains(" "+got[0]+" ", " lc-"+c.lifecycle+" ") {
		t.Errorf("%s: tile classes %q, want lifecycle %s", name, got[0], c.lifecycle)
	}
	if got[2] != "true" {
		t.Errorf("%s: tile colour %s is not the legend's %s colour", name, got[4], c.lifecycle)
	}
	if got[3] != "true" {
		t.Errorf("%s: tile mark %q is not the legend's %q mark", name, got[5], c.mark)
	}
	if !strings.HasPrefix(got[1], name+": "+c.lifecycle) {
		t.Errorf("%s: accessible name %q does not start with its lifecycle %s", name, got[1], c.lifecycle)
	}
	for _, w := range c.label {
		if !strings.Contains(got[1], w) {
			t.Errorf("%s: accessible name %q lacks %q", name, got[1], w)
		}
	}
	if c.lifecycle != "preparing" && strings.Contains(got[1], "preparing") {
		t.Errorf("%s: accessible name %q says preparing", name, got[1])
	}
}
