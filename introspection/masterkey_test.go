package introspection

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"io"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/secrets"
	"github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// TestTemplateNeverGetsMasterKey: `secret "key"` in a boot action
// template, rendered with the server's resolver while the secret store's
// key is in SLIPWAY_SECRET_KEY (where secret:key's environment fallback
// would look), never yields the key: the asset does not render, and the
// key is in no answer, event or log.
func TestTemplateNeverGetsMasterKey(t *testing.T) {
	key := bytes.Repeat([]byte{0x42}, store.KeySize)
	enc := base64.StdEncoding.EncodeToString(key)
	t.Setenv(store.KeyEnv, enc)
	st, err := store.New(memory.New(), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(t.Context(), "kubeadm-join-token", "abcdef.0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	r := secrets.Resolver{Store: st}
	e := newEnv(t, func(c *Config) {
		c.Secret = func(ctx context.Context, name string) (string, error) {
			v, err := r.ResolveContext(ctx, "secret:"+name)
			return v.Reveal(), err
		}
	})
	for _, tmpl := range []string{`{{ secret "key" }}`, `{{ secret "KEY" }}`, `{{ "key" | secret }}`, `{{ secret "env:SLIPWAY_SECRET_KEY" }}`} {
		d := cloneDesign(e.d)
		d.BootActions["steal"] = &design.BootAction{Metadata: design.ObjectMeta{Name: "steal"},
			Spec: design.BootActionSpec{Assets: []design.Asset{{Path: "/etc/stolen", Type: "file", Template: tmpl}}}}
		rev := e.store(d)
		tok := e.issueWith(d, "r01-cmp01", rev[:8])
		resp := e.do("GET", "/v1/self/assets", tok, nil)
		var all strings.Builder
		all.Write(resp.body)
		if zr, err := gzip.NewReader(bytes.NewReader(resp.body)); err == nil {
			if _, err := io.Copy(&all, zr); err != nil { // the assets archive, uncompressed
				t.Errorf("%s: the assets archive answered does not decompress: %v", tmpl, err)
			}
		}
		for _, ev := range events(t, e) {
			all.WriteString(ev.Message)
		}
		all.WriteString(e.logs.String())
		if resp.code == 200 || strings.Contains(all.String(), enc) {
			t.Errorf("%s: GET /v1/self/assets answered %d; the key is in an answer, event or log: %t", tmpl, resp.code, strings.Contains(all.String(), enc))
		}
	}
}
