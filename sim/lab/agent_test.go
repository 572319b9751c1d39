package lab

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const testToken = "sni_test-token"

// introspection is a test double of the introspection API's node side.
type introspection struct {
	t   *testing.T
	srv *httptest.Server
	url string

	mu       sync.Mutex
	revoked  bool            // every request answers 401
	fail503  map[string]int  // path → how many 503s to answer first
	revokeAt int             // the POST (1-based) from which answers are 401; 0: never
	block    chan struct{}   // when set, GET /v1/self waits for it or the request's end
	gone     chan struct{}   // closed when a blocked request was cancelled
	requests []string        // "METHOD path" of every request
	posts    []postedReport  // accepted reports
	bodies   map[string]bool // POST bodies seen, raw
}

type postedReport struct {
	Action, Status, Message string
	Image                   *ReportedImage // the report's image (image.go)
}

func newIntrospection(t *testing.T) *introspection {
	t.Helper()
	s := &introspection{t: t, fail503: map[string]int{}, bodies: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/self", s.auth(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		block := s.block
		s.mu.Unlock()
		if block != nil {
			select {
			case <-block:
			case <-r.Context().Done():
				close(s.gone)
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"node":"n1","hostname":"n1","deployment":"1"}`)
	}))
	mux.HandleFunc("GET /v1/self/assets", s.auth(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = w.Write(testArchive(t))
	}))
	mux.HandleFunc("POST /v1/self/actions/{name}", s.auth(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "want JSON", http.StatusUnsupportedMediaType)
			return
		}
		var body struct {
			Status, Message string
			Image           *ReportedImage
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || (body.Status != "running" && body.Status != "success" && body.Status != "failure") {
			http.Error(w, "bad report", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.posts = append(s.posts, postedReport{r.PathValue("name"), body.Status, body.Message, body.Image})
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	s.srv = httptest.NewServer(mux)
	s.url = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// auth checks the bearer token, counts the request and plays the
// scripted 401s and 503s.
func (s *introspection) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.Method+" "+r.URL.Path)
		posts := 0
		for _, q := range s.requests {
			if strings.HasPrefix(q, "POST ") {
				posts++
			}
		}
		revoked := s.revoked || (s.revokeAt > 0 && r.Method == "POST" && posts >= s.revokeAt)
		fail := s.fail503[r.URL.Path] > 0
		if fail {
			s.fail503[r.URL.Path]--
		}
		s.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+testToken || revoked {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, `{"title":"the token is not valid"}`, http.StatusUnauthorized)
			return
		}
		if fail {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		h(w, r)
	}
}

func (s *introspection) reports() []postedReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]postedReport(nil), s.posts...)
}

func (s *introspection) requestLog() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// testArchive is a node's assets: two files, the actions (one signaling,
// one not), the units and a manifest.
func testArchive(t *testing.T) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	add := func(name string, mode int64, data string) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Error(err)
		}
		_, _ = tw.Write([]byte(data))
	}
	_ = tw.WriteHeader(&tar.Header{Name: "etc/", Mode: 0o755, Typeflag: tar.TypeDir})
	add("etc/motd", 0o644, "managed by Slipway\n")
	add("usr/local/sbin/slipway-kubeadm-join", 0o750, "#!/bin/sh\nexec kubeadm join\n")
	add(".slipway/actions.txt", 0o644, "kubernetes-join true\nmotd-addresses false\n")
	add(".slipway/units.txt", 0o644, "slipway-kubeadm-join.service\n")
	add(".slipway/manifest.json", 0o644, `{"files":2}`)
	if err := tw.Close(); err != nil {
		t.Error(err)
	}
	if err := zw.Close(); err != nil {
		t.Error(err)
	}
	return buf.Bytes()
}

// userData is the cloud-config the engine deploys with, its env file
// plain or base64.
func userData(url, token string, b64 bool) []byte {
	env := fmt.Sprintf("SLIPWAY_URL=%s\nSLIPWAY_TOKEN=%s\n", url, token)
	entry := "    content: |\n      " + strings.ReplaceAll(strings.TrimSpace(env), "\n", "\n      ") + "\n"
	if b64 {
		entry = "    encoding: b64\n    content: " + base64.StdEncoding.EncodeToString([]byte(env)) + "\n"
	}
	return []byte("#cloud-config\nwrite_files:\n" +
		"  - path: /etc/slipway/bootstrap.env\n    permissions: '0600'\n" + entry +
		"  - path: /usr/local/sbin/slipway-bootstrap\n    permissions: '0755'\n    content: |\n      #!/bin/sh\n      . /etc/slipway/bootstrap.env\n" +
		"runcmd:\n  - [/usr/local/sbin/slipway-bootstrap]\n")
}

// agentLab is a lab of one generic machine with a tiny time scale.
func agentLab(t *testing.T, cfg Config) (*Lab, *Machine) {
	t.Helper()
	cfg.Machines, cfg.TimeScale = 1, 0.0001
	l, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l, l.Machines()[0]
}

// deploy goes the way MAAS's deploy hook goes.
func deploy(l *Lab, m *Machine, ud []byte) {
	var macs []string
	for _, n := range m.Hardware.NICs {
		macs = append(macs, strings.ToUpper(n.MAC))
	}
	hooks{l}.Deployed("abc123", macs, ud)
}

func waitAgent(t *testing.T, m *Machine) BootstrapRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rec, err := m.WaitBootstrap(ctx)
	if err != nil {
		t.Fatalf("the agent did not finish: %v (%+v)", err, rec)
	}
	return rec
}

func TestAgentBootstraps(t *testing.T) {
	for _, b64 := range []bool{false, true} {
		t.Run(fmt.Sprintf("b64=%v", b64), func(t *testing.T) {
			api := newIntrospection(t)
			l, m := agentLab(t, Config{})
			deploy(l, m, userData(api.url+"/", testToken, b64))
			rec := waitAgent(t, m)
			if rec.State != BootstrapDone || rec.Err != "" || rec.URL != api.url {
				t.Fatalf("record: %+v", rec)
			}
			if !strings.Contains(string(rec.Self), `"hostname":"n1"`) {
				t.Errorf("self: %s", rec.Self)
			}
			wantFiles := map[string]fs.FileMode{"etc/motd": 0o644, "usr/local/sbin/slipway-kubeadm-join": 0o750,
				".slipway/actions.txt": 0o644, ".slipway/units.txt": 0o644, ".slipway/manifest.json": 0o644}
			gotFiles := map[string]fs.FileMode{}
			for p, f := range rec.Files {
				gotFiles[p] = f.Mode
			}
			if d := cmp.Diff(wantFiles, gotFiles); d != "" {
				t.Errorf("files (-want +got):\n%s", d)
			}
			if got := string(rec.Files["etc/motd"].Data); got != "managed by Slipway\n" {
				t.Errorf("etc/motd: %q", got)
			}
			if d := cmp.Diff([]Action{{"kubernetes-join", true}, {"motd-addresses", false}}, rec.Actions); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
			if d := cmp.Diff([]string{"slipway-kubeadm-join.service"}, rec.Units); d != "" {
				t.Errorf("units (-want +got):\n%s", d)
			}
			type rep struct {
				Action, Status string
				Code           int
			}
			var got []rep
			for _, r := range rec.Reports {
				got = append(got, rep{r.Action, r.Status, r.Code})
			}
			want := []rep{{"kubernetes-join", "running", 204}, {"kubernetes-join", "success", 204},
				{"motd-addresses", "running", 204}, {"motd-addresses", "success", 204}}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("reports (-want +got):\n%s", d)
			}
			var server []string
			for _, p := range api.reports() {
				server = append(server, p.Action+" "+p.Status)
			}
			if d := cmp.Diff([]string{"kubernetes-join running", "kubernetes-join success", "motd-addresses running", "motd-addresses success"}, server); d != "" {
				t.Errorf("reports received (-want +got):\n%s", d)
			}
			if d := cmp.Diff([]string{"GET /v1/self", "GET /v1/self/assets", "POST /v1/self/actions/kubernetes-join",
				"POST /v1/self/actions/kubernetes-join", "POST /v1/self/actions/motd-addresses", "POST /v1/self/actions/motd-addresses"},
				api.requestLog()); d != "" {
				t.Errorf("requests (-want +got):\n%s", d)
			}
			// The record is a copy.
			rec.Files["etc/motd"].Data[0] = 'X'
			if string(m.Bootstrap().Files["etc/motd"].Data) != "managed by Slipway\n" {
				t.Error("Bootstrap returns the machine's own record")
			}
		})
	}
}

func TestAgentStopsOn401(t *testing.T) {
	t.Run("wrong token", func(t *testing.T) {
		api := newIntrospection(t)
		l, m := agentLab(t, Config{})
		deploy(l, m, userData(api.url, "sni_other", false))
		rec := waitAgent(t, m)
		if rec.State != BootstrapFailed || !strings.Contains(rec.Err, "GET /v1/self: 401") || rec.Self != nil {
			t.Errorf("record: %+v", rec)
		}
		if got := api.requestLog(); len(got) != 1 {
			t.Errorf("requests after a 401: %v", got)
		}
	})
	t.Run("revoked while reporting", func(t *testing.T) {
		api := newIntrospection(t)
		api.revokeAt = 2
		l, m := agentLab(t, Config{})
		deploy(l, m, userData(api.url, testToken, false))
		rec := waitAgent(t, m)
		if rec.State != BootstrapFailed || !strings.Contains(rec.Err, "POST /v1/self/actions/kubernetes-join: 401") {
			t.Errorf("record: %+v", rec)
		}
		if len(rec.Reports) != 2 || rec.Reports[0].Code != 204 || rec.Reports[1].Code != 401 || rec.Reports[1].Status != "success" {
			t.Errorf("reports: %+v", rec.Reports)
		}
		if got := api.requestLog(); len(got) != 4 {
			t.Errorf("requests: %v, want none after the 401", got)
		}
	})
}

func TestAgentInjectedFailure(t *testing.T) {
	api := newIntrospection(t)
	l, m := agentLab(t, Config{BootstrapFail: map[string]string{"lab-0001": "kubernetes-join"}})
	deploy(l, m, userData(api.url, testToken, false))
	rec := waitAgent(t, m)
	if rec.State != BootstrapDone {
		t.Fatalf("record: %+v", rec)
	}
	got := api.reports()
	want := []postedReport{{"kubernetes-join", "running", "", nil}, {"kubernetes-join", "failure", InjectedFailure, nil},
		{"motd-addresses", "running", "", nil}, {"motd-addresses", "success", "", nil}}
	for i := range got {
		if got[i].Status != "failure" {
			got[i].Message = ""
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("reports received (-want +got):\n%s", d)
	}
	if rec.Reports[1].Status != "failure" || rec.Reports[1].Message != InjectedFailure {
		t.Errorf("recorded: %+v", rec.Reports)
	}
}

func TestAgentRetriesTransientFailures(t *testing.T) {
	api := newIntrospection(t)
	api.fail503["/v1/self/assets"] = 2
	api.fail503["/v1/self/actions/motd-addresses"] = 1
	l, m := agentLab(t, Config{})
	deploy(l, m, userData(api.url, testToken, false))
	rec := waitAgent(t, m)
	if rec.State != BootstrapDone || len(api.reports()) != 4 {
		t.Fatalf("record: %+v; received %v", rec, api.reports())
	}
	if n := len(api.requestLog()); n != 9 {
		t.Errorf("%d requests, want 9 (6 and 3 retries)", n)
	}

	// Nothing listens: connection refused until the attempts run out.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	l2, m2 := agentLab(t, Config{})
	deploy(l2, m2, userData(dead, testToken, false))
	rec = waitAgent(t, m2)
	if rec.State != BootstrapFailed || !strings.Contains(rec.Err, fmt.Sprintf("giving up after %d attempts", agentAttempts)) ||
		!strings.Contains(rec.Err, "refused") {
		t.Errorf("record: %+v", rec)
	}
}

func TestAgentCancelledByRelease(t *testing.T) {
	api := newIntrospection(t)
	api.block, api.gone = make(chan struct{}), make(chan struct{})
	defer close(api.block)
	l, m := agentLab(t, Config{})
	deploy(l, m, userData(api.url, testToken, false))
	waitFor(t, "the agent's first request", func() bool { return len(api.requestLog()) == 1 })
	if st := m.Bootstrap().State; st != BootstrapRunning {
		t.Fatalf("state %q, want running", st)
	}
	var macs []string
	for _, n := range m.Hardware.NICs {
		macs = append(macs, n.MAC)
	}
	hooks{l}.Released("abc123", macs)
	rec := m.Bootstrap()
	if rec.State != BootstrapCancelled || rec.Err != "machine released" {
		t.Errorf("record: %+v", rec)
	}
	select {
	case <-api.gone:
	case <-time.After(5 * time.Second):
		t.Fatal("the agent's request was not cancelled")
	}
	time.Sleep(20 * time.Millisecond)
	if got := api.requestLog(); len(got) != 1 || m.Bootstrap().Self != nil {
		t.Errorf("requests after release: %v", got)
	}

	// Released while booting: the agent never starts.
	l2, m2 := agentLab(t, Config{BootDelay: time.Hour})
	deploy(l2, m2, userData(api.url, testToken, false))
	if st := m2.Bootstrap().State; st != BootstrapBooting {
		t.Fatalf("state %q, want booting", st)
	}
	m2.released()
	if rec := waitAgent(t, m2); rec.State != BootstrapCancelled {
		t.Errorf("record: %+v", rec)
	}
}

func TestNoAgentWithoutBootstrapEnv(t *testing.T) {
	l, m := agentLab(t, Config{})
	deploy(l, m, []byte("#cloud-config\nhostname: n1\n"))
	if rec := m.Bootstrap(); rec.State != BootstrapNone {
		t.Errorf("record: %+v", rec)
	}
	deploy(l, m, []byte("#!/bin/sh\necho SLIPWAY_URL=http://x\n"))
	if rec := waitAgent(t, m); rec.State != BootstrapNone {
		t.Errorf("record: %+v", rec)
	}
	// A bootstrap.env the agent can't read fails it.
	deploy(l, m, []byte("#cloud-config\nwrite_files:\n  - {path: /etc/slipway/bootstrap.env, encoding: zstd, content: x}\n"))
	if rec := waitAgent(t, m); rec.State != BootstrapFailed || !strings.Contains(rec.Err, `"zstd"`) {
		t.Errorf("record: %+v", rec)
	}
	deploy(l, m, []byte("#cloud-config\nwrite_files:\n  - {path: /etc/slipway/bootstrap.env, content: \"SLIPWAY_URL=http://x\"}\n"))
	if rec := waitAgent(t, m); rec.State != BootstrapFailed || !strings.Contains(rec.Err, "SLIPWAY_TOKEN") {
		t.Errorf("record: %+v", rec)
	}
}

func TestBootstrapEnvParsing(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = io.WriteString(zw, "SLIPWAY_URL=http://a:1\nSLIPWAY_TOKEN=sni_z\n")
	_ = zw.Close()
	for name, tc := range map[string]struct{ encoding, content string }{
		"plain":  {"", "# bootstrap\nexport SLIPWAY_URL=\"http://a:1\"\n\nSLIPWAY_TOKEN='sni_z'\n"},
		"b64":    {"b64", base64.StdEncoding.EncodeToString([]byte("SLIPWAY_URL=http://a:1\nSLIPWAY_TOKEN=sni_z\n"))},
		"gz+b64": {"gz+b64", base64.StdEncoding.EncodeToString(gz.Bytes())},
	} {
		doc := fmt.Sprintf("#cloud-config\nwrite_files:\n  - path: /etc/hosts\n    content: x\n  - path: /etc/slipway/bootstrap.env\n    encoding: %q\n    content: %q\n", tc.encoding, tc.content)
		env, found, err := bootstrapEnv([]byte(doc))
		if err != nil || !found || env["SLIPWAY_URL"] != "http://a:1" || env["SLIPWAY_TOKEN"] != "sni_z" {
			t.Errorf("%s: %v %v %v", name, env, found, err)
		}
	}
}

func TestUntarRejectsUnsafePaths(t *testing.T) {
	for _, name := range []string{"/etc/passwd", "../x", "a/../../x"} {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte("x"))
		_ = tw.Close()
		_ = zw.Close()
		if _, err := untarGz(buf.Bytes()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestRunBootstrapAgain: an operator runs the bootstrap again on a
// deployed machine with a new environment file (a reissued token): a new
// agent runs with it; on a machine with no OS there is nothing to run.
func TestRunBootstrapAgain(t *testing.T) {
	api := newIntrospection(t)
	l, m := agentLab(t, Config{})
	if err := m.RunBootstrap([]byte("SLIPWAY_URL='" + api.url + "'\nSLIPWAY_TOKEN='" + testToken + "'\n")); err == nil {
		t.Fatal("a bootstrap ran on a machine with no OS")
	}
	deploy(l, m, []byte("#cloud-config\nhostname: n1\n")) // no bootstrap in the user data: silent
	if rec := m.Bootstrap(); rec.State != BootstrapNone {
		t.Fatalf("record: %+v", rec)
	}
	if err := m.RunBootstrap([]byte("SLIPWAY_URL='" + api.url + "'\nSLIPWAY_TOKEN='" + testToken + "'\n")); err != nil {
		t.Fatal(err)
	}
	if rec := waitAgent(t, m); rec.State != BootstrapDone || rec.URL != api.url || len(rec.Reports) == 0 {
		t.Errorf("record after the bootstrap ran again: %+v", rec)
	}
}
