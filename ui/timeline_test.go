package ui_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/ui"
)

// TestTaskTimelineView: an operator starts the example site's deploy
// from the tasks view, opens the task from its row and watches the plot
// of its nodes per stage while it runs, until it ends. The numbers the
// page shows are checked against the lab's own: the nodes shown deployed
// at the last point are the lab's machines MAAS has Deployed, the last
// point counts every node of the task once, and the deploy stage's median
// wait on the provisioner is at least the lab's median deploy phase (the
// time each machine spent deploying, which no orchestrator can shorten).
// The view passes axe-core; its screenshot goes to SLIPWAY_SCREENSHOTS.
func TestTaskTimelineView(t *testing.T) {
	t.Parallel()
	srv := apitest.Start(t, apitest.WithSeed(4), apitest.WithConfig(func(c *api.Config) { c.UI = ui.Handler() }))
	b := newBrowser(t)
	names := designtest.Example(t).NodeNames()
	b.signIn(t, srv.URL, srv.Token[api.RoleOperator], len(names))
	b.run(t, "prepare the site", 30*time.Second, startTask(srv.URL, "prepare_site"))
	waitTasksDone(t, b)
	b.run(t, "start the deploy", 30*time.Second, startTask(srv.URL, "deploy_nodes"))
	id := ""
	for deadline := time.Now().Add(30 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		id = eval[string](t, b, `fetch('/api/v1/tasks?limit=1&action=deploy_nodes', {headers: {Authorization: 'Bearer ' + sessionStorage.getItem('slipway.token')}})
			.then(r => r.json()).then(p => p.items.length ? p.items[0].id : '')`) // the page's POST may still be on its way
	}
	if id == "" {
		t.Fatal("no deploy task 30 s after the page started one")
	}
	b.run(t, "open the task from its row", 30*time.Second,
		chromedp.Navigate(srv.URL+"/ui/#/tasks"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#tasks a[href="#/tasks/%s"]`, id))),
		chromedp.WaitVisible(chromedp.ID("timeline-h")))
	b.run(t, "the plot follows the task to its end", 3*time.Minute,
		poll(`window.slipway.timeline && window.slipway.timeline.status === 'succeeded' && window.slipway.timeline.complete &&
			!!document.querySelector('#stage-times tr[data-stage="deploy"]') && !!document.querySelector('svg.chart polygon[data-series="deployed"]')`, 3*time.Minute))

	last := eval[map[string]int](t, b, `Object.fromEntries([...document.querySelectorAll('#timeline-table tr[data-last] td')].map(td => [td.dataset.series, Number(td.textContent)]))`)
	deployed, total := 0, 0
	for _, n := range last {
		total += n
	}
	var waits []time.Duration
	for _, m := range srv.Env.Lab.MAAS.Machines() {
		if slices.Contains(names, m.Hostname) && m.Status == "Deployed" {
			deployed++
		}
	}
	for _, name := range names {
		for _, p := range srv.Env.Lab.Machine(name).Timeline().Phases {
			if p.Name == maas.PhaseDeploy {
				waits = append(waits, p.Nominal)
			}
		}
	}
	if last["deployed"] != deployed || deployed != len(names) {
		t.Errorf("the last point shows %d deployed; the lab has %d of the %d machines Deployed", last["deployed"], deployed, len(names))
	}
	if total != len(names) {
		t.Errorf("the last point counts %d nodes (%v), the task has %d", total, last, len(names))
	}
	slices.Sort(waits)
	p50, err := strconv.ParseFloat(eval[string](t, b, `document.querySelector('#stage-times tr[data-stage="deploy"] .hw-p').dataset.p50`), 64)
	if err != nil || len(waits) != len(names) {
		t.Fatalf("deploy wait shown %v (%v); %d deploy phases in the lab", p50, err, len(waits))
	}
	if floor := waits[(len(waits)-1)/2]; time.Duration(p50*float64(time.Second)) < floor.Truncate(time.Millisecond) {
		t.Errorf("the page shows the deploy stage's median wait on the provisioner %.3f s, under the lab's median deploy phase %s", p50, floor)
	}
	if v := eval[string](t, b, `document.querySelector('#timeline-verdict').textContent`); v == "" || v == "No stage has ended yet." {
		t.Errorf("the verdict says %q", v)
	}
	shot(t, b, "dashboard-task.png")
	checkAccessibility(t, b, "the task view")
}
