package gitsync

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	secretstore "github.com/slipway-dev/slipway/secrets/store"
)

// TestWebhookVerification: each way a delivery can be unverified is
// ErrUnauthorized and kicks no round; a follower without a webhook
// secret has no webhook; a verified push to the branch kicks one round.
func TestWebhookVerification(t *testing.T) {
	a := newApplier(t)
	sec, err := secretstore.New(a.st, make([]byte, secretstore.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	if err := sec.Put(t.Context(), "hook", "k3y"); err != nil {
		t.Fatal(err)
	}
	none := follow(t, a, "file:///nowhere.git", nil, func(o *Options) { o.Secrets = sec })
	if _, err := none.Webhook(t.Context(), http.Header{"X-Gitlab-Token": {"k3y"}}, []byte(`{}`)); !errors.Is(err, ErrNoWebhook) {
		t.Errorf("no webhook_secret: %v, want ErrNoWebhook", err)
	}
	unset := follow(t, a, "file:///nowhere.git", func(c *Config) { c.WebhookSecret = "not-stored" }, func(o *Options) { o.Secrets = sec })
	if _, err := unset.Webhook(t.Context(), http.Header{"X-Gitlab-Token": {""}}, []byte(`{}`)); !errors.Is(err, ErrNoWebhook) {
		t.Errorf("webhook secret not stored: %v, want ErrNoWebhook", err)
	}
	f := follow(t, a, "file:///nowhere.git", func(c *Config) { c.WebhookSecret = "hook" }, func(o *Options) { o.Secrets = sec })
	body := []byte(`{"ref":"refs/heads/main"}`)
	for name, h := range map[string]http.Header{
		"no header":           {"X-Github-Event": {"push"}},
		"signature of body 2": {"X-Github-Event": {"push"}, "X-Hub-Signature-256": {sign([]byte(`{"ref":"refs/heads/other"}`), "k3y")}},
		"sha1 prefix":         {"X-Github-Event": {"push"}, "X-Hub-Signature-256": {strings.Replace(sign(body, "k3y"), "sha256=", "sha1=", 1)}},
		"not hex":             {"X-Github-Event": {"push"}, "X-Hub-Signature-256": {"sha256=zz"}},
		"gitlab wrong token":  {"X-Gitlab-Event": {"Push Hook"}, "X-Gitlab-Token": {"k3y "}},
		"gitlab token prefix": {"X-Gitlab-Event": {"Push Hook"}, "X-Gitlab-Token": {"k3"}},
	} {
		if _, err := f.Webhook(t.Context(), h, body); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("%s: %v, want ErrUnauthorized", name, err)
		}
	}
	if len(f.kick) != 0 {
		t.Fatalf("an unverified delivery asked for a round")
	}
	r, err := f.Webhook(t.Context(), http.Header{"X-Gitlab-Event": {"Push Hook"}, "X-Gitlab-Token": {"k3y"}, "X-Gitlab-Event-Uuid": {"u-1"}}, body)
	if err != nil || !r.Started || len(f.kick) != 1 {
		t.Fatalf("verified GitLab push: %+v %v, %d rounds asked", r, err, len(f.kick))
	}
	r, err = f.Webhook(t.Context(), http.Header{"X-Github-Event": {"ping"}, "X-Hub-Signature-256": {sign(body, "k3y")}}, body)
	if err != nil || r.Status != http.StatusOK || r.Started {
		t.Errorf("ping: %+v %v", r, err)
	}
}
