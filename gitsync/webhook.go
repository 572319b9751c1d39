package gitsync

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// MaxWebhookBody bounds a webhook's body (read under it before it is
// verified).
const MaxWebhookBody = 1 << 20

// Webhook errors (the API answers 404 and 401).
var (
	ErrNoWebhook    = errors.New("no webhook configured")
	ErrUnauthorized = errors.New("webhook not verified")
)

// WebhookResult is what a verified delivery did.
type WebhookResult struct {
	Status  int    // 200 (already handled, ping), 202 (a round starts, or ignored)
	Message string // what happened, for the sender's delivery log
	Started bool   // a round was asked for
}

// Webhook verifies a GitHub or GitLab push delivery and starts a round
// for a push to the followed branch. Nothing is fetched for one that is
// not verified (ErrUnauthorized), replayed, or for another branch.
func (f *Follower) Webhook(ctx context.Context, h http.Header, body []byte) (WebhookResult, error) {
	if f.cfg.WebhookSecret == "" {
		return WebhookResult{}, fmt.Errorf("%w: set git.webhook_secret in serve's configuration", ErrNoWebhook)
	}
	key, err := f.secret(ctx, f.cfg.WebhookSecret)
	if err != nil || key == "" {
		return WebhookResult{}, fmt.Errorf("%w: the webhook secret %q is not readable: store it first", ErrNoWebhook, f.cfg.WebhookSecret)
	}
	if err := verify(h, body, key); err != nil {
		return WebhookResult{}, err
	}
	id := h.Get("X-GitHub-Delivery") + h.Get("X-Gitlab-Event-UUID")
	if id != "" && !f.seen.add(clip(id, 128)) {
		return WebhookResult{Status: http.StatusOK, Message: "delivery " + clip(id, 64) + " was handled already: nothing fetched"}, nil
	}
	event := h.Get("X-GitHub-Event") + h.Get("X-Gitlab-Event")
	switch event {
	case "ping":
		return WebhookResult{Status: http.StatusOK, Message: "pong"}, nil
	case "push", "Push Hook":
	default:
		return WebhookResult{Status: http.StatusAccepted, Message: fmt.Sprintf("event %.40q ignored: only pushes start a round", event)}, nil
	}
	var push struct {
		Ref string `json:"ref"`
	}
	if err := json.Unmarshal(body, &push); err != nil {
		return WebhookResult{Status: http.StatusAccepted, Message: "push event without a readable ref: ignored"}, nil
	}
	if push.Ref != "refs/heads/"+f.cfg.Branch {
		return WebhookResult{Status: http.StatusAccepted, Message: fmt.Sprintf("push to %.80q ignored: following refs/heads/%s", push.Ref, f.cfg.Branch)}, nil
	}
	f.Kick("webhook")
	return WebhookResult{Status: http.StatusAccepted, Message: "push to " + f.cfg.Branch + ": a round starts now", Started: true}, nil
}

// verify checks GitHub's X-Hub-Signature-256 (HMAC-SHA256 of the body)
// or GitLab's X-Gitlab-Token, in constant time.
func verify(h http.Header, body []byte, key string) error {
	if sig := h.Get("X-Hub-Signature-256"); sig != "" {
		got, err := hex.DecodeString(strings.TrimPrefix(sig, "sha256="))
		m := hmac.New(sha256.New, []byte(key))
		m.Write(body)
		if err != nil || !strings.HasPrefix(sig, "sha256=") || !hmac.Equal(got, m.Sum(nil)) {
			return fmt.Errorf("%w: X-Hub-Signature-256 does not match the body signed with the webhook secret", ErrUnauthorized)
		}
		return nil
	}
	if tok := h.Get("X-Gitlab-Token"); tok != "" {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(key)) != 1 {
			return fmt.Errorf("%w: X-Gitlab-Token is not the webhook secret", ErrUnauthorized)
		}
		return nil
	}
	return fmt.Errorf("%w: no X-Hub-Signature-256 (GitHub) or X-Gitlab-Token (GitLab) header", ErrUnauthorized)
}

// deliveries remembers the last n delivery IDs.
type deliveries struct {
	mu   sync.Mutex
	ids  map[string]struct{}
	ring []string
	next int
}

func newDeliveries(n int) *deliveries {
	return &deliveries{ids: make(map[string]struct{}, n), ring: make([]string, n)}
}

// add notes id; false when it was seen already.
func (d *deliveries) add(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.ids[id]; ok {
		return false
	}
	delete(d.ids, d.ring[d.next])
	d.ring[d.next] = id
	d.ids[id] = struct{}{}
	d.next = (d.next + 1) % len(d.ring)
	return true
}
