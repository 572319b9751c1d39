package introspection

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/internal/gensite"
)

// cached reports whether the token's session is in the cache, and its
// rendered answer when it has one.
func (e *env) cached(tok string) (*session, []byte) {
	ss, ok := e.srv.tokens.get(hashOf(tok))
	if !ok {
		return nil, nil
	}
	if a := ss.self.Load(); a != nil {
		return ss, a.body
	}
	return ss, nil
}

// TestSelfCacheRevoked: a token whose session and answer are cached is
// refused as soon as it is rotated, reissued or revoked, on every route.
func TestSelfCacheRevoked(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	t1 := e.issue("r01-cmp01", "1")
	for range 3 {
		e.self(t1)
	}
	if ss, b := e.cached(t1); ss == nil || b == nil {
		t.Fatal("the session and answer of a token used are not cached: the test tests nothing")
	}
	refused := func(what, tok string) {
		t.Helper()
		for _, path := range []string{"/v1/self", "/v1/self/packages", "/v1/nocloud/" + tok + "/meta-data"} {
			hdr := tok
			if strings.HasPrefix(path, "/v1/nocloud/") {
				hdr = ""
			}
			if r := e.do("GET", path, hdr, nil); r.code != 401 {
				t.Errorf("%s token on %s: %d %s, want 401", what, strings.ReplaceAll(path, tok, "TOKEN"), r.code, r.body)
			}
		}
		if ss, _ := e.cached(tok); ss != nil {
			t.Errorf("%s token still cached", what)
		}
	}
	// Rotated by the next deployment.
	t2 := e.issue("r01-cmp01", "2")
	refused("a rotated", t1)
	if s := e.self(t2); s.Deployment != "2" {
		t.Errorf("the new token answers deployment %q", s.Deployment)
	}
	// Reissued for the same deployment.
	if _, err := e.srv.Reissue(ctx, e.d, "r01-cmp01", "2"); err != nil {
		t.Fatal(err)
	}
	refused("a reissued", t2)
	t3 := e.srv.tokenFor("r01-cmp01", "2", 1)
	if s := e.self(t3); s.Deployment != "2" || s.Name != "r01-cmp01" {
		t.Errorf("the reissued token answers %s/%s", s.Name, s.Deployment)
	}
	// Revoked.
	if err := e.srv.EndDeployment(ctx, "r01-cmp01"); err != nil {
		t.Fatal(err)
	}
	refused("a revoked", t3)
}

// TestSelfCacheNewRevision: the same token issued again for its
// deployment with a changed design answers the new design at once, not
// the cached answer of the old one; another node's token never gets this
// node's cached answer.
func TestSelfCacheNewRevision(t *testing.T) {
	e := newEnv(t)
	tok := e.issue("r01-cmp01", "1")
	other := e.issue("r01-cmp02", "1")
	before := e.do("GET", "/v1/self", tok, nil).body
	if _, b := e.cached(tok); string(b) != string(before) {
		t.Fatal("the answer is not cached: the test tests nothing")
	}
	d2 := *e.d
	d2.Nodes = cloneNodes(e.d.Nodes)
	n := *e.d.Nodes["r01-cmp01"]
	n.Spec.Rack = "r77"
	d2.Nodes["r01-cmp01"] = &n
	e.store(&d2)
	if e.issueWith(&d2, "r01-cmp01", "1") != tok {
		t.Fatal("another token for the same deployment")
	}
	if s := e.self(tok); s.Rack != "r77" {
		t.Errorf("rack %q: the cached answer of the old revision was served", s.Rack)
	}
	if s := e.self(other); s.Name != "r01-cmp02" {
		t.Errorf("r01-cmp02's token answered %s", s.Name)
	}
	// And back: the answer follows the record, whatever is cached.
	e.issueWith(e.d, "r01-cmp01", "1")
	if got := e.do("GET", "/v1/self", tok, nil).body; string(got) != string(before) {
		t.Errorf("back on the first revision: %s, want %s", got, before)
	}
}

func cloneNodes(m map[string]*design.Node) map[string]*design.Node {
	out := make(map[string]*design.Node, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestTokenCacheGeneration: a record read before a change (issue,
// reissue, revoke) and put after it is not cached.
func TestTokenCacheGeneration(t *testing.T) {
	var c tokenCache
	h := hashOf("sni_x")
	gen := c.generation(h)
	c.forget(h.String()) // the change lands between the read and the put
	c.put(h, &session{hash: h}, gen)
	if _, ok := c.get(h); ok {
		t.Error("a session read before a revocation was cached")
	}
	// A change to a token of the same shard counts too (conservative).
	var other tokenHash
	for i := 0; ; i++ {
		if other = hashOf(strconv.Itoa(i)); other != h && c.shard(other) == c.shard(h) {
			break
		}
	}
	gen = c.generation(h)
	c.forget(other.String())
	c.put(h, &session{hash: h}, gen)
	if _, ok := c.get(h); ok {
		t.Error("a session read before a change in its shard was cached")
	}
	c.put(h, &session{hash: h}, c.generation(h))
	if _, ok := c.get(h); !ok {
		t.Fatal("not cached")
	}
	c.forget("", "zz", h.String())
	if _, ok := c.get(h); ok {
		t.Error("forget left it")
	}
}

// TestAppendSelf: appendSelf writes the bytes json.Marshal(selfOf(...))
// does, for every node of the example design, of variants of it that
// take the rarer branches, and of a generated site.
func TestAppendSelf(t *testing.T) {
	check := func(what string, d *design.Design) {
		t.Helper()
		parts := newSelfParts(d)
		for _, name := range d.NodeNames() {
			want, err := json.Marshal(selfOf(d, d.Nodes[name], "dep-1"))
			if err != nil {
				t.Fatal(err)
			}
			if got := appendSelf(nil, parts, d.Nodes[name], "dep-1"); string(got) != string(want) {
				t.Errorf("%s, node %s:\n got %s\nwant %s", what, name, got, want)
				return
			}
		}
	}
	ex := designtest.Example(t)
	check("example", ex)

	// Variants: no site; odd strings; a missing link and network; network
	// DNS with an empty server list; kernel parameters; duplicate
	// addressing; an empty interface; storage without partitions.
	v := *ex
	v.Site = nil
	check("no site", &v)
	v = *ex
	site := *ex.Site
	site.Spec.Domain = "<ex&mple>.net"
	site.Spec.DNS.Search = []string{"a.example", "b.example"}
	v.Site = &site
	v.Networks = map[string]*design.Network{}
	for k, nw := range ex.Networks {
		c := *nw
		c.Spec.DNS = design.NetworkDNS{Domain: k + ".example", Servers: []string{}}
		c.Spec.Routes = append(c.Spec.Routes, design.Route{To: "0.0.0.0/0", Via: "10.0.0.1", Metric: 7}, design.Route{To: "10/8", Via: "x"})
		c.Spec.CIDR += "\u2028"
		v.Networks[k] = &c
	}
	v.Nodes = cloneNodes(ex.Nodes)
	for k, n := range ex.Nodes {
		c := *n
		c.Metadata.Labels = map[string]string{"z": "\x01\"\\\t\n\r\b\f", "a": "\xff<>&é\u2029"}
		if len(k)%2 == 0 {
			c.Spec.PrimaryNetwork = "no-such-net"
		}
		c.Spec.Platform.Kernel = "hwe"
		c.Spec.Platform.KernelParams = map[string]string{"quiet": "", "console": "ttyS0,115200"}
		c.Spec.Addressing = append(slices.Clone(c.Spec.Addressing), design.Address{Network: c.Spec.PrimaryNetwork, Address: "10.9.9.9"})
		c.Spec.Interfaces = make(map[string]design.Interface, len(n.Spec.Interfaces)+2)
		for in, i := range n.Spec.Interfaces {
			c.Spec.Interfaces[in] = i
		}
		c.Spec.Interfaces["zz-missing"] = design.Interface{Link: "no-such-link", Networks: []string{"no-such-net", c.Spec.PrimaryNetwork}}
		c.Spec.Interfaces["aa-empty"] = design.Interface{Link: "no-such-link"}
		c.Spec.Storage.Devices = map[string]design.StorageDevice{"sdz": {VolumeGroup: "vgz"}}
		for dn, sd := range n.Spec.Storage.Devices {
			c.Spec.Storage.Devices[dn] = sd
		}
		v.Nodes[k] = &c
	}
	check("variants", &v)

	// More: network DNS with servers (with and without a domain), a
	// primary network naming servers of its own, one not in the design,
	// storage with both devices and volume groups.
	v = *ex
	v.Networks = map[string]*design.Network{}
	for i, k := range slices.Sorted(maps.Keys(ex.Networks)) {
		c := *ex.Networks[k]
		c.Spec.DNS = design.NetworkDNS{Servers: []string{"10.0.0.53", "10.0.1.53"}}
		if i%2 == 0 {
			c.Spec.DNS.Domain = k + ".example"
		}
		v.Networks[k] = &c
	}
	v.Nodes = cloneNodes(ex.Nodes)
	for i, k := range ex.NodeNames() {
		c := *ex.Nodes[k]
		if i%2 == 0 {
			c.Spec.PrimaryNetwork = "no-such-net"
		}
		c.Spec.Storage.Devices = map[string]design.StorageDevice{"sdy": {VolumeGroup: "vgy"}}
		c.Spec.Storage.VolumeGroups = map[string]design.VolumeGroup{"vgy": {LogicalVolumes: map[string]design.LogicalVolume{
			"data": {Size: "100%FREE", Filesystem: &design.Filesystem{FSType: "xfs", Mountpoint: "/data"}}}}, "vga": {}}
		v.Nodes[k] = &c
	}
	check("more variants", &v)

	dir := t.TempDir()
	if _, err := gensite.Write(dir, gensite.Options{Nodes: 300}); err != nil {
		t.Fatal(err)
	}
	res, err := yamlingest.Load(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	g, fs := design.Build(res.Sources)
	if fs.HasErrors() {
		t.Fatal(fs[0])
	}
	check("generated", g)
}

// TestSelfFields fails when a type of the /v1/self view gains, loses or
// renames a field: appendSelf writes each field by hand and must be
// taught the change (TestAppendSelf then checks it).
func TestSelfFields(t *testing.T) {
	want := map[reflect.Type]string{
		reflect.TypeFor[Self]():                  "name hostname domain,omitempty fqdn deployment rack,omitempty labels,omitempty tags,omitempty primaryNetwork,omitempty dns ntpServers,omitempty sshKeys,omitempty interfaces storage platform bootActions",
		reflect.TypeFor[DNS]():                   "servers,omitempty search,omitempty",
		reflect.TypeFor[Interface]():             "name link devices networks,omitempty",
		reflect.TypeFor[Network]():               "name cidr prefix vlan,omitempty tagged mtu address,omitempty gateway,omitempty dns,omitzero routes,omitempty",
		reflect.TypeFor[NetworkDNS]():            "domain,omitempty servers,omitempty",
		reflect.TypeFor[ActionRef]():             "name signaling",
		reflect.TypeFor[Link]():                  "name mtu bondMode bondHash,omitempty lacpRate,omitempty miimon,omitempty updelay,omitempty downdelay,omitempty trunking nativeNetwork,omitempty",
		reflect.TypeFor[drivers.Device]():        "alias bus,omitempty address,omitempty switch,omitempty port,omitempty",
		reflect.TypeFor[drivers.Route]():         "to via metric,omitempty",
		reflect.TypeFor[Storage]():               "devices,omitempty volumeGroups,omitempty",
		reflect.TypeFor[StorageDevice]():         "device partitions,omitempty volumeGroup,omitempty",
		reflect.TypeFor[Partition]():             "name size bootable,omitempty filesystem,omitempty volumeGroup,omitempty",
		reflect.TypeFor[drivers.Filesystem]():    "fstype mountpoint,omitempty options,omitempty label,omitempty",
		reflect.TypeFor[VolumeGroup]():           "name logicalVolumes,omitempty",
		reflect.TypeFor[drivers.LogicalVolume](): "name size filesystem,omitempty",
		reflect.TypeFor[Platform]():              "image kernel,omitempty kernelParams,omitempty",
	}
	for typ, w := range want {
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Tag.Get("json"))
		}
		if g := strings.Join(got, " "); g != w {
			t.Errorf("%v has the fields %q; appendSelf writes %q: teach it the change", typ, g, w)
		}
	}
}

// TestSelfFastPath: with the request log above Debug, GET /v1/self with
// a valid token is answered without echo, with the same bytes and headers;
// everything else still goes through echo and its middleware.
func TestSelfFastPath(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Log = c.Log.Level(zerolog.InfoLevel) })
	tok := e.issue("r01-cmp01", "1")
	want, err := json.Marshal(selfOf(e.d, e.d.Nodes["r01-cmp01"], "1"))
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	req := httptest.NewRequest("GET", "/v1/self", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	for i := range 2 { // the first renders, the second is cached
		rec := httptest.NewRecorder()
		if !e.srv.fastSelf(rec, req, tok) {
			t.Fatal("a valid token was not answered on the fast path")
		}
		if rec.Code != 200 || rec.Body.String() != string(want) {
			t.Fatalf("request %d: %d %s, want %s", i, rec.Code, rec.Body, want)
		}
		h := rec.Header()
		if id := h.Get("X-Request-Id"); len(id) != 24 || h.Get("Cache-Control") != "no-store" ||
			h.Get("Content-Type") != "application/json" || h.Get("Content-Length") != strconv.Itoa(len(want)) {
			t.Errorf("headers %v", h)
		}
	}
	// Which requests take it.
	for _, c := range []struct {
		name   string
		method string
		path   string
		body   io.Reader
		tune   func(*Config)
		want   bool
	}{
		{"GET /v1/self", "GET", "/v1/self", nil, nil, true},
		{"a query", "GET", "/v1/self?x=1", nil, nil, true},
		{"HEAD", "HEAD", "/v1/self", nil, nil, false},
		{"POST", "POST", "/v1/self", nil, nil, false},
		{"a body", "GET", "/v1/self", strings.NewReader("{}"), nil, false},
		{"another route", "GET", "/v1/self/packages", nil, nil, false},
		{"an escaped path", "GET", "/v1/%73elf", nil, nil, false},
		{"Debug log", "GET", "/v1/self", nil, func(c *Config) { c.Log = c.Log.Level(zerolog.DebugLevel) }, false},
		{"Trace log", "GET", "/v1/self", nil, func(c *Config) { c.Log = c.Log.Level(zerolog.TraceLevel) }, false},
		{"Warn log", "GET", "/v1/self", nil, func(c *Config) { c.Log = c.Log.Level(zerolog.WarnLevel) }, true},
		{"no log", "GET", "/v1/self", nil, func(c *Config) { c.Log = zerolog.Nop() }, true},
		{"source checked", "GET", "/v1/self", nil, func(c *Config) { c.CheckSource = true }, false},
	} {
		srv := e.srv
		if c.tune != nil {
			cfg := e.srv.cfg
			c.tune(&cfg)
			if srv, err = New(cfg); err != nil {
				t.Fatal(err)
			}
		}
		if got := srv.fastPath(httptest.NewRequest(c.method, c.path, c.body)); got != c.want {
			t.Errorf("%s: fast path %v, want %v", c.name, got, c.want)
		}
	}
	// The same through the handler and through echo (a Debug log).
	r := e.do("GET", "/v1/self", tok, nil)
	dbg := newEnv(t)
	dbg.st, dbg.srv = e.st, nil
	srv, err := New(Config{Store: e.st, URL: testURL, Key: testKey, Log: zerolog.New(dbg.logs).Level(zerolog.DebugLevel)})
	if err != nil {
		t.Fatal(err)
	}
	dbg.srv = srv
	r2 := dbg.do("GET", "/v1/self", tok, nil)
	if r.code != 200 || r2.code != 200 || string(r.body) != string(r2.body) {
		t.Errorf("fast path %d, echo %d: bodies differ", r.code, r2.code)
	}
	for _, k := range []string{"Cache-Control", "Content-Type", "Content-Length"} {
		if r.hdr.Get(k) != r2.hdr.Get(k) {
			t.Errorf("%s: fast path %q, echo %q", k, r.hdr.Get(k), r2.hdr.Get(k))
		}
	}
	if !contains(dbg.logs.String(), `"status":200`) {
		t.Error("with a Debug log, the request was not logged: it did not go through echo")
	}
	// Anything else goes through echo: refusals get their problem details.
	for _, c := range []struct {
		name, tok string
	}{{"no token", ""}, {"malformed", "sni_short"}, {"unknown", e.srv.Token("r01-cmp01", "2")}} {
		if e.srv.fastSelf(httptest.NewRecorder(), req, c.tok) {
			t.Errorf("%s: answered on the fast path", c.name)
		}
		r := e.do("GET", "/v1/self", c.tok, nil)
		if r.code != 401 || r.problem(t).Status != 401 || r.hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %d %s", c.name, r.code, r.body)
		}
	}
	if err := e.srv.EndDeployment(t.Context(), "r01-cmp01"); err != nil {
		t.Fatal(err)
	}
	if e.srv.fastSelf(httptest.NewRecorder(), req, tok) {
		t.Error("a revoked token was answered on the fast path")
	}
	if r := e.do("GET", "/v1/self", tok, nil); r.code != 401 {
		t.Errorf("revoked: %d", r.code)
	}
	if !contains(e.logs.String(), `"status":401`) {
		t.Error("the refusals were not logged")
	}
	// A body goes through echo's body limit.
	tok = e.issue("r01-cmp01", "3")
	big := strings.Repeat("x", maxBody+1)
	if r := e.do("GET", "/v1/self", tok, []byte(big)); r.code != 413 {
		t.Errorf("GET with a body over the limit: %d", r.code)
	}
}

// TestSessionsFollowDesignCache: sessions hold their design; when a
// design leaves the design cache, the sessions holding it are dropped (so
// no more than maxDesigns designs stay in memory), and their tokens still
// answer, from the design loaded again.
func TestSessionsFollowDesignCache(t *testing.T) {
	e := newEnv(t)
	names := e.d.NodeNames()
	if len(names) < maxDesigns+2 {
		t.Fatalf("%d nodes: too few for %d revisions", len(names), maxDesigns+2)
	}
	type issued struct {
		tok, rack string
		d         *design.Design
	}
	var toks []issued
	for i, name := range names[:maxDesigns+2] {
		d := *e.d
		d.Nodes = cloneNodes(e.d.Nodes)
		n := *e.d.Nodes[name]
		n.Spec.Rack = "rack-" + strconv.Itoa(i)
		d.Nodes[name] = &n
		e.store(&d)
		tok := e.issueWith(&d, name, "1")
		if s := e.self(tok); s.Rack != n.Spec.Rack {
			t.Fatalf("%s: rack %q, want %q", name, s.Rack, n.Spec.Rack)
		}
		// A route that needs the design: the session takes it.
		if r := e.do("GET", "/v1/self/packages", tok, nil); r.code != 200 {
			t.Fatalf("%s: packages: %d %s", name, r.code, r.body)
		}
		toks = append(toks, issued{tok, n.Spec.Rack, &d})
	}
	held := map[*design.Design]bool{}
	for i := range e.srv.tokens.shards {
		for _, ss := range e.srv.tokens.shards[i].m {
			if ss.d != nil {
				held[ss.d] = true
			}
		}
	}
	if len(held) == 0 {
		t.Fatal("no session holds a design: the test tests nothing")
	}
	e.srv.designs.mu.Lock()
	cached := map[*design.Design]bool{}
	for _, de := range e.srv.designs.byID {
		cached[de.d] = true
	}
	e.srv.designs.mu.Unlock()
	for d := range held {
		if !cached[d] {
			t.Error("a session holds a design that left the design cache")
		}
	}
	if len(held) > maxDesigns {
		t.Errorf("sessions hold %d designs, more than the cache's %d", len(held), maxDesigns)
	}
	for _, it := range toks {
		if s := e.self(it.tok); s.Rack != it.rack {
			t.Errorf("rack %q, want %q", s.Rack, it.rack)
		}
	}
}
