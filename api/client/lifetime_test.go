package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// TestStreamLifetimeResume: the server ends each stream at its maximum
// lifetime; the client reconnects with Last-Event-ID and gets every event
// once, in order, while tasks keep writing events across the reconnects.
func TestStreamLifetimeResume(t *testing.T) {
	s := apitest.Start(t, apitest.WithSeed(5), apitest.WithConfig(func(c *api.Config) {
		c.StreamMaxLifetime = 150 * time.Millisecond
	}))
	var streams atomic.Int32
	h := s.API.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events/stream") {
			streams.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	c := newClient(t, ts.URL, s.Token[api.RoleViewer], client.WithStreamTiming(10*time.Millisecond, 5*time.Second))
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	const tasks = 8
	submitted := make(chan string, tasks)
	go func() { // a task every 100 ms: events keep coming across the reconnects
		for i := range tasks {
			if i > 0 {
				time.Sleep(100 * time.Millisecond)
			}
			tk, err := s.Engine.Submit(ctx, record.Request{Action: record.ActionValidateDesign, Requester: "test"})
			if err != nil {
				t.Error(err)
				cancel()
				return
			}
			submitted <- tk.ID
		}
	}()
	// The stop is counted from the events alone: a task can succeed before
	// its Submit returns to the goroutine above, so waiting on its ID could
	// wait for an event that has already been delivered.
	var got []apitypes.Event
	succeeded := map[string]bool{}
	err := c.StreamEvents(ctx, 0, "", "", func(ev apitypes.Event) error {
		got = append(got, ev)
		if ev.Kind == "task" && strings.Contains(ev.Message, "succeeded") {
			succeeded[ev.Task] = true
		}
		if len(succeeded) == tasks {
			return client.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("stream: %v (%d events)", err, len(got))
	}
	for range tasks {
		if id := <-submitted; !succeeded[id] {
			t.Errorf("task %s: no succeeded event streamed", id)
		}
	}
	if n := streams.Load(); n < 3 {
		t.Errorf("%d stream connections in %d events: want the server to have ended several at their lifetime", n, len(got))
	}
	want, err := c.Events(t.Context(), 0, "", "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < len(got) {
		t.Fatalf("%d events streamed, %d stored", len(got), len(want))
	}
	for i, ev := range got {
		if ev.Seq != want[i].Seq {
			t.Fatalf("event %d: seq %d, want %d: a gap or a repeat (streamed %v)", i, ev.Seq, want[i].Seq, seqs(got))
		}
	}
	t.Logf("%d events over %d connections", len(got), streams.Load())
}
