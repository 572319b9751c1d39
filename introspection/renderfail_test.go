package introspection

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// TestRenderFailureFailsBootstrap: an asset that does not render when the
// node asks for it (a secret that is not set, a rendered package list
// that is not one) fails the node's bootstrap at once: BootstrapStatus
// says Failed with the action, the asset and the reason, whatever the
// action's signalling (the node gets no asset at all), and one event says
// so, however often the node asks. A secret's value is in none of the
// answer, the status, the events and the logs.
func TestRenderFailureFailsBootstrap(t *testing.T) {
	const value = "abcdef.0123456789abcdef" // testSecret's kubeadm-join-token
	for name, c := range map[string]struct {
		asset design.Asset
		want  string
	}{
		"secret not set": {design.Asset{Path: "/etc/broken", Type: "file", Template: `{{ secret "kubeadm-join-token" }} {{ secret "missing-secret" }}`},
			`boot action broken, assets[0] (/etc/broken): `},
		"secret in a bad package list": {design.Asset{Path: "/etc/broken.list", Type: "pkgList", Template: `{{ secret "kubeadm-join-token" }}!`},
			`boot action broken, assets[0] (/etc/broken.list): package name "(secret kubeadm-join-token)!"`},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			d := cloneDesign(e.d)
			d.BootActions["broken"] = &design.BootAction{Metadata: design.ObjectMeta{Name: "broken"},
				Spec: design.BootActionSpec{Signaling: false, Assets: []design.Asset{c.asset}}}
			e.store(d)
			const node = "r01-cmp01"
			tok := e.issueWith(d, node, "1")
			status := func() drivers.Result {
				t.Helper()
				p, err := e.srv.BootstrapStatus(t.Context(), d, node, "1")
				if err != nil {
					t.Fatal(err)
				}
				return p.Result
			}
			if res := status(); res.Status != drivers.StatusInProgress {
				t.Fatalf("before the node asked: %+v", res)
			}
			var all strings.Builder
			for range 3 { // the node retries: one failure, one event
				r := e.do("GET", "/v1/self/assets", tok, nil)
				if r.code != 500 || !strings.Contains(r.problem(t).Detail, c.want) {
					t.Fatalf("GET /v1/self/assets: %d %s", r.code, r.body)
				}
				all.Write(r.body)
			}
			res := status()
			if res.Status != drivers.StatusFailed || !strings.Contains(res.Message, c.want) || !strings.Contains(res.Message, node) {
				t.Errorf("status after the render failure: %+v", res)
			}
			all.WriteString(res.Message)
			var failures int
			for _, ev := range events(t, e) {
				all.WriteString(ev.Message)
				if ev.Node == node && ev.Kind == "action" && ev.Level == "error" && strings.Contains(ev.Message, c.want) {
					failures++
				}
			}
			if failures != 1 {
				t.Errorf("%d error events name the render failure, want 1", failures)
			}
			all.WriteString(e.logs.String())
			if strings.Contains(all.String(), value) {
				t.Errorf("the secret's value is in an answer, the status, an event or the log")
			}
			// A new deployment starts over.
			e.issueWith(d, node, "2")
			if p, err := e.srv.BootstrapStatus(t.Context(), d, node, "2"); err != nil || p.Status != drivers.StatusInProgress {
				t.Errorf("the next deployment: %+v %v", p, err)
			}
		})
	}
}
