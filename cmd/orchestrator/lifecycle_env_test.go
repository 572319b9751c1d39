package main

// The randomized lifecycle runs' environment: `orchestrator serve` in a
// process of its own (killed with SIGKILL and started again by the
// runs), the API client that calls it (each mutating call carrying its
// own X-Request-Id, so that its audit record can be counted), and what
// the lab process says: its MAAS events and power states.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/internal/testtool"
)

// lrServe is a serve process and how to start it again.
type lrServe struct {
	bin, dir, base, tok string
	args                []string
	env                 []string // serve's environment (childEnv)
	cmd                 *exec.Cmd
	logPath             string
}

// startLRServe writes serve's configuration (the engine's, the lab's
// MAAS key from the environment, an introspection API on a free port)
// and starts serve on the state with env, its waits scaled like the
// lab's phases.
func startLRServe(t *testing.T, bin, dir, state string, scale float64, env []string) *lrServe {
	engine, err := os.ReadFile(filepath.Join(dir, "engine.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ports := testtool.FreePorts(t, 2)
	cfg := string(engine) + fmt.Sprintf("secretRefs: {env: [SLIPWAY_TEST_MAAS_KEY]}\nadminTokenFile: %s\nintrospectionURL: http://127.0.0.1:%d\ntimeScale: %g\n",
		filepath.Join(dir, "admin.token"), ports[1], scale)
	cfgFile := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &lrServe{bin: bin, dir: dir, env: env, base: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), logPath: filepath.Join(dir, "serve.log"),
		args: []string{"serve", "--config", cfgFile, "--state", state, "--listen", fmt.Sprintf("127.0.0.1:%d", ports[0]),
			"--introspection-listen", fmt.Sprintf("127.0.0.1:%d", ports[1]), "--plugin-dir", dir}}
	t.Cleanup(func() {
		if s.cmd != nil && s.cmd.ProcessState == nil {
			stopProc(s.cmd)
		}
	})
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// start runs serve (its output appended to serve.log) and waits, at most
// 60 s, for its admin token and /healthz.
func (s *lrServe) start() error {
	f, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	s.cmd = exec.Command(s.bin, s.args...)
	s.cmd.Env = s.env
	s.cmd.Stdout, s.cmd.Stderr = f, f
	if err := s.cmd.Start(); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if s.tok == "" {
			if b, err := os.ReadFile(filepath.Join(s.dir, "admin.token")); err == nil {
				s.tok = strings.TrimSpace(string(b))
			}
			continue
		}
		if resp, err := hc.Get(s.base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("serve (pid %d) did not come up in 60 s: %s", s.cmd.Process.Pid, s.logTail())
}

// kill9 kills serve with SIGKILL and reaps it.
func (s *lrServe) kill9() error {
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill -9 serve (pid %d): %w", s.cmd.Process.Pid, err)
	}
	_ = s.cmd.Wait()
	return nil
}

func (s *lrServe) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// ridKey carries a call's X-Request-Id in its context.
type ridKey struct{}

// ridTransport sets X-Request-Id from the request's context.
type ridTransport struct{ base http.RoundTripper }

func (rt ridTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if id, ok := r.Context().Value(ridKey{}).(string); ok {
		r = r.Clone(r.Context())
		r.Header.Set("X-Request-Id", id)
	}
	return rt.base.RoundTrip(r)
}

// client is an API client of serve whose calls carry the request ID
// their context holds (withRID).
func (s *lrServe) client(t *testing.T) *client.Client {
	cl, err := client.New(s.base, s.tok, client.WithHTTPClient(&http.Client{Transport: ridTransport{base: http.DefaultTransport}}),
		client.WithTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func withRID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ridKey{}, id)
}

// simEvent is an event of the lab's MAAS (GET /events/?op=query).
type simEvent struct {
	ID          int    `json:"id"`
	Node        string `json:"node"`
	Hostname    string `json:"hostname"`
	Type        string `json:"type"`
	Description string `json:"description"`
}

// maasGet is a signed GET of the lab's MAAS, retried (at most 20 times)
// through the injected faults that hit it too.
func (lv *labView) maasGet(path string, q url.Values, out any) error {
	last := ""
	for range 20 {
		req, _ := http.NewRequest(http.MethodGet, lv.info.MAASURL+"/api/2.0"+path+"?"+q.Encode(), nil)
		lv.creds.Sign(req)
		resp, err := lv.hc.Do(req)
		if err != nil {
			return fmt.Errorf("GET %s: %w", path, err)
		}
		err = json.NewDecoder(resp.Body).Decode(out)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK && err == nil {
			return nil
		}
		last = resp.Status
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("GET %s: %s 20 times", path, last)
}

// maasRelease releases a machine in the lab's MAAS directly, as an
// operator behind the orchestrator's back would (retried, at most 20
// times, through the injected faults), and waits (at most 30 s) until
// the lab shows it Ready.
func (lv *labView) maasRelease(t *testing.T, systemID string) error {
	last := ""
	for i := 0; i < 20 && last != "200 OK"; i++ {
		req, _ := http.NewRequest(http.MethodPost, lv.info.MAASURL+"/api/2.0/machines/"+systemID+"/",
			strings.NewReader(url.Values{"op": {"release"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		lv.creds.Sign(req)
		resp, err := lv.hc.Do(req)
		if err != nil {
			return fmt.Errorf("release %s in MAAS: %w", systemID, err)
		}
		resp.Body.Close()
		last = resp.Status
	}
	if last != "200 OK" {
		return fmt.Errorf("release %s in MAAS: %s", systemID, last)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, m := range lv.machines(t) {
			if m.SystemID == systemID && m.StatusName == "Ready" {
				return nil
			}
		}
	}
	return fmt.Errorf("machine %s is not Ready 30 s after its release in MAAS", systemID)
}

// eventsAfter are the lab's MAAS events (INFO and above) after ID after,
// oldest first.
func (lv *labView) eventsAfter(after int) ([]simEvent, error) {
	// MAAS answers at most 1,000 events a query: with after=ID the oldest
	// 1,000 after it, newest first (api/events.py); page until a short page.
	var out []simEvent
	for pages := 0; pages < 10000; pages++ {
		var page struct {
			Events []simEvent `json:"events"`
		}
		q := url.Values{"op": {"query"}, "limit": {"1000"}, "after": {strconv.Itoa(after)}}
		if err := lv.maasGet("/events/", q, &page); err != nil {
			return nil, err
		}
		for i := len(page.Events) - 1; i >= 0; i-- {
			if page.Events[i].ID > after {
				out = append(out, page.Events[i])
			}
		}
		if len(page.Events) < 1000 {
			return out, nil
		}
		after = page.Events[0].ID
	}
	return nil, fmt.Errorf("lab events after %d: more than 10,000 pages", after)
}

// powerState asks the lab's MAAS to query the machine's BMC.
func (lv *labView) powerState(systemID string) (string, error) {
	var st struct {
		State string `json:"state"`
	}
	err := lv.maasGet("/machines/"+systemID+"/", url.Values{"op": {"query_power_state"}}, &st)
	return st.State, err
}
