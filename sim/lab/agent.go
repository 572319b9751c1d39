package lab

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	pause "github.com/slipway-dev/slipway/internal/backoff"

	"gopkg.in/yaml.v3"

	"github.com/slipway-dev/slipway/sim/maas"
)

// The node agent: what a deployed machine's bootstrap script does against
// the introspection API, played by the lab.
//
// The user data (cloud-config) writes /etc/slipway/bootstrap.env with
// SLIPWAY_URL and SLIPWAY_TOKEN. After the boot delay the agent, always
// with "Authorization: Bearer $SLIPWAY_TOKEN":
//
//  1. GET $SLIPWAY_URL/v1/self (the node's JSON self description);
//  2. GET $SLIPWAY_URL/v1/self/assets (a tar.gz of the boot action files,
//     plus .slipway/actions.txt, .slipway/units.txt, .slipway/manifest.json);
//  3. for every line "<name> <signaling>" of actions.txt, POSTs
//     {"status":"running"} then {"status":"success"} (or "failure") to
//     $SLIPWAY_URL/v1/self/actions/<name>, each with the image the
//     machine runs, "image": {"name": "custom/gpu-golden", "sha256": ...}
//     (image.go), when the region named one.
//
// Connection errors, 429 and 5xx are retried with a backoff; 401 (the
// token was revoked) and any other answer stop the agent.

// BootstrapEnvPath is the file of the user data that holds the node
// agent's URL and token.
const BootstrapEnvPath = "/etc/slipway/bootstrap.env"

// DefaultBootDelay is how long a deployed machine takes to boot its OS
// before the agent starts, at time scale 1.
const DefaultBootDelay = 30 * time.Second

// InjectedFailure is the message of a boot action report that
// Config.BootstrapFail turned into a failure.
const InjectedFailure = "injected failure"

const (
	agentAttempts   = 8                    // per request, transient failures included
	agentBackoff    = time.Second          // first backoff at time scale 1, then doubled
	agentMaxBackoff = 30 * time.Second     // at time scale 1
	agentMinBackoff = 5 * time.Millisecond // whatever the time scale
	selfLimit       = 1 << 20              // bytes of GET /v1/self
	assetsLimit     = 64 << 20             // bytes of the compressed archive
	filesLimit      = 256 << 20            // bytes of the archive's files, uncompressed
	answerLimit     = 64 << 10             // bytes of any other answer
	agentUserAgent  = "slipway-lab-agent/1"
	actionsFile     = ".slipway/actions.txt" // in the archive
	unitsFile       = ".slipway/units.txt"   // in the archive
)

// BootstrapState is where a machine's node agent is.
type BootstrapState string

// The states of a node agent.
const (
	// BootstrapNone: no agent, the user data has no bootstrap.env (or
	// the machine was never deployed).
	BootstrapNone BootstrapState = ""
	// BootstrapBooting: deployed, the OS is booting (Config.BootDelay).
	BootstrapBooting BootstrapState = "booting"
	// BootstrapRunning: the agent talks to the introspection API.
	BootstrapRunning BootstrapState = "running"
	// BootstrapDone: every action of actions.txt was reported (Reports
	// tell whether as success or failure).
	BootstrapDone BootstrapState = "done"
	// BootstrapFailed: the agent gave up (Err says why: a revoked token,
	// retries exhausted, a bad archive or user data, ...).
	BootstrapFailed BootstrapState = "failed"
	// BootstrapCancelled: the machine was released (or redeployed, or the
	// lab closed) before the agent finished.
	BootstrapCancelled BootstrapState = "cancelled"
)

// File is a file of the assets archive as the agent received it.
type File struct {
	Mode fs.FileMode // permission bits (with setuid, setgid, sticky)
	Data []byte
}

// Action is a line of .slipway/actions.txt.
type Action struct {
	Name      string
	Signaling bool
}

// Report is a boot action report the introspection API answered.
type Report struct {
	Action  string
	Status  string // running, success or failure
	Message string
	Code    int // the HTTP status of the answer
}

// ReportedImage is the image a node agent reports: the "image" of its
// boot action reports, {name: os/release, sha256}.
type ReportedImage struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256,omitempty"`
}

// reportedImage is the image a deployment installed as the agent reports
// it (zero when the region named none).
func reportedImage(img maas.DeployedImage) ReportedImage {
	if img.OSystem == "" || img.Series == "" {
		return ReportedImage{}
	}
	return ReportedImage{Name: img.Name(), SHA256: img.SHA256}
}

// BootstrapRecord is what the node agent of a machine's current (or last)
// deployment did.
type BootstrapRecord struct {
	State BootstrapState
	URL   string // SLIPWAY_URL of the user data
	Self  []byte // the body of GET /v1/self (JSON)
	// Files are the entries of the assets archive by their path in it
	// (relative, like "etc/motd" and ".slipway/actions.txt").
	Files   map[string]File
	Actions []Action // from .slipway/actions.txt
	Units   []string // from .slipway/units.txt
	Reports []Report // in the order sent
	// Image is the image the agent reports with every report (the one
	// the region installed; zero when it installed none it named).
	Image ReportedImage
	Err   string // why the agent failed or was cancelled
	// Finished is when the agent finished (done, failed or cancelled);
	// zero while it runs.
	Finished time.Time
}

func (r BootstrapRecord) clone() BootstrapRecord {
	c := r
	c.Self = bytes.Clone(r.Self)
	if r.Files != nil {
		c.Files = make(map[string]File, len(r.Files))
		for p, f := range r.Files {
			c.Files[p] = File{Mode: f.Mode, Data: bytes.Clone(f.Data)}
		}
	}
	c.Actions = append([]Action(nil), r.Actions...)
	c.Units = append([]string(nil), r.Units...)
	c.Reports = append([]Report(nil), r.Reports...)
	return c
}

// agentRun is one run of the agent (one deployment); guarded by the
// machine's mutex.
type agentRun struct {
	cancel   context.CancelFunc
	done     chan struct{}
	finished bool
	rec      BootstrapRecord
}

// Bootstrap returns what the node agent of the machine's current (or last)
// deployment did so far. The State is BootstrapNone when the user data had
// no bootstrap.env.
func (m *Machine) Bootstrap() BootstrapRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.agent == nil {
		return BootstrapRecord{}
	}
	return m.agent.rec.clone()
}

// WaitBootstrap waits until the node agent of the current deployment
// finished (done, failed or cancelled) and returns its record; it returns
// at once when there is no agent.
func (m *Machine) WaitBootstrap(ctx context.Context) (BootstrapRecord, error) {
	m.mu.Lock()
	run := m.agent
	m.mu.Unlock()
	if run == nil {
		return BootstrapRecord{}, nil
	}
	select {
	case <-run.done:
		return m.Bootstrap(), nil
	case <-ctx.Done():
		return m.Bootstrap(), ctx.Err()
	}
}

// startAgentLocked starts the agent of a new deployment (after cancelling the
// previous one's); m.mu is held.
func (m *Machine) startAgentLocked(userData []byte) {
	m.stopAgentLocked("machine redeployed")
	env, found, err := bootstrapEnv(userData)
	if !found || m.lab == nil {
		return
	}
	m.runAgentLocked(env, err)
}

// RunBootstrap plays an operator who installs a new bootstrap
// environment file on the deployed machine (e.g. the one `orchestrator
// rebootstrap` wrote) and runs the bootstrap script again: the current
// agent is cancelled and a new one runs with env's URL and token, after
// the boot delay like at first boot. An error when no OS is installed.
func (m *Machine) RunBootstrap(env []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.os == "" || m.lab == nil {
		return fmt.Errorf("machine %s runs no deployed OS: there is no bootstrap to run", m.Name)
	}
	m.stopAgentLocked("bootstrap run again")
	m.runAgentLocked(parseEnv(env), nil)
	return nil
}

// runAgentLocked starts an agent with the environment file's settings;
// err says why the file could not be read; m.mu is held.
func (m *Machine) runAgentLocked(env map[string]string, err error) {
	ctx, cancel := context.WithCancel(context.Background())
	run := &agentRun{cancel: cancel, done: make(chan struct{}), rec: BootstrapRecord{State: BootstrapBooting, Image: reportedImage(m.image)}}
	m.agent = run
	base, token := strings.TrimRight(env["SLIPWAY_URL"], "/"), env["SLIPWAY_TOKEN"]
	run.rec.URL = base
	switch {
	case err != nil:
	case base == "" || token == "":
		err = fmt.Errorf("%s lacks SLIPWAY_URL or SLIPWAY_TOKEN", BootstrapEnvPath)
	default:
		if u, perr := url.Parse(base); perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			err = fmt.Errorf("%s: SLIPWAY_URL %q is not an http(s) URL", BootstrapEnvPath, base)
		}
	}
	if err != nil {
		m.finishLocked(run, BootstrapFailed, err.Error())
		return
	}
	l := m.lab
	a := &agent{m: m, run: run, client: l.agentClient, base: base, token: token, scale: l.cfg.TimeScale,
		fail: l.cfg.BootstrapFail[m.Name], image: run.rec.Image}
	go func() {
		start := time.Now()
		if pause.Sleep(ctx, l.scaled(l.cfg.BootDelay)) != nil {
			return // cancelled while booting: the canceller recorded why
		}
		m.waited(maas.Phase{Name: PhaseBoot, Start: start, End: time.Now(), Nominal: max(l.scaled(l.cfg.BootDelay), 0)})
		a.update(func(r *BootstrapRecord) { r.State = BootstrapRunning })
		if err := a.do(ctx); err != nil {
			a.finish(BootstrapFailed, err.Error())
		} else {
			a.finish(BootstrapDone, "")
		}
		cancel()
	}()
}

// stopAgentLocked cancels a running agent, recording why; m.mu is held.
func (m *Machine) stopAgentLocked(why string) {
	if run := m.agent; run != nil && !run.finished {
		m.finishLocked(run, BootstrapCancelled, why)
	}
}

// stopAgent cancels a running agent, recording why.
func (m *Machine) stopAgent(why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopAgentLocked(why)
}

// finishLocked ends a run once (the first caller wins); m.mu is held.
func (m *Machine) finishLocked(run *agentRun, state BootstrapState, why string) {
	if run.finished {
		return
	}
	run.finished = true
	run.rec.State, run.rec.Err, run.rec.Finished = state, why, time.Now()
	close(run.done)
	run.cancel()
}

// agent plays a deployed machine's bootstrap script.
type agent struct {
	m      *Machine
	run    *agentRun
	client *http.Client
	base   string
	token  string
	scale  float64
	fail   string // the action to report as failed (Config.BootstrapFail)
	image  ReportedImage
}

// update changes the record unless the run has finished (a cancelled
// agent writes nothing more).
func (a *agent) update(fn func(r *BootstrapRecord)) bool {
	a.m.mu.Lock()
	defer a.m.mu.Unlock()
	if a.run.finished {
		return false
	}
	fn(&a.run.rec)
	return true
}

func (a *agent) finish(state BootstrapState, why string) {
	if why != "" {
		a.m.consoleAgent("bootstrap %s: %s", state, why)
	} else {
		a.m.consoleAgent("bootstrap %s", state)
	}
	a.m.mu.Lock()
	defer a.m.mu.Unlock()
	a.m.finishLocked(a.run, state, why)
}

func (a *agent) do(ctx context.Context) error {
	_, self, err := a.request(ctx, http.MethodGet, "/v1/self", nil, selfLimit)
	if err != nil {
		return err
	}
	if !json.Valid(self) {
		return fmt.Errorf("GET /v1/self: the answer is not JSON: %s", snippet(self))
	}
	a.update(func(r *BootstrapRecord) { r.Self = self })
	_, archive, err := a.request(ctx, http.MethodGet, "/v1/self/assets", nil, assetsLimit)
	if err != nil {
		return err
	}
	files, err := untarGz(archive)
	if err != nil {
		return fmt.Errorf("GET /v1/self/assets: %w", err)
	}
	a.update(func(r *BootstrapRecord) { r.Files = files })
	af, ok := files[actionsFile]
	if !ok {
		return fmt.Errorf("GET /v1/self/assets: the archive lacks %s", actionsFile)
	}
	actions, err := parseActions(af.Data)
	if err != nil {
		return fmt.Errorf("GET /v1/self/assets: %w", err)
	}
	var units []string
	if uf, ok := files[unitsFile]; ok {
		units = lines(uf.Data)
	}
	a.update(func(r *BootstrapRecord) { r.Actions, r.Units = actions, units })
	node := a.m.Name
	for _, act := range actions {
		if err := a.report(ctx, act.Name, "running", fmt.Sprintf("%s: running boot action %s", node, act.Name)); err != nil {
			return err
		}
		status, msg := "success", fmt.Sprintf("%s: boot action %s done", node, act.Name)
		if act.Name == a.fail {
			status, msg = "failure", InjectedFailure
		}
		if err := a.report(ctx, act.Name, status, msg); err != nil {
			return err
		}
	}
	return nil
}

// report POSTs one status of an action and records the answer.
func (a *agent) report(ctx context.Context, action, status, message string) error {
	a.m.consoleAgent("%s %s: %s", action, status, message)
	rep := map[string]any{"status": status, "message": message}
	if a.image.Name != "" {
		rep["image"] = a.image
	}
	body, _ := json.Marshal(rep)
	code, _, err := a.request(ctx, http.MethodPost, "/v1/self/actions/"+url.PathEscape(action), body, answerLimit)
	if code != 0 {
		a.update(func(r *BootstrapRecord) {
			r.Reports = append(r.Reports, Report{Action: action, Status: status, Message: message, Code: code})
		})
	}
	return err
}

// errStatus is an answer the agent does not retry.
type errStatus struct {
	method, path string
	code         int
	body         []byte
}

func (e *errStatus) Error() string {
	msg := fmt.Sprintf("%s %s: %d %s", e.method, e.path, e.code, http.StatusText(e.code))
	if e.code == http.StatusUnauthorized {
		msg += " (the node's token was revoked or is wrong; the agent stops)"
	}
	if s := snippet(e.body); s != "" {
		msg += ": " + s
	}
	return msg
}

// request sends one request, retrying transient failures (connection
// errors, 429, 5xx) with a backoff. It returns the last status code (0
// when nothing answered).
func (a *agent) request(ctx context.Context, method, p string, body []byte, limit int64) (int, []byte, error) {
	backoff := a.backoff(agentBackoff)
	code := 0
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, method, a.base+p, bytes.NewReader(body))
		if err != nil {
			return 0, nil, fmt.Errorf("%s %s: %w", method, p, err)
		}
		req.Header.Set("Authorization", "Bearer "+a.token)
		req.Header.Set("User-Agent", agentUserAgent)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		var b []byte
		resp, err := a.client.Do(req)
		if err == nil {
			code = resp.StatusCode
			b, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
			resp.Body.Close()
			switch {
			case err != nil:
			case int64(len(b)) > limit:
				return code, nil, fmt.Errorf("%s %s: the answer is larger than %d bytes", method, p, limit)
			case code >= 200 && code < 300:
				return code, b, nil
			case code >= 500 || code == http.StatusTooManyRequests:
				err = &errStatus{method, p, code, b}
			default:
				return code, b, &errStatus{method, p, code, b}
			}
		}
		if ctx.Err() != nil {
			return code, nil, ctx.Err()
		}
		if attempt >= agentAttempts {
			return code, nil, fmt.Errorf("giving up after %d attempts: %w", attempt, err)
		}
		if pause.Sleep(ctx, backoff) != nil {
			return code, nil, ctx.Err()
		}
		backoff = min(2*backoff, a.backoff(agentMaxBackoff))
	}
}

// backoff scales a backoff, never below agentMinBackoff.
func (a *agent) backoff(d time.Duration) time.Duration {
	return max(time.Duration(float64(d)*a.scale), agentMinBackoff)
}

// newAgentClient is the agents' HTTP client: its own transport and
// timeouts (real time, not scaled), no proxy.
func newAgentClient() *http.Client {
	return &http.Client{
		Timeout: 2 * time.Minute,
		Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 30 * time.Second,
			IdleConnTimeout:       30 * time.Second,
			MaxIdleConnsPerHost:   8,
		},
	}
}

// cloudConfig is the part of a #cloud-config document the agent reads.
type cloudConfig struct {
	WriteFiles []struct {
		Path     string `yaml:"path"`
		Content  string `yaml:"content"`
		Encoding string `yaml:"encoding"`
	} `yaml:"write_files"`
}

// bootstrapEnv finds /etc/slipway/bootstrap.env among the write_files of
// a #cloud-config user data and parses it (KEY=VALUE lines). found is
// false when the user data is not a cloud-config or has no such file; err
// says why a found file can't be read.
func bootstrapEnv(userData []byte) (env map[string]string, found bool, err error) {
	if !bytes.HasPrefix(bytes.TrimLeft(userData, " \t\r\n\ufeff"), []byte("#cloud-config")) {
		return nil, false, nil
	}
	var cc cloudConfig
	if err := yaml.Unmarshal(userData, &cc); err != nil {
		return nil, false, nil // not a cloud-config cloud-init could read: no agent
	}
	for _, wf := range cc.WriteFiles {
		if path.Clean(wf.Path) != BootstrapEnvPath {
			continue
		}
		content, err := decodeContent(wf.Content, wf.Encoding)
		if err != nil {
			return nil, true, fmt.Errorf("user data write_files %s: %w", BootstrapEnvPath, err)
		}
		return parseEnv(content), true, nil
	}
	return nil, false, nil
}

// decodeContent decodes a write_files content as cloud-init does.
func decodeContent(content, encoding string) ([]byte, error) {
	b64 := func() ([]byte, error) {
		s := strings.Join(strings.Fields(content), "")
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", encoding, err)
		}
		return b, nil
	}
	gunzip := func(b []byte) ([]byte, error) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", encoding, err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, 1<<20))
		if err != nil {
			return nil, fmt.Errorf("encoding %s: %w", encoding, err)
		}
		return out, nil
	}
	switch strings.ToLower(encoding) {
	case "", "text/plain":
		return []byte(content), nil
	case "b64", "base64":
		return b64()
	case "gz", "gzip":
		return gunzip([]byte(content))
	case "gz+b64", "gz+base64", "gzip+b64", "gzip+base64":
		b, err := b64()
		if err != nil {
			return nil, err
		}
		return gunzip(b)
	}
	return nil, fmt.Errorf("encoding %q is not supported", encoding)
}

// parseEnv reads KEY=VALUE lines (blank lines, # comments and a leading
// "export " allowed; a value may be quoted).
func parseEnv(b []byte) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[k] = v
	}
	return env
}

// untarGz reads a tar.gz into memory: regular files by their path, with
// their permission bits. Directories are skipped; an absolute or escaping
// path, or another kind of entry, is an error.
func untarGz(b []byte) (map[string]File, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("not a gzip archive: %w", err)
	}
	tr := tar.NewReader(zr)
	files := map[string]File{}
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("not a tar archive: %w", err)
		}
		fi := h.FileInfo()
		name := strings.TrimPrefix(h.Name, "./")
		if fi.IsDir() {
			name = strings.TrimSuffix(name, "/")
		}
		if name == "" || name == "." {
			continue
		}
		if !fs.ValidPath(name) {
			return nil, fmt.Errorf("archive entry %q: the path must be relative and clean", h.Name)
		}
		switch {
		case fi.IsDir():
			continue
		case !fi.Mode().IsRegular():
			return nil, fmt.Errorf("archive entry %q: only regular files and directories are supported", h.Name)
		}
		total += h.Size
		if total > filesLimit {
			return nil, fmt.Errorf("the archive's files are larger than %d bytes", filesLimit)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("archive entry %q: %w", h.Name, err)
		}
		files[name] = File{Mode: fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky), Data: data}
	}
}

// parseActions reads .slipway/actions.txt: "<name> <true|false>" lines.
func parseActions(b []byte) ([]Action, error) {
	var out []Action
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 2 || (f[1] != "true" && f[1] != "false") {
			return nil, fmt.Errorf("%s line %d: %q is not \"<name> <true|false>\"", actionsFile, i+1, line)
		}
		out = append(out, Action{Name: f[0], Signaling: f[1] == "true"})
	}
	return out, nil
}

// lines returns the non-blank lines, trimmed.
func lines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// snippet is the start of an answer, for error messages.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// scaled scales a duration by the lab's time scale.
func (l *Lab) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * l.cfg.TimeScale)
}

// stopAgents cancels every running agent (the lab is closing).
func (l *Lab) stopAgents() {
	for _, m := range l.Machines() {
		m.stopAgent("lab closed")
	}
}
