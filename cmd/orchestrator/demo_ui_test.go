package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/testtool"
)

// TestDemoDashboard: the demo prints the dashboard's URL and a token while
// the lab deploys, and with --keep serves both until it is stopped: the
// page loads with its CSP, and the token is an admin's.
func TestDemoDashboard(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr testtool.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--nodes", "3", "--time-scale", "0.001", "--dashboard", "127.0.0.1:0", "--keep"}, &bytes.Buffer{}, &stderr)
	}()
	re := regexp.MustCompile(`dashboard: (http://\S+/ui/) — sign in with this demo's admin token (\S+)`)
	var m []string
	testtool.WaitUntil(t, func() bool { m = re.FindStringSubmatch(stderr.String()); return m != nil }, "the dashboard's URL in the demo's output")
	testtool.WaitUntil(t, func() bool { return strings.Contains(stderr.String(), "keep running (--keep)") }, "the deploy's end")
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("GET %s: %s, CSP %q", m[1], resp.Status, resp.Header.Get("Content-Security-Policy"))
	}
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(m[1], "/ui/")+"/api/v1/whoami", nil)
	req.Header.Set("Authorization", "Bearer "+m[2])
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var who struct{ Role string }
	_ = json.NewDecoder(resp.Body).Decode(&who)
	resp.Body.Close()
	if who.Role != "admin" {
		t.Errorf("the demo's token: role %q", who.Role)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("demo exit %d: %s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the demo did not stop within 20 s of its context's end")
	}
}
