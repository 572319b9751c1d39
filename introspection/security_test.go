package introspection

import (
	"context"
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/statestore"
)

func TestUnauthorized(t *testing.T) {
	e := newEnv(t)
	valid := e.issue("r01-cmp01", "1")
	notIssued := e.srv.Token("r01-cmp02", "1") // right form and key, never issued
	otherKey := "sni_" + base64.RawURLEncoding.EncodeToString(make([]byte, 32))
	cases := map[string][]string{
		"no header":            nil,
		"empty bearer":         {"Authorization", "Bearer "},
		"basic":                {"Authorization", "Basic " + valid},
		"no scheme":            {"Authorization", valid},
		"short":                {"Authorization", "Bearer sni_abc"},
		"wrong prefix":         {"Authorization", "Bearer snx_" + valid[4:]},
		"bad base64":           {"Authorization", "Bearer " + valid[:TokenLen-1] + "!"},
		"too long":             {"Authorization", "Bearer " + valid + "A"},
		"never issued":         {"Authorization", "Bearer " + notIssued},
		"unknown":              {"Authorization", "Bearer " + otherKey},
		"two headers":          {"Authorization", "Bearer " + valid, "Authorization", "Bearer " + valid},
		"valid in query only":  {"X-Token", valid},
		"valid as bearer case": {"Authorization", "BEARER " + notIssued},
	}
	for name, hdr := range cases {
		t.Run(name, func(t *testing.T) {
			for _, route := range []string{"/v1/self", "/v1/self/assets", "/v1/self/packages"} {
				r := e.do("GET", route+"?token="+valid, "", nil, hdr...)
				if r.code != http.StatusUnauthorized {
					t.Fatalf("%s: status %d, want 401: %s", route, r.code, r.body)
				}
				if p := r.problem(t); p.Status != 401 || p.RequestID == "" || p.Instance != route {
					t.Errorf("%s: problem %+v", route, p)
				}
				if !strings.HasPrefix(r.hdr.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s: no WWW-Authenticate challenge", route)
				}
			}
			if r := e.do("POST", "/v1/self/actions/node-bootstrap", "", []byte(`{"status":"success"}`), hdr...); r.code != 401 {
				t.Errorf("POST report: status %d, want 401", r.code)
			}
		})
	}
	// The scheme is case-insensitive (RFC 6750); the token is not.
	if r := e.do("GET", "/v1/self", "", nil, "Authorization", "bearer "+valid); r.code != 200 {
		t.Errorf("lower-case scheme: status %d", r.code)
	}
	if r := e.do("GET", "/v1/self", "", nil, "Authorization", "Bearer "+strings.ToUpper(valid)); r.code != 401 {
		t.Errorf("upper-cased token: status %d, want 401", r.code)
	}
	for _, tok := range []string{"x", notIssued, otherKey, valid[:20]} {
		for _, f := range []string{"meta-data", "user-data", "vendor-data", "network-config"} {
			if r := e.do("GET", "/v1/nocloud/"+tok+"/"+f, "", nil); r.code != 401 {
				t.Errorf("nocloud %s with a bad token: status %d, want 401", f, r.code)
			}
		}
	}
}

func TestOwnDataOnly(t *testing.T) {
	e := newEnv(t)
	a, b := "r01-cmp01", "r02-gpu01"
	ta, tb := e.issue(a, "1"), e.issue(b, "3")
	for _, c := range []struct{ node, tok, dep string }{{a, ta, "1"}, {b, tb, "3"}} {
		// No route takes a node: a name in the query or the path changes nothing.
		for _, path := range []string{"/v1/self", "/v1/self?node=" + a, "/v1/self?node=" + b, "/v1/self?name=" + b} {
			r := e.do("GET", path, c.tok, nil)
			if r.code != 200 {
				t.Fatalf("%s: %d", path, r.code)
			}
			s := e.self(c.tok)
			if s.Name != c.node || s.Hostname != c.node || s.Deployment != c.dep {
				t.Errorf("%s with %s's token: %s/%s deployment %s", path, c.node, s.Name, s.Hostname, s.Deployment)
			}
		}
		r := e.do("GET", "/v1/nocloud/"+c.tok+"/meta-data", "", nil)
		if r.code != 200 || !contains(string(r.body), "local-hostname: "+c.node+"\n") ||
			!contains(string(r.body), "instance-id: "+c.node+"-"+c.dep+"\n") {
			t.Errorf("meta-data with %s's token: %d %s", c.node, r.code, r.body)
		}
		// The path token wins over nothing: a bearer header of the other
		// node does not change whose seed it is.
		other := tb
		if c.tok == tb {
			other = ta
		}
		r = e.do("GET", "/v1/nocloud/"+c.tok+"/meta-data", other, nil)
		if !contains(string(r.body), "local-hostname: "+c.node+"\n") {
			t.Errorf("meta-data of %s with another bearer: %s", c.node, r.body)
		}
	}
	// Reports land on the token's node.
	act := signalling(e.d, a)[0]
	if r := e.report(ta, act, "success", "ok"); r.code != 200 {
		t.Fatalf("report: %d %s", r.code, r.body)
	}
	recs, _ := e.st.List(t.Context(), collReports, "")
	if len(recs) != 1 || recs[0].Key != a+"/1/"+act {
		t.Errorf("reports: %v", recs)
	}
}

func TestRevocationAndRotation(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	t1 := e.issue("r01-cmp02", "1")
	if s := e.self(t1); s.Deployment != "1" {
		t.Fatalf("deployment %s", s.Deployment)
	}
	act := signalling(e.d, "r01-cmp02")[0]
	if r := e.report(t1, act, "success", ""); r.code != 200 {
		t.Fatalf("report: %d", r.code)
	}
	// Rotation: the next deployment's token replaces the previous one.
	t2 := e.issue("r01-cmp02", "2")
	if t1 == t2 {
		t.Fatal("the same token for two deployments")
	}
	for _, path := range []string{"/v1/self", "/v1/self/assets", "/v1/self/packages"} {
		if r := e.do("GET", path, t1, nil); r.code != 401 {
			t.Errorf("rotated token on %s: %d, want 401", path, r.code)
		}
		if r := e.do("GET", path, t2, nil); r.code != 200 {
			t.Errorf("new token on %s: %d", path, r.code)
		}
	}
	if r := e.do("GET", "/v1/nocloud/"+t1+"/user-data", "", nil); r.code != 401 {
		t.Errorf("rotated token on nocloud: %d", r.code)
	}
	if r := e.report(t1, act, "success", ""); r.code != 401 {
		t.Errorf("rotated token reports: %d", r.code)
	}
	// The old deployment's reports were dropped with its token.
	if recs, _ := e.st.List(ctx, collReports, "r01-cmp02/1/"); len(recs) != 0 {
		t.Errorf("reports of deployment 1 kept: %v", recs)
	}
	// Revocation.
	if err := e.srv.EndDeployment(ctx, "r01-cmp02"); err != nil {
		t.Fatal(err)
	}
	if r := e.do("GET", "/v1/self", t2, nil); r.code != 401 {
		t.Errorf("revoked token: %d, want 401", r.code)
	}
	if r := e.do("GET", "/v1/nocloud/"+t2+"/meta-data", "", nil); r.code != 401 {
		t.Errorf("revoked token on nocloud: %d", r.code)
	}
	for _, coll := range []string{collTokens, collTokenOf, collReports} {
		if recs, _ := e.st.List(ctx, coll, ""); len(recs) != 0 {
			t.Errorf("%s after revocation: %v", coll, recs)
		}
	}
	// Ending again is harmless; a new deployment works.
	if err := e.srv.EndDeployment(ctx, "r01-cmp02"); err != nil {
		t.Fatal(err)
	}
	t3 := e.issue("r01-cmp02", "3")
	if e.self(t3).Deployment != "3" {
		t.Error("deployment 3")
	}
	// Revoking one node leaves the others alone.
	t4 := e.issue("r01-cmp03", "1")
	if err := e.srv.EndDeployment(ctx, "r01-cmp02"); err != nil {
		t.Fatal(err)
	}
	if e.self(t4).Name != "r01-cmp03" {
		t.Error("r01-cmp03 lost its token")
	}
}

func TestUserDataIdempotent(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	ud1, err := e.srv.UserData(ctx, e.d, "r01-cmp01", "7")
	if err != nil {
		t.Fatal(err)
	}
	rec1, _ := e.st.Get(ctx, collTokens, hashToken(e.srv.Token("r01-cmp01", "7")))
	time.Sleep(2 * time.Millisecond)
	ud2, err := e.srv.UserData(ctx, e.d, "r01-cmp01", "7")
	if err != nil {
		t.Fatal(err)
	}
	if string(ud1) != string(ud2) {
		t.Error("UserData for one deployment differs between calls")
	}
	rec2, _ := e.st.Get(ctx, collTokens, hashToken(e.srv.Token("r01-cmp01", "7")))
	if string(rec1) != string(rec2) {
		t.Errorf("the token record was rewritten: %s → %s", rec1, rec2)
	}
	// A new server with the same key and store (a restart) gives the same
	// data and accepts the token: the design is loaded from its revision.
	srv2, err := New(Config{Store: e.st, URL: testURL, Key: testKey, Secret: testSecret})
	if err != nil {
		t.Fatal(err)
	}
	e2 := &env{t: t, st: e.st, d: e.d, srv: srv2, logs: e.logs}
	if s := e2.self(e.srv.Token("r01-cmp01", "7")); s.Name != "r01-cmp01" || len(s.Interfaces) == 0 {
		t.Errorf("after a restart: %+v", s)
	}
	ud3, err := srv2.UserData(ctx, e.d, "r01-cmp01", "7")
	if err != nil || string(ud3) != string(ud1) {
		t.Errorf("after a restart, UserData differs (%v)", err)
	}
	// Another key derives other tokens: the old ones stop working.
	other := append([]byte(nil), testKey...)
	other[0] ^= 1
	srv3, _ := New(Config{Store: e.st, URL: testURL, Key: other})
	e3 := &env{t: t, st: e.st, srv: srv3, logs: e.logs}
	if r := e3.do("GET", "/v1/self", e.srv.Token("r01-cmp01", "7"), nil); r.code != 401 {
		t.Errorf("a token of another key: %d", r.code)
	}
}

func TestUserDataNeedsStoredDesign(t *testing.T) {
	e := newEnv(t)
	d := *e.d
	site := *d.Site
	site.Spec.Domain = "other.example.net"
	d.Site = &site // not stored
	if _, err := e.srv.UserData(t.Context(), &d, "r01-cmp01", "1"); err == nil || !contains(err.Error(), "not stored") {
		t.Errorf("an unstored design: %v", err)
	}
	if _, err := e.srv.UserData(t.Context(), e.d, "no-such-node", "1"); err == nil {
		t.Error("a node not in the design: no error")
	}
	if _, err := e.srv.UserData(t.Context(), e.d, "r01-cmp01", "1/2"); err == nil {
		t.Error("a deployment with a slash: no error")
	}
}

func TestRevisionPinned(t *testing.T) {
	e := newEnv(t)
	tok := e.issue("r01-cmp01", "1")
	// A new revision where the node's rack changed: the token still
	// answers from the revision it was issued with.
	d2 := *e.d
	d2.Nodes = map[string]*design.Node{}
	for k, v := range e.d.Nodes {
		d2.Nodes[k] = v
	}
	n := *e.d.Nodes["r01-cmp01"]
	n.Spec.Rack = "r99"
	d2.Nodes["r01-cmp01"] = &n
	e.store(&d2)
	if s := e.self(tok); s.Rack != "r01" {
		t.Errorf("rack %q: answered from the new revision", s.Rack)
	}
	// Issued again with the new design: the same token, the new data.
	if tok2 := e.issueWith(&d2, "r01-cmp01", "1"); tok2 != tok {
		t.Fatal("another token for the same deployment")
	}
	if s := e.self(tok); s.Rack != "r99" {
		t.Errorf("rack %q after re-issue with the new revision", s.Rack)
	}
}

func TestCheckSource(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.CheckSource, c.TrustedProxies = true, []string{"127.0.0.1/32"} })
	tok := e.issue("r01-cmp01", "1")
	cases := []struct {
		name string
		xff  string
		want int
	}{
		{"mgmt address", "10.12.0.101", 200},
		{"storage address", "10.13.0.101", 200},
		{"pxe dhcp range", "10.11.0.77", 200},
		{"pxe reserved range", "10.11.0.3", 403},
		{"another node's address", "10.12.0.102", 403},
		{"the BMC", "10.10.0.101", 403},
		{"the proxy itself", "", 403},
		{"chain through the proxy", "10.12.0.101, 127.0.0.1", 200},
		{"spoofed left of an untrusted hop", "10.12.0.101, 192.0.2.7", 403},
		{"garbage", "not-an-ip", 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var hdr []string
			if c.xff != "" {
				hdr = []string{"X-Forwarded-For", c.xff}
			}
			r := e.do("GET", "/v1/self", tok, nil, hdr...)
			if r.code != c.want {
				t.Fatalf("status %d, want %d: %s", r.code, c.want, r.body)
			}
			r = e.do("GET", "/v1/nocloud/"+tok+"/meta-data", "", nil, hdr...)
			if r.code != c.want {
				t.Fatalf("nocloud: status %d, want %d", r.code, c.want)
			}
		})
	}
	// Without trusted proxies, X-Forwarded-For is not believed.
	e2 := newEnv(t, func(c *Config) { c.CheckSource = true })
	tok2 := e2.issue("r01-cmp01", "1")
	if r := e2.do("GET", "/v1/self", tok2, nil, "X-Forwarded-For", "10.12.0.101"); r.code != 403 {
		t.Errorf("an untrusted X-Forwarded-For was believed: %d", r.code)
	}
	// A bad token is 401 before the source is looked at.
	if r := e.do("GET", "/v1/self", e.srv.Token("r01-cmp02", "1"), nil, "X-Forwarded-For", "10.12.0.101"); r.code != 401 {
		t.Errorf("a bad token from the right address: %d", r.code)
	}
}

// TestTokensNeverLogged runs many requests, failing ones included, and
// checks no token (nor a piece of one) appears in the logs, the problem
// bodies or the state.
func TestTokensNeverLogged(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.CheckSource, c.TrustedProxies = true, []string{"127.0.0.1/32"}
		c.Secret = func(context.Context, string) (string, error) { return "", errSecretDown }
	})
	nodes := []string{"r01-cmp01", "r01-gpu01", "r02-cmp01"}
	var toks []string
	for i, n := range nodes {
		toks = append(toks, e.issue(n, string(rune('1'+i))))
	}
	revoked := e.issue("r02-cmp02", "1")
	if err := e.srv.EndDeployment(t.Context(), "r02-cmp02"); err != nil {
		t.Fatal(err)
	}
	var bodies []string
	hit := func(r resp) { bodies = append(bodies, string(r.body)) }
	for i, tok := range append(slices.Clone(toks), revoked) {
		var node string
		if i < len(nodes) {
			node = nodes[i]
		}
		xff := []string{"X-Forwarded-For", "10.12.0.101"}
		if node != "" {
			xff[1] = e.d.Nodes[node].Spec.Addressing[1].Address
		}
		for _, f := range []string{"meta-data", "user-data", "vendor-data", "network-config", "nope", ""} {
			hit(e.do("GET", "/v1/nocloud/"+tok+"/"+f, "", nil, xff...))
			hit(e.do("GET", "/v1/nocloud/"+tok+"/"+f, "", nil)) // 403: from the proxy
			hit(e.do("POST", "/v1/nocloud/"+tok+"/"+f, "", nil, xff...))
		}
		hit(e.do("GET", "/v1/nocloud/"+tok, "", nil))
		for _, p := range []string{"/v1/self", "/v1/self/assets", "/v1/self/packages", "/v1/self/nope", "/v1/self/" + tok} {
			hit(e.do("GET", p, tok, nil, xff...))
			hit(e.do("GET", p, tok, nil))
			hit(e.do("GET", p, tok[:len(tok)-1]+"A", nil, xff...))
		}
		for _, body := range []string{`{"status":"success"}`, `{"status":"nope"}`, `{"token":"` + tok + `"}`, `not json`} {
			hit(e.do("POST", "/v1/self/actions/node-bootstrap", tok, []byte(body), xff...))
			hit(e.do("POST", "/v1/self/actions/"+tok, tok, []byte(body), xff...))
		}
		hit(e.do("GET", "/v1/self", "", nil, "Authorization", tok))
		hit(e.do("GET", "/v1/self", "", nil, "X-Request-Id", tok))
	}
	logs := e.logs.String()
	if !contains(logs, "/v1/nocloud/:token/meta-data") || !contains(logs, `"status":403`) || !contains(logs, `"status":500`) {
		t.Fatalf("the requests were not logged as expected:\n%.2000s", logs)
	}
	var state strings.Builder
	for _, coll := range []string{collTokens, collTokenOf, collReports} {
		recs, _ := e.st.List(t.Context(), coll, "")
		for _, r := range recs {
			state.WriteString(r.Key + "=" + string(r.Value) + "\n")
		}
	}
	evs, _ := e.st.ReadLog(t.Context(), logEvents, 0, 0)
	for _, ev := range evs {
		state.Write(ev.Value)
	}
	for _, tok := range append(toks, revoked) {
		secret := tok[len(TokenPrefix):]
		for _, piece := range []string{secret, secret[:16], secret[16:32], secret[27:]} {
			if contains(logs, piece) {
				t.Errorf("a token appears in the logs")
			}
			if contains(state.String(), piece) {
				t.Errorf("a token appears in the state")
			}
			for _, b := range bodies {
				if contains(b, piece) && !strings.HasPrefix(b, "#cloud-config") {
					t.Errorf("a token appears in an answer: %.200s", b)
				}
			}
		}
	}
}

var errSecretDown = errors.New("the secret store is down")

// TestVerifyConstantTime: checking a wrong token takes as long whether it
// shares no or 40 leading characters with a valid one (the lookup is by
// hash). Batches of calls are timed alternately and their medians
// compared with a generous bound.
func TestVerifyConstantTime(t *testing.T) {
	e := newEnv(t)
	valid := e.issue("r01-cmp01", "1")
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	rnd := rand.New(rand.NewPCG(1, 2))
	// wrong returns n tokens sharing exactly shared characters after the prefix.
	wrong := func(shared, n int) []string {
		var out []string
		for len(out) < n {
			b := []byte(valid)
			for i := len(TokenPrefix) + shared; i < len(b); i++ {
				c := alphabet[rnd.IntN(len(alphabet))]
				for i == len(TokenPrefix)+shared && c == valid[i] {
					c = alphabet[rnd.IntN(len(alphabet))]
				}
				b[i] = c
			}
			if s := string(b); wellFormed(s) && s != valid {
				out = append(out, s)
			}
		}
		return out
	}
	far, near := wrong(0, 64), wrong(40, 64)
	ctx := context.Background()
	batch := func(toks []string) time.Duration {
		start := time.Now()
		for _, tok := range toks {
			if _, err := e.srv.verify(ctx, tok); err == nil {
				t.Fatal("a wrong token verified")
			}
		}
		return time.Since(start)
	}
	for range 20 { // warm up
		batch(far)
		batch(near)
	}
	const rounds = 301
	var tf, tn []time.Duration
	for i := range rounds {
		if i%2 == 0 {
			tf, tn = append(tf, batch(far)), append(tn, batch(near))
		} else {
			tn, tf = append(tn, batch(near)), append(tf, batch(far))
		}
	}
	slices.Sort(tf)
	slices.Sort(tn)
	mf, mn := tf[rounds/2], tn[rounds/2]
	diff := float64(mf-mn) / float64(min(mf, mn))
	t.Logf("median of %d verifications: 0 shared: %v, 40 shared: %v (%.1f%%)", len(far), mf, mn, 100*diff)
	if diff > 0.25 || diff < -0.25 {
		t.Errorf("verification time depends on the shared prefix: %v vs %v", mf, mn)
	}
	// The valid one verifies.
	if rec, err := e.srv.verify(ctx, valid); err != nil || rec.Node != "r01-cmp01" {
		t.Errorf("valid token: %v %v", rec, err)
	}
}

func TestStoredRecordMustMatchKey(t *testing.T) {
	e := newEnv(t)
	// A record planted for a token the key did not derive is refused.
	forged := "sni_" + base64.RawURLEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	raw := []byte(`{"node":"r01-cmp01","deployment":"1","revision":"` + e.rev + `"}`)
	if _, err := e.st.Write(t.Context(), statestore.Put(collTokens, hashToken(forged), raw)); err != nil {
		t.Fatal(err)
	}
	if r := e.do("GET", "/v1/self", forged, nil); r.code != 401 {
		t.Errorf("a planted record: %d, want 401", r.code)
	}
	if !contains(e.logs.String(), "does not match the key") {
		t.Error("the refusal was not logged")
	}
}
