package introspection

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
)

// TestRenderErrorShortSecret: a secret shorter than the redaction bound
// is replaced where it stands alone in a render error (even the word
// "a"), and words that merely contain its letters are left whole (not
// "p(secret short)ckage", which would show the value all the same).
func TestRenderErrorShortSecret(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.Secret = func(ctx context.Context, name string) (string, error) {
			switch name {
			case "short":
				return "a", nil
			case "kubeadm-join-token":
				return "abcdef.0123456789abcdef", nil
			}
			return "", fmt.Errorf("secret %q is not set", name)
		}
	})
	d := cloneDesign(e.d)
	d.BootActions["broken"] = &design.BootAction{Metadata: design.ObjectMeta{Name: "broken"},
		Spec: design.BootActionSpec{Assets: []design.Asset{{Path: "/etc/broken.list", Type: "pkgList", Template: `{{ secret "short" }}!`}}}}
	e.store(d)
	tok := e.issueWith(d, "r01-cmp01", "1")
	r := e.do("GET", "/v1/self/assets", tok, nil)
	detail := r.problem(t).Detail
	const want = `package name "(secret short)!": use (secret short) name like nginx, nginx=1.18.0-6 or nginx:amd64`
	if r.code != 500 || !strings.Contains(detail, want) {
		t.Fatalf("GET /v1/self/assets: %d %q, want it to hold %q", r.code, detail, want)
	}
}
