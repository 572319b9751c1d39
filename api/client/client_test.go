package client_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/api/client"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Tokens for the tests against fake servers. They are long and
// distinctive so that a leak into an error message would be seen.
const (
	tokViewer = "tok-viewer-8c1f0d2e9a"
	tokAdmin  = "tok-admin-0f9d8e7c6b"
)

// newFixture serves a real api.Server over the virtual lab running the
// example site.
func newFixture(t *testing.T) *apitest.Server {
	t.Helper()
	return apitest.Start(t, apitest.WithSeed(5))
}

func newClient(t *testing.T, url, token string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(url, token, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitTask polls a task until it ends.
func waitTask(t *testing.T, c *client.Client, id string) api.TaskDetail {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		td, err := c.Task(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if td.Status.Finished() {
			return td
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s still %s", id, td.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noToken fails if an error's text holds one of the tokens.
func noToken(t *testing.T, err error, tokens ...string) {
	t.Helper()
	if err == nil {
		return
	}
	for _, tok := range tokens {
		if strings.Contains(err.Error(), tok) || strings.Contains(fmt.Sprintf("%+v %#v", err, err), tok) {
			t.Errorf("an error shows a token: %v", err)
		}
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// copyExample copies the example site into dir/site-yaml.
func copyExample(t *testing.T) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(designtest.ExampleDir(), "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("example site: %v", err)
	}
	m := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m[filepath.Base(f)] = string(b)
	}
	return writeFiles(t, filepath.Join(t.TempDir(), "site-yaml"), m)
}

func TestArchiveLayout(t *testing.T) {
	site := copyExample(t)
	layer := writeFiles(t, filepath.Join(t.TempDir(), "overrides"), map[string]string{
		"a.yaml": "x: 1\n", "sub/b.yml": "y: 2\n", "notes.txt": "no", ".git/c.yaml": "hidden", "sub/.cache/d.yaml": "hidden",
	})
	single := writeFiles(t, t.TempDir(), map[string]string{"one.yaml": "z: 3\n"})
	ar, err := client.Archive([]string{site, layer, filepath.Join(single, "one.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(ar.Data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	want := []string{"01-overrides/a.yaml", "01-overrides/sub/b.yml", "02-one.yaml/one.yaml"}
	for _, w := range want {
		if !slices.Contains(names, w) {
			t.Errorf("archive lacks %s: %v", w, names)
		}
	}
	for _, n := range names {
		if strings.Contains(n, ".git") || strings.Contains(n, ".cache") || strings.HasSuffix(n, ".txt") {
			t.Errorf("archive holds %s", n)
		}
		if !strings.HasPrefix(n, "00-site-yaml/") && !strings.HasPrefix(n, "01-") && !strings.HasPrefix(n, "02-") {
			t.Errorf("archive entry %s is outside the roots' directories", n)
		}
	}
	if ar.Files["01-overrides/sub/b.yml"] != filepath.Join(layer, "sub", "b.yml") {
		t.Errorf("files map: %v", ar.Files)
	}
	if _, err := client.Archive([]string{t.TempDir()}); err == nil {
		t.Error("an empty root gave no error")
	}
}

func TestDesigns(t *testing.T) {
	s := newFixture(t)
	ctx := t.Context()
	op := newClient(t, s.URL, s.Token[api.RoleOperator])
	site := copyExample(t)

	first, err := op.ApplyDesign(ctx, []string{site})
	if err != nil {
		t.Fatal(err)
	}
	if first.Revision == "" || first.Result == "" {
		t.Fatalf("apply: %+v", first)
	}
	again, err := op.ApplyDesign(ctx, []string{site})
	if err != nil || again.Result != "unchanged" || again.Revision != first.Revision {
		t.Fatalf("second apply: %+v %v", again, err)
	}
	p := filepath.Join(site, "nodes-r01.yaml")
	b, _ := os.ReadFile(p)
	changed := strings.Replace(string(b), "address: 10.13.0.101", "address: 10.13.0.150", 1)
	if changed == string(b) {
		t.Fatal("fixture changed: 10.13.0.101 not in nodes-r01.yaml")
	}
	writeFiles(t, site, map[string]string{"nodes-r01.yaml": changed})
	second, err := op.ApplyDesign(ctx, []string{site})
	if err != nil || second.Result != "created" || second.Diff == nil {
		t.Fatalf("third apply: %+v %v", second, err)
	}
	if sum := second.Diff.Summary(); !strings.Contains(sum, "Node: 0 added, 0 removed, 1 changed") {
		t.Errorf("diff summary %q", sum)
	}

	viewer := newClient(t, s.URL, s.Token[api.RoleViewer])
	hist, err := viewer.Designs(ctx)
	if err != nil || len(hist) < 2 || hist[len(hist)-1].ID != second.Revision {
		t.Fatalf("designs: %+v %v", hist, err)
	}
	if h := hist[len(hist)-1]; h.Applied.IsZero() || h.Created.IsZero() || h.Counts[design.KindNode] != 8 || h.Seq == 0 || len(h.Roots) == 0 {
		t.Errorf("the last apply decoded incompletely: %+v", h)
	}
	if h := hist[len(hist)-1]; len(h.Roots) != 1 || h.Roots[0] != site {
		t.Errorf("the apply history names roots %q, want the client's %q", h.Roots, site)
	}
	cur, err := viewer.Design(ctx, "current")
	if err != nil || cur.ID != second.Revision || len(cur.Nodes) != 8 {
		t.Fatalf("design current: %+v %v", cur, err)
	}
	df, err := viewer.Diff(ctx, second.Revision[:12], first.Revision)
	if err != nil || len(df.Kind(design.KindNode).Changed) != 1 {
		t.Fatalf("diff: %+v %v", df, err)
	}
	if _, err := viewer.Diff(ctx, second.Revision, ""); err != nil {
		t.Fatalf("diff against the previous: %v", err)
	}
	rn, err := viewer.DesignNode(ctx, "current", "r01-cmp01")
	if err != nil || rn.Metadata.Name != "r01-cmp01" || rn.Kind != "Node" {
		t.Fatalf("design node: %+v %v", rn, err)
	}
	_, err = viewer.DesignNode(ctx, "current", "ghost")
	if !client.IsStatus(err, http.StatusNotFound) {
		t.Fatalf("missing design node: %v", err)
	}

	// A layer with errors: 422 with the findings, naming the local file.
	layer := writeFiles(t, filepath.Join(t.TempDir(), "bad-layer"), map[string]string{
		"zz-bad.yaml":    "apiVersion: slipway/v1\nkind: Network\nmetadata: {name: extra}\nspec:\n  cidr: 10.50.0.1/24\n",
		".hidden/x.yaml": "kind: Nope\n",
	})
	badFile := filepath.Join(layer, "zz-bad.yaml")
	_, err = op.ApplyDesign(ctx, []string{site, layer})
	var pe *client.ProblemError
	if !errors.As(err, &pe) || pe.Status != http.StatusUnprocessableEntity || len(pe.Findings) != 1 {
		t.Fatalf("invalid apply: %v (%+v)", err, pe)
	}
	if fd := pe.Findings[0]; fd.File != badFile || fd.Line != 5 || fd.Rule != "cidr" {
		t.Errorf("finding %+v: want %s:5 cidr", fd, badFile)
	}
	if pe.RequestID == "" || !strings.Contains(pe.Error(), "HTTP 422: ") || !strings.Contains(pe.Error(), "(request "+pe.RequestID+")") {
		t.Errorf("problem error %q", pe.Error())
	}
	noToken(t, err, slices.Collect(maps.Values(s.Token))...)
	v, err := viewer.ValidateDesign(ctx, []string{site, layer})
	if err != nil || v.Valid || v.Errors != 1 || v.Nodes != 8 || v.Findings[0].File != badFile {
		t.Fatalf("validate: %+v %v", v, err)
	}
	if cur, _ := viewer.Design(ctx, "current"); cur.ID != second.Revision {
		t.Error("an invalid design was stored")
	}
	// A viewer may validate but not apply.
	_, err = viewer.ApplyDesign(ctx, []string{site})
	if !client.IsStatus(err, http.StatusForbidden) {
		t.Fatalf("viewer apply: %v", err)
	}
	noToken(t, err, slices.Collect(maps.Values(s.Token))...)
}

func TestTasksNodesEvents(t *testing.T) {
	s := newFixture(t)
	ctx := t.Context()
	op := newClient(t, s.URL, s.Token[api.RoleOperator])
	viewer := newClient(t, s.URL, s.Token[api.RoleViewer])

	prep, err := op.CreateTask(ctx, client.TaskRequest{Action: record.ActionPrepareSite})
	if err != nil {
		t.Fatal(err)
	}
	if td := waitTask(t, viewer, prep.ID); td.Status != record.TaskSucceeded {
		t.Fatalf("prepare_site: %s %s", td.Status, td.Message)
	}
	dep, err := op.CreateTask(ctx, client.TaskRequest{Action: record.ActionDeployNodes,
		NodeFilter: apitypes.Filter{Sets: []apitypes.NodeFilter{{Names: []string{s.Node}}}}})
	if err != nil {
		t.Fatal(err)
	}
	td := waitTask(t, viewer, dep.ID)
	if td.Status != record.TaskSucceeded || len(td.Results) != 1 || td.Results[0].Node != s.Node || !strings.HasPrefix(td.Requester, "api:operator") {
		t.Fatalf("deploy: %+v", td)
	}

	tasks, err := viewer.Tasks(ctx, client.TaskQuery{})
	if err != nil || tasks.Total != 2 || tasks.Items[0].ID != dep.ID {
		t.Fatalf("tasks: %+v %v", tasks, err)
	}
	tasks, err = viewer.Tasks(ctx, client.TaskQuery{Action: []string{"prepare_site"}, Limit: 1})
	if err != nil || tasks.Total != 1 || tasks.Items[0].ID != prep.ID || tasks.Limit != 1 {
		t.Fatalf("tasks of one action: %+v %v", tasks, err)
	}

	nodes, err := viewer.Nodes(ctx, client.NodeQuery{Stage: []string{"deployed"}})
	if err != nil || nodes.Total != 1 || nodes.Items[0].Name != s.Node || nodes.Items[0].MachineID == "" {
		t.Fatalf("deployed nodes: %+v %v", nodes, err)
	}
	all, err := viewer.Nodes(ctx, client.NodeQuery{Offset: 2, Limit: 3})
	if err != nil || all.Total != 8 || len(all.Items) != 3 || all.Offset != 2 {
		t.Fatalf("a page of nodes: %+v %v", all, err)
	}
	if rack := all.Items[0].Rack; rack != "" {
		inRack, err := viewer.Nodes(ctx, client.NodeQuery{Rack: []string{rack}})
		if err != nil || inRack.Total == 0 || inRack.Total == 8 {
			t.Fatalf("nodes in rack %s: %+v %v", rack, inRack, err)
		}
	}
	nd, err := viewer.Node(ctx, s.Node)
	if err != nil || nd.Design == nil || nd.Record == nil || nd.Record.Stage != record.StageDeployed || len(nd.Events) == 0 {
		t.Fatalf("node: %+v %v", nd, err)
	}

	// Verbs.
	if _, err := op.TaskVerb(ctx, prep.ID, record.VerbRerun); err != nil {
		t.Fatalf("rerun: %v", err)
	}
	waitTask(t, viewer, prep.ID)
	_, err = op.TaskVerb(ctx, prep.ID, record.VerbResume)
	if !client.IsStatus(err, http.StatusConflict) {
		t.Fatalf("resume of a site task: %v", err)
	}
	rec, err := op.NodeVerb(ctx, s.Node, client.NodeMarkManual, "disk swap")
	if err != nil || !rec.Frozen || rec.FrozenWhy != "disk swap" {
		t.Fatalf("mark-manual-intervention: %+v %v", rec, err)
	}
	if rec, err = op.NodeVerb(ctx, s.Node, client.NodeReleaseManual, ""); err != nil || rec.Frozen {
		t.Fatalf("release-manual: %+v %v", rec, err)
	}
	if _, err = op.NodeVerb(ctx, s.Node, client.NodeAdopt, ""); err != nil {
		t.Fatalf("adopt: %v", err)
	}
	if _, err = op.NodeVerb(ctx, s.Node, "explode", ""); err == nil {
		t.Fatal("an unknown node verb was sent")
	}
	if _, err = op.Rebootstrap(ctx, s.Node); !client.IsStatus(err, http.StatusForbidden) {
		t.Fatalf("rebootstrap as an operator: %v", err)
	}
	rb, err := newClient(t, s.URL, s.Token[api.RoleAdmin]).Rebootstrap(ctx, s.Node)
	if err != nil || rb.Task != dep.ID || !strings.Contains(rb.Env, "SLIPWAY_TOKEN='sni_") || rb.Node.Stage != record.StageBootstrap {
		t.Fatalf("rebootstrap: task %q, stage %s, %v", rb.Task, rb.Node.Stage, err)
	}

	evs, err := viewer.Events(ctx, 0, dep.ID, "", 0)
	if err != nil || len(evs) == 0 || evs[len(evs)-1].Message == "" {
		t.Fatalf("events: %d %v", len(evs), err)
	}
	two, err := viewer.Events(ctx, evs[0].Seq, "", s.Node, 2)
	if err != nil || len(two) != 2 || two[0].Seq <= evs[0].Seq || two[0].Node != s.Node {
		t.Fatalf("events after %d of %s: %+v %v", evs[0].Seq, s.Node, two, err)
	}

	// Refusals are problems with the status, the detail and the request.
	_, err = viewer.CreateTask(ctx, client.TaskRequest{Action: record.ActionDeployNodes})
	var pe *client.ProblemError
	if !errors.As(err, &pe) || pe.Status != http.StatusForbidden || pe.RequestID == "" ||
		err.Error() != "HTTP 403: "+pe.Detail+" (request "+pe.RequestID+")" || !strings.Contains(pe.Detail, "needs operator") {
		t.Fatalf("viewer deploy: %v", err)
	}
	noToken(t, err, slices.Collect(maps.Values(s.Token))...)
	_, err = newClient(t, s.URL, "tok-bogus-value-123").Tasks(ctx, client.TaskQuery{})
	if !client.IsStatus(err, http.StatusUnauthorized) || strings.Contains(err.Error(), "tok-bogus-value-123") {
		t.Fatalf("bogus token: %v", err)
	}
	_, err = op.CreateTask(ctx, client.TaskRequest{Action: "nope"})
	if !client.IsStatus(err, http.StatusBadRequest) {
		t.Fatalf("unknown action: %v", err)
	}
	_, err = op.Task(ctx, "no-such-task")
	if !client.IsStatus(err, http.StatusNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
}

func TestAdminCalls(t *testing.T) {
	s := newFixture(t)
	ctx := t.Context()
	admin := newClient(t, s.URL, s.Token[api.RoleAdmin])
	const value = "s3cr3t-value-never-shown"
	if err := admin.PutSecret(ctx, "bmc-admin", value); err != nil {
		t.Fatal(err)
	}
	names, err := admin.Secrets(ctx)
	if err != nil || !slices.ContainsFunc(names, func(n api.SecretInfo) bool { return n.Name == "bmc-admin" }) {
		t.Fatalf("secrets: %+v %v", names, err)
	}
	if err := admin.DeleteSecret(ctx, "bmc-admin"); err != nil {
		t.Fatal(err)
	}
	err = admin.DeleteSecret(ctx, "bmc-admin")
	if !client.IsStatus(err, http.StatusNotFound) || strings.Contains(err.Error(), value) {
		t.Fatalf("delete twice: %v", err)
	}

	ct, err := admin.CreateToken(ctx, api.RoleViewer, "ci")
	if err != nil || ct.Token == "" || ct.ID == "" || ct.Role != api.RoleViewer || ct.Name != "ci" {
		t.Fatalf("create token: %+v %v", ct, err)
	}
	fresh := newClient(t, s.URL, ct.Token)
	if _, err := fresh.Nodes(ctx, client.NodeQuery{}); err != nil {
		t.Fatalf("the new token: %v", err)
	}
	toks, err := admin.Tokens(ctx)
	j := slices.IndexFunc(toks, func(p apitypes.TokenInfo) bool { return p.ID == ct.ID })
	if err != nil || j < 0 {
		t.Fatalf("tokens: %+v %v", toks, err)
	}
	// The list says when each token was made and last used (the new one
	// was used once, just above).
	if got := toks[j]; !got.Created.Equal(ct.Created) || got.Created.IsZero() || got.LastUsed.Before(got.Created) {
		t.Fatalf("token %s listed as %+v, created %v: want its creation and last use", ct.ID, got, ct.Created)
	}
	i := slices.IndexFunc(toks, func(p apitypes.TokenInfo) bool { return p.Role == api.RoleAdmin && p.Name == "admin" })
	if i < 0 {
		t.Fatalf("no admin token in %+v", toks)
	}
	adminID := toks[i].ID
	if err := admin.RevokeToken(ctx, ct.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Nodes(ctx, client.NodeQuery{}); !client.IsStatus(err, http.StatusUnauthorized) {
		t.Fatalf("a revoked token: %v", err)
	}
	_, err = admin.CreateToken(ctx, "root", "x")
	if !client.IsStatus(err, http.StatusBadRequest) {
		t.Fatalf("a token with a bad role: %v", err)
	}

	page, err := admin.Audit(ctx, 0, 0)
	recs := page.Items
	if err != nil || len(recs) < 5 || page.More || page.Next != recs[len(recs)-1].Seq {
		t.Fatalf("audit: %d records, more %v, next %d: %v", len(recs), page.More, page.Next, err)
	}
	if r := recs[0]; r.Seq == 0 || r.Who.ID != adminID || r.Method != "PUT" || r.Outcome != "ok" {
		t.Errorf("first audit record %+v", r)
	}
	tail, err := admin.Audit(ctx, recs[1].Seq, 1)
	if err != nil || len(tail.Items) != 1 || tail.Items[0].Seq != recs[2].Seq || !tail.More || tail.Next != recs[2].Seq {
		t.Fatalf("audit after %d: %+v %v", recs[1].Seq, tail, err)
	}
	_, err = newClient(t, s.URL, s.Token[api.RoleOperator]).Audit(ctx, 0, 0)
	if !client.IsStatus(err, http.StatusForbidden) {
		t.Fatalf("operator audit: %v", err)
	}
	noToken(t, err, slices.Collect(maps.Values(s.Token))...)
}

// TestStreamReconnect: the event stream survives a dropped connection,
// resuming with Last-Event-ID, without a gap or a repeat.
func TestStreamReconnect(t *testing.T) {
	s := newFixture(t)
	// A server of its own, to drop connections and record the stream
	// requests' Last-Event-ID.
	var mu sync.Mutex
	var lastIDs []string
	h := s.API.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/events/stream") {
			mu.Lock()
			lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	c := newClient(t, ts.URL, s.Token[api.RoleViewer], client.WithStreamTiming(20*time.Millisecond, 5*time.Second))
	first, err := s.Engine.Submit(t.Context(), record.Request{Action: record.ActionValidateDesign, Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	var got []apitypes.Event
	var second record.Task
	dropped := false
	err = c.StreamEvents(ctx, 0, "", "", func(ev apitypes.Event) error {
		got = append(got, ev)
		if !dropped && ev.Task == first.ID {
			dropped = true
			ts.CloseClientConnections()
			t2, err := s.Engine.Submit(ctx, record.Request{Action: record.ActionValidateDesign, Requester: "test"})
			if err != nil {
				return err
			}
			second = t2
		}
		if second.ID != "" && ev.Task == second.ID && ev.Kind == "task" && strings.Contains(ev.Message, "succeeded") {
			return client.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("stream: %v (%d events)", err, len(got))
	}
	mu.Lock()
	streams := slices.Clone(lastIDs)
	mu.Unlock()
	if len(streams) < 2 || streams[0] != "" || streams[1] == "" {
		t.Fatalf("stream requests' Last-Event-ID: %q (want a reconnect carrying the last ID)", streams)
	}
	want, err := c.Events(t.Context(), 0, "", "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range got {
		if i >= len(want) || ev.Seq != want[i].Seq {
			t.Fatalf("event %d: seq %d, want the stored sequence %v", i, ev.Seq, seqs(want))
		}
	}
}

func seqs(evs []apitypes.Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

// TestStreamSilentConnection: a connection that goes silent is dropped
// and opened again from the last ID; a refusal ends the stream at once.
func TestStreamSilentConnection(t *testing.T) {
	var mu sync.Mutex
	var ids []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+tokViewer {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(401)
			fmt.Fprint(w, `{"type":"about:blank","title":"Unauthorized","status":401,"detail":"the bearer token is not valid","request_id":"r1"}`)
			return
		}
		mu.Lock()
		ids = append(ids, r.Header.Get("Last-Event-ID"))
		n := len(ids)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprintf(w, "id: %d\r\nevent: transition\r\ndata: {\"seq\":%d,\"kind\":\"transition\",\r\ndata: \"message\":\"m%d\"}\r\n\r\n", n, n, n)
		w.(http.Flusher).Flush()
		<-r.Context().Done() // then silence
	}))
	defer ts.Close()
	c, err := client.New(ts.URL+"/", tokViewer, client.WithStreamTiming(10*time.Millisecond, 150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	err = c.StreamEvents(t.Context(), 0, "", "", func(ev apitypes.Event) error {
		got = append(got, fmt.Sprintf("%d:%s", ev.Seq, ev.Message))
		if len(got) == 3 {
			return client.ErrStop
		}
		return nil
	})
	if err != nil || strings.Join(got, " ") != "1:m1 2:m2 3:m3" {
		t.Fatalf("stream: %v %v", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(ids, ",") != ",1,2" {
		t.Errorf("Last-Event-ID of the connections: %q", ids)
	}
	bad, _ := client.New(ts.URL, "nope")
	err = bad.StreamEvents(t.Context(), 0, "", "", func(apitypes.Event) error { return nil })
	if !client.IsStatus(err, 401) || err.Error() != "HTTP 401: the bearer token is not valid (request r1)" {
		t.Fatalf("refused stream: %v", err)
	}
	// The caller's context ends the stream with its error.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	err = c.StreamEvents(ctx, 0, "", "", func(apitypes.Event) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stream after its context ended: %v", err)
	}
}

func TestTLSWithCAFile(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[{"name":"a"}]`)
	}))
	defer ts.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	if err := os.WriteFile(ca, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(ts.URL, tokAdmin, client.WithCAFile(ca))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := c.Secrets(t.Context()); err != nil || len(s) != 1 || s[0].Name != "a" {
		t.Fatalf("with the CA: %+v %v", s, err)
	}
	plain, _ := client.New(ts.URL, tokAdmin)
	_, err = plain.Secrets(t.Context())
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v", err)
	}
	noToken(t, err, tokViewer, tokAdmin)
	notPEM := filepath.Join(t.TempDir(), "x.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := client.New(ts.URL, tokAdmin, client.WithCAFile(notPEM)); err == nil {
		t.Error("a CA file without a certificate was accepted")
	}
}

func TestNewAndOddAnswers(t *testing.T) {
	for _, u := range []string{"", "localhost:8080", "ftp://x", "http://", "https://u:" + tokAdmin + "@host", "http://h/?a=1"} {
		_, err := client.New(u, tokAdmin)
		if err == nil {
			t.Errorf("New(%q) accepted", u)
		}
		noToken(t, err, tokViewer, tokAdmin)
	}
	if _, err := client.New("http://h", "a\nb"); err == nil {
		t.Error("a token with a line break was accepted")
	}
	// Behind a proxy with a path prefix; a proxy's HTML error page.
	var paths []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.EscapedPath())
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, "<html><body>bad gateway</body></html>")
	}))
	defer ts.Close()
	c, err := client.New(ts.URL+"/slipway/", tokAdmin)
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%v %+v %#v %s", c, c, c, c); strings.Contains(s, tokAdmin) {
		t.Errorf("the client prints its token: %s", s)
	}
	_, err = c.Node(t.Context(), "a/b c")
	var pe *client.ProblemError
	if !errors.As(err, &pe) || pe.Status != 502 || !strings.Contains(pe.Detail, "not an answer of the Slipway API") {
		t.Fatalf("502 page: %v", err)
	}
	if len(paths) != 1 || paths[0] != "/slipway/api/v1/nodes/a%2Fb%20c" {
		t.Errorf("request path %q", paths)
	}
	// Nobody listening.
	ts.Close()
	_, err = c.Tasks(t.Context(), client.TaskQuery{})
	if err == nil || !strings.Contains(err.Error(), "GET http://") {
		t.Fatalf("no server: %v", err)
	}
	noToken(t, err, tokViewer, tokAdmin)
}
