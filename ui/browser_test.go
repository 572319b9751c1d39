package ui_test

// The dashboard in a real browser: Debian's chromium, driven through the
// Chrome DevTools protocol (chromedp), against the control API over the
// virtual lab.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/ui"
)

// browser is a headless chromium tab; urls collects every URL the page
// requested.
type browser struct {
	ctx  context.Context
	mu   sync.Mutex
	urls []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	bin := testtool.Need(t, "chromium", "chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.WindowSize(1280, 900))
	actx, cancel := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	b := &browser{ctx: ctx}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			b.mu.Lock()
			b.urls = append(b.urls, e.Request.URL)
			b.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	return b
}

// run runs actions with a deadline, failing the test with what.
func (b *browser) run(t *testing.T, what string, within time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, within)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		body, _ := chromedp.Run(b.ctx, chromedp.Evaluate[string]("document.body.innerText"))
		t.Fatalf("%s: %v\npage: %.2000s", what, err, body)
	}
}

// eval evaluates a JavaScript expression in the page (awaiting a promise).
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %.80s: %v", expr, err)
	}
	return v
}

// poll waits until a JavaScript expression is true in the page.
func poll(expr string, within time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(within), chromedp.WithPollingInterval(200*time.Millisecond))
}

// signIn signs in with tok and waits for the site view's tiles: 20 s,
// and a second more for every 250 tiles (10,000 tiles load in about 4 s on
// a quiet machine, but CI runs this under the race detector beside every
// other package; this is a deadline, not a performance bound).
func (b *browser) signIn(t *testing.T, base, tok string, tiles int) {
	within := 20*time.Second + time.Duration(tiles/250)*time.Second
	b.run(t, "sign in", within+10*time.Second,
		chromedp.Navigate(base+"/ui/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), tok),
		chromedp.Click(chromedp.Search(`//form[@id="signin"]//button`)),
		poll(fmt.Sprintf("document.querySelectorAll('#sites .tile').length === %d", tiles), within))
}

// startTask starts action on every node from the tasks view.
func startTask(base, action string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Navigate(base+"/ui/#/tasks"), chromedp.WaitVisible(chromedp.ID("task-action")),
		chromedp.SetValue(chromedp.ID("task-action"), action), confirmClick(`//button[text()="Start"]`))
}

// signOut signs out and waits for the sign-in form.
func signOut() chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("token")))
}

// confirmClick clicks a button (an XPath) and confirms the dialog.
func confirmClick(xpath string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(chromedp.Click(chromedp.Search(xpath)), chromedp.WaitVisible(chromedp.ID("confirm-ok")), chromedp.Click(chromedp.ID("confirm-ok")))
}

// TestDashboard: an operator signs in, starts the example site's deploy
// from the tasks view and watches every tile reach deployed or failed
// over the event stream (one node fails its deployment twice: the lab's
// faults); in the node view they retry its task, and the node deploys; a
// verify_nodes task then leaves every tile deployed (verifyStaysDeployed). A
// viewer sees no action and is refused (403) when calling one anyway. No
// URL the page requested holds a token. Screenshots of the site and node
// views go to SLIPWAY_SCREENSHOTS (make screenshots: docs/images).
func TestDashboard(t *testing.T) {
	t.Parallel()
	d := designtest.Example(t)
	names := d.NodeNames()
	failing := names[len(names)-1]
	f := &maas.Faults{Machines: map[string]maas.MachineFaults{failing: {FailDeploy: 2}}}
	srv := apitest.Start(t, apitest.WithSeed(3), apitest.WithFaults(f), apitest.WithConfig(func(c *api.Config) { c.UI = ui.Handler() }))
	b := newBrowser(t)
	op, viewer := srv.Token[api.RoleOperator], srv.Token[api.RoleViewer]
	b.signIn(t, srv.URL, op, len(names))

	b.run(t, "prepare the site from the tasks view", 30*time.Second, startTask(srv.URL, "prepare_site"))
	waitTasksDone(t, b)
	b.run(t, "start the deploy from the tasks view", 30*time.Second,
		startTask(srv.URL, "deploy_nodes"),
		chromedp.Navigate(srv.URL+"/ui/#/site"),
		poll(fmt.Sprintf("document.querySelectorAll('#sites .tile').length === %d", len(names)), 20*time.Second))
	b.run(t, "watch the tiles over the event stream", 3*time.Minute,
		poll(fmt.Sprintf(`document.querySelectorAll('#sites .tile.lc-deployed').length === %d && document.querySelectorAll('#sites .tile.lc-failed.lt-failed').length === 1`, len(names)-1), 3*time.Minute))
	shot(t, b, "dashboard-site.png")
	checkAccessibility(t, b, "the site view")

	b.run(t, "retry the failed node's task from its node view", time.Minute,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#sites .tile[data-n=%q]`, failing))),
		chromedp.WaitVisible(chromedp.Search(`//h1[text()="Node `+failing+`"]`)),
		confirmClick(`//button[text()="retry"]`),
		chromedp.Navigate(srv.URL+"/ui/#/site"),
		poll(fmt.Sprintf(`document.querySelectorAll('#sites .tile.lc-deployed').length === %d`, len(names)), time.Minute))
	verifyStaysDeployed(t, b, srv, names)
	b.run(t, "open the node again", 30*time.Second,
		chromedp.Navigate(srv.URL+"/ui/#/node/"+failing),
		chromedp.WaitVisible(chromedp.Search(`//h2[text()="Events"]`)))
	shot(t, b, "dashboard-node.png")
	checkAccessibility(t, b, "the node view")
	shown := eval[string](t, b, `[...document.querySelectorAll('dl.kv dt')].filter(e => e.textContent.startsWith('power')).map(e => e.nextElementSibling.textContent).join()`)
	for _, m := range srv.Env.Lab.MAAS.Machines() {
		if m.Hostname == failing && (shown != m.Power || shown != "on") {
			t.Errorf("the node view shows power %q; the lab's machine is %q", shown, m.Power)
		}
	}
	b.run(t, "the tasks view", 20*time.Second, chromedp.Navigate(srv.URL+"/ui/#/tasks"), chromedp.WaitVisible(chromedp.ID("task-action")))
	checkAccessibility(t, b, "the tasks view")

	b.run(t, "sign out", 10*time.Second, signOut())
	b.signIn(t, srv.URL, viewer, len(names))
	b.run(t, "a viewer's node view", 30*time.Second,
		chromedp.Navigate(srv.URL+"/ui/#/node/"+failing),
		chromedp.WaitVisible(chromedp.Search(`//h2[text()="Events"]`)))
	buttons := eval[int](t, b, `document.querySelectorAll('.verbs button').length`)
	status := eval[int](t, b, `fetch('/api/v1/nodes/`+failing+`/mark-manual-intervention', {method: 'POST',
			headers: {Authorization: 'Bearer ' + sessionStorage.getItem('slipway.token'), 'Content-Type': 'application/json'}, body: '{}'}).then(r => r.status)`)
	if buttons != 0 {
		t.Errorf("a viewer's node view shows %d action buttons", buttons)
	}
	if status != 403 {
		t.Errorf("a viewer calling a verb from the page: %d, want 403", status)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, u := range b.urls {
		for _, tok := range srv.Token {
			if strings.Contains(u, tok) {
				t.Errorf("the page requested a URL holding a token: %s", u)
			}
		}
	}
	if len(b.urls) < 10 {
		t.Errorf("only %d requests seen: the check above saw nothing", len(b.urls))
	}
}

// verifyStaysDeployed: a verify_nodes task over the deployed site,
// started from the tasks view, leaves every tile in the deployed colour
// with no mark and says so in its name (the tile showed the verify's
// stage, in the "preparing" colour, before), as every machine in the lab
// is still Deployed.
func verifyStaysDeployed(t *testing.T, b *browser, srv *apitest.Server, names []string) {
	t.Helper()
	n := len(names)
	b.run(t, "verify the deployed site from the tasks view", 30*time.Second, startTask(srv.URL, "verify_nodes"))
	waitTasksDone(t, b)
	b.run(t, "every tile still deployed, its last task the verify", time.Minute, chromedp.Navigate(srv.URL+"/ui/#/site"),
		poll(fmt.Sprintf(`[...document.querySelectorAll('#sites .tile')].filter(t => t.className === 'tile lc-deployed' &&
			/^[^:]+: deployed; last task verify_nodes succeeded/.test(t.getAttribute('aria-label'))).length === %d`, n), 30*time.Second))
	deployed := eval[string](t, b, `getComputedStyle(document.querySelector('.legend [data-lifecycle=deployed] .swatch')).backgroundColor`)
	if got := eval[int](t, b, `[...document.querySelectorAll('#sites .tile')].filter(t => getComputedStyle(t).backgroundColor === `+
		fmt.Sprintf("%q", deployed)+`).length`); got != n {
		t.Errorf("%d of %d tiles have the legend's deployed colour %s after the verify", got, n, deployed)
	}
	status := map[string]string{}
	for _, m := range srv.Env.Lab.MAAS.Machines() {
		status[m.Hostname] = m.Status
	}
	for _, name := range names {
		if status[name] != "Deployed" {
			t.Errorf("after the verify, the lab's machine of %s is %q, not Deployed", name, status[name])
		}
	}
}

// shot writes a screenshot of the page to SLIPWAY_SCREENSHOTS/name (the
// test's directory when unset).
func shot(t *testing.T, b *browser, name string) {
	dir := os.Getenv("SLIPWAY_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitTasksDone waits until the page's API calls say no task is queued or
// running.
func waitTasksDone(t *testing.T, b *browser) {
	t.Helper()
	expr := `fetch('/api/v1/tasks?limit=50', {headers: {Authorization: 'Bearer ' + sessionStorage.getItem('slipway.token')}})
		.then(r => r.json()).then(p => p.items.length > 0 && p.items.every(x => x.status !== 'queued' && x.status !== 'running'))`
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if eval[bool](t, b, expr) {
			return
		}
	}
	t.Fatal("tasks still running after a minute")
}

// checkAccessibility runs axe-core (SLIPWAY_AXE: its axe.min.js, which
// .ci/run installs from npm) on the page: no serious or critical
// violation of WCAG 2 A and AA. Without it the check fails in CI and is
// skipped elsewhere.
func checkAccessibility(t *testing.T, b *browser, what string) {
	t.Helper()
	src, err := os.ReadFile(os.Getenv("SLIPWAY_AXE"))
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("axe-core: SLIPWAY_AXE=%q: %v (.ci/run installs it from npm)", os.Getenv("SLIPWAY_AXE"), err)
		}
		t.Logf("axe-core not found (SLIPWAY_AXE=%q): accessibility of %s not checked", os.Getenv("SLIPWAY_AXE"), what)
		return
	}
	eval[any](t, b, string(src)+";0")
	found := eval[[]string](t, b, `axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}}).then(r =>
		r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => v.id + ' (' + v.impact + '): ' + v.help + ' — ' + v.nodes.length + ' elements, e.g. ' + v.nodes[0].target.join(' ')))`)
	for _, v := range found {
		t.Errorf("axe-core, %s: %s", what, v)
	}
}

// TestDashboardViews: an admin's designs (with a diff), drift and audit
// views show what the API holds and pass axe-core; a viewer opening the
// audit view gets the API's refusal as its problem detail says (title,
// detail, request ID).
func TestDashboardViews(t *testing.T) {
	t.Parallel()
	srv := apitest.Start(t, apitest.WithSeed(5), apitest.WithConfig(func(c *api.Config) { c.UI = ui.Handler() }))
	b := newBrowser(t)
	names := designtest.Example(t).NodeNames()
	b.signIn(t, srv.URL, srv.Token[api.RoleAdmin], len(names))
	b.run(t, "prepare the site (an audited call)", 30*time.Second, startTask(srv.URL, "prepare_site"))
	waitTasksDone(t, b)
	b.run(t, "the designs view and a diff", 30*time.Second,
		chromedp.Navigate(srv.URL+"/ui/#/designs"),
		chromedp.WaitVisible(chromedp.ID("rev-a")),
		chromedp.Click(chromedp.Search(`//button[text()="Diff"]`)),
		poll(`(() => { const p = document.querySelector('#view pre'); return p && !p.hidden && p.textContent.length > 2; })()`, 10*time.Second))
	checkAccessibility(t, b, "the designs view")
	b.run(t, "the drift view", 20*time.Second,
		chromedp.Navigate(srv.URL+"/ui/#/drift"),
		chromedp.WaitVisible(chromedp.Search(`//h1[text()="Drift"]`)))
	checkAccessibility(t, b, "the drift view")
	b.run(t, "the audit view", 20*time.Second,
		chromedp.Navigate(srv.URL+"/ui/#/audit"),
		poll(`[...document.querySelectorAll('#view td')].some(td => td.textContent.includes('POST /api/v1/tasks'))`, 10*time.Second))
	checkAccessibility(t, b, "the audit view")

	b.run(t, "sign out", 10*time.Second, signOut())
	b.signIn(t, srv.URL, srv.Token[api.RoleViewer], len(names))
	if hidden := eval[bool](t, b, `document.querySelector('#nav a[href="#/audit"]').hidden`); !hidden {
		t.Error("a viewer's navigation offers the audit view")
	}
	b.run(t, "a viewer opening the audit view", 20*time.Second,
		chromedp.Navigate(srv.URL+"/ui/#/audit"),
		poll(`!document.querySelector('#error').hidden`, 10*time.Second))
	msg := eval[string](t, b, `document.querySelector('#error').textContent`)
	if !strings.Contains(msg, "Forbidden (403)") || !regexp.MustCompile(`request [A-Z0-9]{26}`).MatchString(msg) {
		t.Errorf("the refusal shown: %q (want the problem's title, status, detail and request ID)", msg)
	}
}
