package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/labrun"
	etcdstore "github.com/slipway-dev/slipway/statestore/etcdstore"
)

// TestWriteStormLeaderKilled: a storm of task calls through the real
// client into an API whose state is on a three-member etcd cluster; the
// etcd leader member is SIGKILLed a third of the way through, and every
// seventh answer is lost on its way back (so that retries surely run, as
// a kill that hits no commit in flight would not make them). Every call
// is applied exactly once: counted from etcd's own keys, one task record
// per call, each the one its answer names, and one idempotency record per
// call.
func TestWriteStormLeaderKilled(t *testing.T) {
	ec := etcdtest.Start(t, 3)
	prefix := "/storm/"
	st, err := etcdstore.Open(clientv3.Config{Endpoints: ec.Endpoints(), DialTimeout: 5 * time.Second}, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	url, tok := stormServer(t, st)
	lt := &everyNthLost{n: 7}
	c, err := client.New(url, tok, client.WithHTTPClient(&http.Client{Transport: lt}), client.WithTimeout(45*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	cl := ec.Client(t)
	before := keysUnder(t, cl, prefix+"rec/tasks/")

	const workers, each = 6, 20
	var done atomic.Int64
	killed := make(chan string, 1)
	go func() { // the leader goes when a third of the calls are answered
		for done.Load() < workers*each/3 {
			time.Sleep(5 * time.Millisecond)
		}
		killed <- killLeader(t, ec)
	}()
	ids, lost, errs := stormTasks(t.Context(), c, workers, each, &done)
	for _, err := range errs {
		t.Error(err)
	}
	t.Logf("etcd leader %s SIGKILLed mid-storm; %d calls answered, %d applied with their answer lost (409), %d answers lost in transit and tried again",
		<-killed, len(ids), lost, lt.lost.Load())
	if lt.lost.Load() == 0 {
		t.Fatal("no answer was lost: the retry path did not run")
	}
	tasks := keysUnder(t, cl, prefix+"rec/tasks/") - before
	if want := int64(len(ids) + lost); tasks != want || want != workers*each {
		t.Errorf("%d task calls (%d answered, %d applied without answer): %d task records in etcd, want %d", workers*each, len(ids), lost, tasks, workers*each)
	}
	for id := range ids {
		if resp, err := cl.Get(t.Context(), prefix+"rec/tasks/"+id, clientv3.WithCountOnly()); err != nil || resp.Count != 1 {
			t.Errorf("task %s, answered, is not in etcd (%v)", id, err)
		}
	}
	if n := keysUnder(t, cl, prefix+"rec/idempotency/"); n != workers*each {
		t.Errorf("%d idempotency records in etcd, want one per call (%d)", n, workers*each)
	}
}

// stormTasks makes workers*each task calls at once and answers the task
// IDs answered, how many were applied with their answer lost (409), and
// the other errors.
func stormTasks(ctx context.Context, c *client.Client, workers, each int, done *atomic.Int64) (map[string]bool, int, []error) {
	var mu sync.Mutex
	ids := map[string]bool{}
	lost := 0
	var errs []error
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				task, err := c.CreateTask(ctx, client.TaskRequest{Action: "validate_design"})
				done.Add(1)
				mu.Lock()
				switch {
				case err == nil && ids[task.ID]:
					errs = append(errs, fmt.Errorf("task %s answered twice", task.ID))
				case err == nil:
					ids[task.ID] = true
				case client.IsStatus(err, http.StatusConflict):
					lost++
				default:
					errs = append(errs, fmt.Errorf("worker %d call %d: %w", w, i, err))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ids, lost, errs
}

// killLeader SIGKILLs the etcd member that leads now and names it.
func killLeader(t *testing.T, ec *etcdtest.Cluster) string {
	cl := ec.Client(t)
	for _, m := range ec.Members {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		resp, err := cl.Status(ctx, m.ClientURL)
		cancel()
		if err == nil && resp.Leader == resp.Header.MemberId {
			m.Stop()
			return m.Name
		}
	}
	t.Error("no etcd member says it leads")
	return "none"
}

// everyNthLost loses the answer to every nth mutating call after the
// server sent it.
type everyNthLost struct {
	n     int64
	calls atomic.Int64
	lost  atomic.Int64
}

func (l *everyNthLost) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.Method == http.MethodGet || l.calls.Add(1)%l.n != 0 {
		return resp, err
	}
	resp.Body.Close()
	l.lost.Add(1)
	return nil, errors.New("connection reset by peer (injected: the answer was lost)")
}

// stormServer serves the API over the lab, its state on st, and answers
// its URL and an operator's token.
func stormServer(t *testing.T, st *etcdstore.Store) (string, string) {
	ctx := t.Context()
	env, err := labrun.Start(ctx, labrun.Options{Design: designtest.Example(t), Store: st, TimeScale: 0.001, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	e, err := env.Engine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	tokens := auth.NewStore(st)
	tok, _, err := tokens.Create(ctx, auth.RoleOperator, "storm")
	if err != nil {
		t.Fatal(err)
	}
	authenticate, _ := api.TokenStore(tokens)
	srv, err := api.New(api.Config{Engine: e, Store: st, Authenticate: authenticate, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL, tok
}

// keysUnder counts etcd's keys under prefix.
func keysUnder(t *testing.T, cl *clientv3.Client, prefix string) int64 {
	t.Helper()
	resp, err := cl.Get(t.Context(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}
