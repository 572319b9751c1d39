package introspection

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReportImage: a report may carry the image the node runs; it is
// stored as sent, a change of it is no retry, and a malformed one is
// refused.
func TestReportImage(t *testing.T) {
	e := newEnv(t)
	node := "r01-gpu01"
	tok := e.issue(node, "1")
	act := signalling(e.d, node)[0]
	sha := strings.Repeat("ab", 32)
	r := e.do("POST", "/v1/self/actions/"+act, tok, []byte(`{"status":"running","image":{"name":"custom/gpu-golden","sha256":"`+sha+`"}}`))
	var rep Report
	if r.code != 200 || json.Unmarshal(r.body, &rep) != nil || rep.Image == nil || rep.Image.Name != "custom/gpu-golden" || rep.Image.SHA256 != sha {
		t.Fatalf("a report with an image: %d %s", r.code, r.body)
	}
	n := len(events(t, e))
	e.do("POST", "/v1/self/actions/"+act, tok, []byte(`{"status":"running","image":{"name":"ubuntu/jammy"}}`))
	if len(events(t, e)) != n+1 {
		t.Error("a report of another image was taken for a retry")
	}
	for name, body := range map[string]string{
		"no slash":  `{"status":"running","image":{"name":"jammy"}}`,
		"bad sha":   `{"status":"running","image":{"name":"custom/x","sha256":"XYZ"}}`,
		"upper sha": `{"status":"running","image":{"name":"custom/x","sha256":"` + strings.Repeat("AB", 32) + `"}}`,
		"extra":     `{"status":"running","image":{"name":"custom/x","size":1}}`,
	} {
		if r := e.do("POST", "/v1/self/actions/"+act, tok, []byte(body)); r.code != 400 {
			t.Errorf("%s: %d %s, want 400", name, r.code, r.body)
		}
	}
}
