package api_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/api/client"
)

// losingTransport delivers every request, and loses the answer to the
// first `lose` mutating ones after the server sent it (a connection cut
// between the server's commit and the client's read: the client can't
// know whether its call was applied). It records the Idempotency-Key of
// each mutating request it delivered.
type losingTransport struct {
	lose atomic.Int64
	mu   sync.Mutex
	keys []string
}

func (l *losingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.Method == http.MethodGet {
		return resp, err
	}
	l.mu.Lock()
	l.keys = append(l.keys, req.Header.Get(api.IdempotencyHeader))
	l.mu.Unlock()
	if l.lose.Add(-1) < 0 {
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, errors.New("connection reset by peer (injected: the answer was lost)")
}

// TestRetryAfterLostAnswerAppliesOnce: the client's call to create a
// task is applied but its answer is lost; the client tries again with the
// same Idempotency-Key and gets the first call's answer: one task in the
// store (counted from its records, not the engine), the one answered.
func TestRetryAfterLostAnswerAppliesOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	lt := &losingTransport{}
	lt.lose.Store(1)
	c, err := client.New(f.URL, f.Token[api.RoleOperator], client.WithHTTPClient(&http.Client{Transport: lt}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	before, err := f.Store.List(ctx, "tasks", "")
	if err != nil {
		t.Fatal(err)
	}
	task, err := c.CreateTask(ctx, client.TaskRequest{Action: "validate_design"})
	if err != nil {
		t.Fatalf("a task call whose first answer was lost: %v (want the answer of its retry)", err)
	}
	after, err := f.Store.List(ctx, "tasks", "")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(after) - len(before); n != 1 {
		t.Fatalf("one task call, its answer lost once: %d tasks stored, want 1", n)
	}
	if got := after[len(after)-1].Key; got != task.ID {
		t.Errorf("the answer names task %s; the store holds %s", task.ID, got)
	}
	if len(lt.keys) != 2 || lt.keys[0] == "" || lt.keys[0] != lt.keys[1] {
		t.Errorf("the client sent Idempotency-Keys %q: want two tries with the same key", lt.keys)
	}
}

// TestIdempotencyKeyRules: a retry with the same key answers the first
// call's answer (marked replayed) without applying it again; the same key
// with another body or path is refused (422); another principal's same
// key is its own; a malformed key is refused (400); a call whose answer
// holds a secret (a new token) is not replayed (409), and still applied
// once.
func TestIdempotencyKeyRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := t.Context()
	call := func(method, path, token, key, body string) (int, http.Header, []byte) {
		req, _ := http.NewRequestWithContext(ctx, method, f.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(api.IdempotencyHeader, key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b
	}
	count := func(coll string) int {
		recs, err := f.Store.List(ctx, coll, "")
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	op, admin := f.Token[api.RoleOperator], f.Token[api.RoleAdmin]
	tasks := count("tasks")
	body := `{"action":"validate_design"}`
	code1, _, b1 := call("POST", "/api/v1/tasks", op, "key-1", body)
	code2, h2, b2 := call("POST", "/api/v1/tasks", op, "key-1", body)
	if code1 != http.StatusCreated || code2 != code1 || !bytes.Equal(b1, b2) || h2.Get(api.ReplayedHeader) != "true" {
		t.Fatalf("a retry: %d %s / %d %s (replayed %q): want the first answer again, marked replayed", code1, b1, code2, b2, h2.Get(api.ReplayedHeader))
	}
	if n := count("tasks") - tasks; n != 1 {
		t.Fatalf("two calls with one key: %d tasks, want 1", n)
	}
	if code, _, b := call("POST", "/api/v1/tasks", op, "key-1", `{"action":"verify_site"}`); code != http.StatusUnprocessableEntity {
		t.Errorf("the key again with another body: %d %s, want 422", code, b)
	}
	if code, _, b := call("PUT", "/api/v1/secrets/idem-a", admin, "key-1", `{"value":"v"}`); code != http.StatusOK {
		t.Errorf("another principal's key-1: %d %s, want its own call (200)", code, b)
	}
	if code, _, b := call("PUT", "/api/v1/secrets/idem-b", admin, "key-1", `{"value":"v"}`); code != http.StatusUnprocessableEntity {
		t.Errorf("the key again on another path: %d %s, want 422", code, b)
	}
	for _, bad := range []string{strings.Repeat("k", 129), "a b", "ключ"} {
		if code, _, b := call("POST", "/api/v1/tasks", op, bad, body); code != http.StatusBadRequest {
			t.Errorf("key %q: %d %s, want 400", bad, code, b)
		}
	}
	if n := count("tasks") - tasks; n != 1 {
		t.Fatalf("after the refusals: %d tasks, want 1", n)
	}
	tokens := count("tokens")
	tb := `{"name":"idem","role":"viewer"}`
	if code, _, b := call("POST", "/api/v1/tokens", admin, "tok-1", tb); code != http.StatusCreated {
		t.Fatalf("a token: %d %s", code, b)
	}
	code, _, b := call("POST", "/api/v1/tokens", admin, "tok-1", tb)
	if code != http.StatusConflict || bytes.Contains(b, []byte("slw_")) {
		t.Errorf("a token call again: %d %s, want 409 without the token", code, b)
	}
	if n := count("tokens") - tokens; n != 1 {
		t.Errorf("two token calls with one key: %d tokens, want 1", n)
	}
	raw, err := f.Store.List(ctx, "idempotency", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raw {
		if bytes.Contains(r.Value, []byte("slw_")) {
			t.Errorf("an idempotency record keeps a token: %s", r.Value)
		}
	}
}

// TestIdempotencyRecordsBounded: past Config.IdempotencyRecords the oldest
// keys go (a sweep every 64 answers kept), their calls run again; a key is
// forgotten after Config.IdempotencyWindow.
func TestIdempotencyRecordsBounded(t *testing.T) {
	f := &fixture{apitest.Start(t, apitest.WithSeed(9), apitest.WithConfig(func(c *api.Config) {
		c.IdempotencyRecords, c.IdempotencyWindow = 8, 2*time.Second
	}))}
	ctx := t.Context()
	put := func(name, key string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, "PUT", f.URL+"/api/v1/secrets/"+name, strings.NewReader(`{"value":"v"}`))
		req.Header.Set("Authorization", "Bearer "+f.Token[api.RoleAdmin])
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(api.IdempotencyHeader, key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get(api.ReplayedHeader)
	}
	count := func(coll string) int {
		recs, err := f.Store.List(ctx, coll, "")
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	for i := range 64 {
		if code, _ := put(fmt.Sprint("bound-", i), fmt.Sprint("k-", i)); code != http.StatusOK {
			t.Fatalf("call %d: %d", i, code)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for count("idempotency") > 8 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n, m := count("idempotency"), count("idempotency-expiry"); n > 8 || m != n {
		t.Fatalf("64 keys, at most 8 kept: %d records, %d index entries", n, m)
	}
	if code, replayed := put("bound-63", "k-63"); code != http.StatusOK || replayed != "true" {
		t.Errorf("the newest key again: %d replayed %q, want its answer again", code, replayed)
	}
	if code, replayed := put("bound-0", "k-0"); code != http.StatusOK || replayed != "" {
		t.Errorf("the oldest key, swept, again: %d replayed %q, want the call run again", code, replayed)
	}
	time.Sleep(2100 * time.Millisecond)
	if code, replayed := put("bound-63", "k-63"); code != http.StatusOK || replayed != "" {
		t.Errorf("a key past the window: %d replayed %q, want the call run again", code, replayed)
	}
}
