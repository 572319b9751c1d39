package ui_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/ui"
)

// holdImages makes the page's next GET /api/v1/images wait for
// window.releaseImages(); window.imagesHeld is true while it waits and
// window.imagesDone once its answer reached the page.
const holdImages = `(() => {
  const f = window.fetch;
  window.imagesHeld = false; window.imagesDone = false;
  const gate = new Promise((r) => { window.releaseImages = r; });
  window.fetch = (u, o) => {
    if (!String(u).startsWith('/api/v1/images') || window.imagesHeld) return f(u, o);
    window.imagesHeld = true;
    return gate.then(() => f(u, o)).finally(() => { window.imagesDone = true; });
  };
  return true;
})()`

// TestActionRenderOvertaken: an operator acts on a node (the node view
// draws itself again after the call) and moves to the site view before
// that drawing ends; the site view stays. Before, the node view's late
// drawing replaced the site view while the address said #/site
// (TestDashboard failed so in CI: its retry's re-render came after the
// test had opened the site view).
func TestActionRenderOvertaken(t *testing.T) {
	t.Parallel()
	srv := apitest.Start(t, apitest.WithSeed(7), apitest.WithConfig(func(c *api.Config) { c.UI = ui.Handler() }))
	b := newBrowser(t)
	names := designtest.Example(t).NodeNames()
	b.signIn(t, srv.URL, srv.Token[api.RoleOperator], len(names))
	node := names[0]
	b.run(t, "open the node view", 30*time.Second,
		chromedp.Navigate(srv.URL+"/ui/#/node/"+node),
		chromedp.WaitVisible(chromedp.Search(`//h1[text()="Node `+node+`"]`)),
		chromedp.WaitVisible(chromedp.Search(`//h2[text()="Events"]`)))
	if !eval[bool](t, b, holdImages) {
		t.Fatal("the fetch hold was not installed")
	}
	b.run(t, "freeze the node; its view draws itself again and waits on the images", 30*time.Second,
		confirmClick(`//button[text()="mark manual intervention"]`),
		poll(`window.imagesHeld === true`, 20*time.Second))
	b.run(t, "move to the site view", 30*time.Second,
		chromedp.Navigate(srv.URL+"/ui/#/site"),
		poll(fmt.Sprintf("document.querySelectorAll('#sites .tile').length === %d", len(names)), 20*time.Second))
	eval[bool](t, b, `(window.releaseImages(), true)`)
	b.run(t, "the node view's drawing ends", 20*time.Second,
		poll(`window.imagesDone === true`, 10*time.Second),
		chromedp.Sleep(time.Second)) // what follows the answer: JSON and drawing, no network
	if h1 := eval[string](t, b, `document.querySelector('#view h1').textContent`); h1 != "Site" {
		t.Errorf("after the overtaken drawing ended the view is %q, want the site view", h1)
	}
	if n := eval[int](t, b, `document.querySelectorAll('#sites .tile').length`); n != len(names) {
		t.Errorf("the site view shows %d tiles, want %d", n, len(names))
	}
}
