package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/asyncapi"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// labAPI serves the API over a virtual lab with faults; it returns the
// base URL, an admin token and the engine.
func labAPI(t *testing.T, faults *maas.Faults) (string, string, *orchestrator.Engine) {
	t.Helper()
	ctx := t.Context()
	store := memory.New()
	env, err := labrun.Start(ctx, labrun.Options{Design: designtest.Example(t), Store: store, TimeScale: 0.001, Faults: faults, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	e, err := env.Engine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	tokens := auth.NewStore(store)
	tok, _, err := tokens.Create(ctx, auth.Role(api.RoleAdmin), "admin")
	if err != nil {
		t.Fatal(err)
	}
	authenticate, tokenAdmin := api.TokenStore(tokens)
	s, err := api.New(api.Config{Engine: e, Store: store, Authenticate: authenticate, Tokens: tokenAdmin,
		Secrets: api.SecretStore(env.SecretStore), Log: zerolog.Nop(), EventPoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts.URL, tok, e
}

// call makes an API call and returns the status, the X-Request-Id answer
// header and the body.
func call(t *testing.T, url, token, method, path string, body any) (int, string, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(t.Context(), method, url+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Request-Id"), b
}

// runTask creates a task through the API, waits for its end and returns
// it with the request ID of the call that created it.
func runTask(t *testing.T, url, token string, e *orchestrator.Engine, req map[string]any) (record.Task, string) {
	t.Helper()
	code, rid, b := call(t, url, token, "POST", "/api/v1/tasks", req)
	if code != http.StatusCreated || rid == "" {
		t.Fatalf("create %v: %d (request ID %q): %s", req, code, rid, b)
	}
	var task record.Task
	if err := json.Unmarshal(b, &task); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	done, err := e.Wait(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	return done, rid
}

// streamed reads the task's events from the SSE stream until the task's
// end event, and returns each one's data.
func streamed(t *testing.T, url, token, task string) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/api/v1/events/stream?task="+task, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out [][]byte
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		out = append(out, []byte(data))
		var ev record.Event
		if err := json.Unmarshal([]byte(data), &ev); err == nil && ev.Kind == "task" && strings.HasPrefix(ev.Message, "task ") &&
			ev.Task == task && ev.Message != "task started" && !strings.Contains(ev.Message, "requested by") {
			return out // the task's end
		}
	}
	t.Fatalf("the stream of task %s ended before the task's end: %v", task, sc.Err())
	return nil
}

// TestEmittedEventsFollowAsyncAPI deploys four nodes of the lab through
// the API (one whose deployments always fail, one frozen for manual
// intervention), then destroys one: every event of the tasks, from the
// event log and from the SSE stream, validates against
// docs/asyncapi.yaml (a typed event against its type's message), each
// node's lifecycle milestones are there once, and every typed event
// carries the correlation ID that is the X-Request-Id of the call that
// created its task.
func TestEmittedEventsFollowAsyncAPI(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", asyncapi.Path))
	if err != nil {
		t.Fatal(err)
	}
	v, err := asyncapi.NewValidator(doc)
	if err != nil {
		t.Fatal(err)
	}
	d := designtest.Example(t)
	names := d.NodeNames()
	good1, good2, bad, frozen := names[0], names[1], names[2], names[3]
	url, tok, e := labAPI(t, &maas.Faults{Machines: map[string]maas.MachineFaults{bad: {FailDeploy: 9}}})
	if task, _ := runTask(t, url, tok, e, map[string]any{"action": "prepare_site"}); task.Status != record.TaskSucceeded {
		t.Fatalf("prepare_site: %s %s", task.Status, task.Message)
	}
	if code, _, b := call(t, url, tok, "POST", "/api/v1/nodes/"+frozen+"/mark-manual-intervention", map[string]any{"reason": "cabling"}); code != http.StatusOK {
		t.Fatalf("mark-manual-intervention: %d %s", code, b)
	}
	filter := func(ns ...string) map[string]any {
		return map[string]any{"sets": []any{map[string]any{"names": ns}}}
	}
	deploy, deployRID := runTask(t, url, tok, e, map[string]any{"action": "deploy_nodes", "node_filter": filter(good1, good2, bad, frozen)})
	if deploy.Status != record.TaskPartiallySucceeded {
		t.Fatalf("deploy: %s %s", deploy.Status, deploy.Message)
	}
	destroy, destroyRID := runTask(t, url, tok, e, map[string]any{"action": "destroy_nodes", "node_filter": filter(good1)})
	if destroy.Status != record.TaskSucceeded {
		t.Fatalf("destroy: %s %s", destroy.Status, destroy.Message)
	}
	if deploy.Correlation != deployRID || destroy.Correlation != destroyRID {
		t.Errorf("task correlation IDs %q and %q, request IDs %q and %q", deploy.Correlation, destroy.Correlation, deployRID, destroyRID)
	}

	check := func(task record.Task, rid string, want map[string][]string) {
		t.Helper()
		code, _, b := call(t, url, tok, "GET", "/api/v1/events?task="+task.ID, nil)
		if code != http.StatusOK {
			t.Fatalf("events: %d %s", code, b)
		}
		var raws []json.RawMessage
		if err := json.Unmarshal(b, &raws); err != nil {
			t.Fatal(err)
		}
		stream := streamed(t, url, tok, task.ID)
		if len(stream) != len(raws) {
			t.Errorf("task %s: %d events streamed, %d in the log", task.ID, len(stream), len(raws))
		}
		got := map[string][]string{}
		for i, raw := range append(raws, func() []json.RawMessage {
			out := make([]json.RawMessage, len(stream))
			for i, s := range stream {
				out[i] = s
			}
			return out
		}()...) {
			if err := v.Validate(raw); err != nil {
				t.Errorf("event %s does not follow %s: %v", raw, asyncapi.Path, err)
			}
			var ev record.Event
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Type == "" {
				continue
			}
			if ev.Correlation != rid {
				t.Errorf("%s of %s: correlation %q, want the creating call's X-Request-Id %q", ev.Type, ev.Node, ev.Correlation, rid)
			}
			if i < len(raws) && ev.Node != "" { // a node's (image.sync events are a Site's: validated above)
				got[ev.Node] = append(got[ev.Node], ev.Type)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("task %s (%s): typed events %v, want %v", task.ID, task.Action, got, want)
		}
	}
	check(deploy, deployRID, map[string][]string{
		good1:  {record.EventOnboardingStarted, record.EventOnboardingCompleted},
		good2:  {record.EventOnboardingStarted, record.EventOnboardingCompleted},
		bad:    {record.EventOnboardingStarted, record.EventOnboardingFailed},
		frozen: {record.EventOnboardingStarted, record.EventOnboardingManual},
	})
	check(destroy, destroyRID, map[string][]string{
		good1: {record.EventDecommissionStarted, record.EventDecommissionCompleted},
	})
}
