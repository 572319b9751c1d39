package api_test

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// slowPlans is the engine with the plans of designs lacking a node held
// until release is closed (a provisioner slow to read 10,000 machines).
type slowPlans struct {
	api.Engine
	node    string
	entered chan struct{}
	release chan struct{}
}

func (s *slowPlans) Plan(ctx context.Context, d *design.Design, id string) (record.Plan, error) {
	if d.Nodes[s.node] == nil {
		s.entered <- struct{}{}
		select {
		case <-s.release:
		case <-ctx.Done():
		}
	}
	return s.Engine.Plan(ctx, d, id)
}

// TestPlansDoNotStarveApplies: viewers' plans, however slow, hold no
// design parse slot while the provisioner is read, and one is made at a
// time: with two plans under way (the second one waiting, then told 503
// with Retry-After and the not-run mark the client tries again on), an
// operator's apply and a validate still go through at once.
func TestPlansDoNotStarveApplies(t *testing.T) {
	const node = "r01-cmp01"
	slow := &slowPlans{node: node, entered: make(chan struct{}, 4), release: make(chan struct{})}
	srv := apitest.Start(t, apitest.WithSeed(9), apitest.WithConfig(func(c *api.Config) {
		slow.Engine = c.Engine
		c.Engine = slow
		c.DesignWait = 300 * time.Millisecond
	}))
	f := &fixture{srv}
	without := exampleWithout(t, node)
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(t.Context(), "POST", f.URL+"/api/v1/designs/plan", bytes.NewReader(without))
			req.Header.Set("Authorization", "Bearer "+f.Token[api.RoleViewer])
			req.Header.Set("Content-Type", "application/gzip")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable && (resp.Header.Get("Retry-After") == "" || resp.Header.Get(api.NotRun) == "") {
				codes <- -1 // a busy answer the client would not try again
				return
			}
			codes <- resp.StatusCode
		}()
	}
	select {
	case <-slow.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no plan reached the engine")
	}
	time.Sleep(100 * time.Millisecond) // the second plan has its parse done and waits (or has been refused)
	same := exampleTar(t, func(s string) string { return s })
	start := time.Now()
	code, b := f.do(t, "POST", "/api/v1/designs", f.Token[api.RoleOperator], "application/gzip", same)
	if code != http.StatusOK && code != http.StatusCreated {
		t.Errorf("an apply while viewers plan: %d %s (after %s), want it applied", code, b, time.Since(start))
	}
	if code, b := f.do(t, "POST", "/api/v1/designs/validate", f.Token[api.RoleViewer], "application/gzip", same); code != http.StatusOK {
		t.Errorf("a validate while viewers plan: %d %s", code, b)
	}
	select { // the plan that waited for the one under way is refused
	case c := <-codes:
		if c != http.StatusServiceUnavailable {
			t.Errorf("a plan while another is made: %d, want 503", c)
		}
	case <-time.After(10 * time.Second):
		t.Error("no plan answered while one was held: two are made at once")
	}
	close(slow.release)
	wg.Wait()
	if c := <-codes; c != http.StatusOK {
		t.Errorf("the plan held: %d, want 200", c)
	}
}
