package api_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
)

// consoleReader collects a console stream's text as it comes.
type consoleReader struct {
	mu   sync.Mutex
	text strings.Builder
	done chan struct{}
}

func readStream(body io.Reader) *consoleReader {
	r := &consoleReader{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		br := bufio.NewReader(body)
		buf := make([]byte, 1024)
		for {
			n, err := br.Read(buf)
			r.mu.Lock()
			r.text.Write(buf[:n])
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return r
}

func (r *consoleReader) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.text.String()
}

func (r *consoleReader) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(r.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q on the console stream within 15 s:\n%s", want, r.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConsole: GET /nodes/{name}/console streams the lab machine's serial
// console (over its BMC's Serial over LAN) to admins only, once per node;
// read-write lets POST .../console/input type at it (audited by count,
// never by content); attach and detach are audited and are node events.
func TestConsole(t *testing.T) {
	f := newFixture(t)
	url := "/api/v1/nodes/" + f.Node + "/console"
	for _, role := range []api.Role{api.RoleViewer, api.RoleOperator} {
		if code, _ := f.do(t, "GET", url, f.Token[role], "", nil); code != http.StatusForbidden {
			t.Errorf("console as %s: %d, want 403", role, code)
		}
	}
	if code, b := f.do(t, "POST", url+"/input", f.Token[api.RoleAdmin], "application/json", []byte(`{"data":"x"}`)); code != http.StatusConflict ||
		!strings.Contains(string(b), "no console") {
		t.Errorf("input with no console attached: %d %s", code, b)
	}
	if code, b := f.do(t, "GET", "/api/v1/nodes/no-such-node/console", f.Token[api.RoleAdmin], "", nil); code != http.StatusNotFound {
		t.Errorf("console of an unknown node: %d %s", code, b)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.URL+url+"?mode=read-write", nil)
	req.Header.Set("Authorization", "Bearer "+f.Token[api.RoleAdmin])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("console: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	stream := readStream(resp.Body)
	m := f.Env.Lab.Machine(f.Node)
	// Attached: the BMC starts sending a moment after activation; write
	// until the stream shows it.
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(stream.String(), "hello from ttyS0") {
		if time.Now().After(deadline) {
			t.Fatalf("the machine's output never reached the stream:\n%s", stream.String())
		}
		m.Serial.Printf("hello from ttyS0")
		time.Sleep(50 * time.Millisecond)
	}
	if code, b := f.do(t, "GET", url, f.Token[api.RoleAdmin], "", nil); code != http.StatusConflict || !strings.Contains(string(b), "attached by") {
		t.Errorf("a second console: %d %s", code, b)
	}
	before, _ := f.Store.LastSeq(t.Context(), "audit")
	if code, b := f.do(t, "POST", url+"/input", f.Token[api.RoleAdmin], "application/json", []byte(`{"data":"hunter2\r"}`)); code != http.StatusNoContent {
		t.Fatalf("input: %d %s", code, b)
	}
	stream.waitFor(t, "hunter2\r\n") // the machine's terminal echoes
	recs, _ := f.Store.ReadLog(t.Context(), "audit", before, 10)
	if len(recs) != 1 || strings.Contains(string(recs[0].Value), "hunter2") || !strings.Contains(string(recs[0].Value), "8 characters typed") {
		t.Errorf("the input's audit record: %d records: %v", len(recs), recs)
	}

	cancel()
	<-stream.done
	var actions []string
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(strings.Join(actions, " "), "node.console.detach") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		actions = auditActions(t, f)
	}
	for _, want := range []string{"node.console.attach", "node.console.input", "node.console.detach"} {
		if !strings.Contains(strings.Join(actions, " "), want) {
			t.Errorf("no audit record %s in %v", want, actions)
		}
	}
	evs, _ := f.Engine.Events(t.Context(), 0, 1000, "", f.Node)
	var msgs []string
	for _, ev := range evs {
		if ev.Kind == "console" {
			msgs = append(msgs, ev.Message)
		}
	}
	if len(msgs) != 2 || !strings.Contains(msgs[0], "console attached by api:admin") || !strings.Contains(msgs[0], "read-write") ||
		!strings.Contains(msgs[1], "console detached") || !strings.Contains(msgs[1], "8 characters typed") {
		t.Errorf("console events: %q", msgs)
	}
	// Detached: the node's console can be attached again.
	code, _ := f.do(t, "POST", url+"/input", f.Token[api.RoleAdmin], "application/json", []byte(`{"data":"x"}`))
	if code != http.StatusConflict {
		t.Errorf("input after the detach: %d, want 409", code)
	}
}

func auditActions(t *testing.T, f *fixture) []string {
	var page api.AuditPage
	f.json(t, "GET", "/api/v1/audit?limit=1000", f.Token[api.RoleAdmin], nil, &page)
	var out []string
	for _, r := range page.Items {
		out = append(out, r.Action)
	}
	return out
}
