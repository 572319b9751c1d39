package maas

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/juju/gomaasapi/v2"
)

// seenRequest is what a region can tell of a request, the OAuth nonce,
// timestamp and signature aside (they differ on every request).
type seenRequest struct {
	method, path, query, contentType, body, oauth string
}

func recordRequests(t *testing.T, answer []byte) (*httptest.Server, func() []seenRequest) {
	t.Helper()
	var mu sync.Mutex
	var seen []seenRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		auth := r.Header.Get("Authorization")
		var kept []string
		for _, f := range strings.Split(strings.TrimPrefix(auth, "OAuth "), ", ") {
			switch strings.SplitN(f, "=", 2)[0] {
			case "oauth_nonce", "oauth_timestamp", "oauth_signature":
			default:
				kept = append(kept, f)
			}
		}
		slices.Sort(kept) // gomaasapi writes them in a map's order
		mu.Lock()
		seen = append(seen, seenRequest{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), string(body), strings.Join(kept, ", ")})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []seenRequest {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}
}

// TestRequestsAsGomaasapiSends: the driver's own requests are the ones
// gomaasapi's Get, Post, Put and Delete send (method, path, query, form,
// content type, OAuth fields), so that a region sees no difference.
func TestRequestsAsGomaasapiSends(t *testing.T) {
	srv, seen := recordRequests(t, []byte(`{}`))
	c, err := newClient(srv.URL+"/MAAS", "consumer:token:secret", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	params := url.Values{"hostname": {"r01 gpu&01"}, "mac_addresses": {"aa:bb", "cc:dd"}}
	cases := []struct {
		method, path, op string
		params           url.Values
		theirs           func(gomaasapi.Client) error
	}{
		{"GET", "machines/", "", params, func(g gomaasapi.Client) error {
			_, err := g.Get(&url.URL{Path: "machines/"}, "", cloneValues(params))
			return err
		}},
		{"GET", "machines/abc/", "details", nil, func(g gomaasapi.Client) error {
			_, err := g.Get(&url.URL{Path: "machines/abc/"}, "details", nil)
			return err
		}},
		{"POST", "machines/", "", params, func(g gomaasapi.Client) error {
			_, err := g.Post(&url.URL{Path: "machines/"}, "", params, nil)
			return err
		}},
		{"POST", "machines/abc/", "deploy", params, func(g gomaasapi.Client) error {
			_, err := g.Post(&url.URL{Path: "machines/abc/"}, "deploy", params, nil)
			return err
		}},
		{"PUT", "nodes/abc/interfaces/7/", "", params, func(g gomaasapi.Client) error {
			_, err := g.Put(&url.URL{Path: "nodes/abc/interfaces/7/"}, params, nil)
			return err
		}},
		{"DELETE", "tags/x/", "", nil, func(g gomaasapi.Client) error {
			return g.Delete(&url.URL{Path: "tags/x/"})
		}},
	}
	for _, tc := range cases {
		if err := tc.theirs(c.base); err != nil {
			t.Fatalf("gomaasapi %s %s: %v", tc.method, tc.path, err)
		}
		want := seen()
		if err := c.call(t.Context(), tc.method, tc.path, tc.op, tc.params, nil); err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		got := seen()
		if len(got) != 1 || len(want) != 1 || got[0] != want[0] {
			t.Errorf("%s %s op=%q:\n sent %+v\n gomaasapi sends %+v", tc.method, tc.path, tc.op, got, want)
		}
	}
}

// allocatedPer is the bytes allocated per call of fn, over n calls after
// a first (the connection, a first buffer). The whole process is
// counted, the test's own server included.
func allocatedPer(t *testing.T, n int, fn func()) uint64 {
	t.Helper()
	fn()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		fn()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(n)
}

// TestAnswerBuffersKept: answers are read into kept buffers, not a fresh
// slice grown for each as gomaasapi's io.ReadAll does (about three times
// an answer's size for every answer). Measured against gomaasapi's own
// Post of the same request in the same process, as the difference: the
// race detector adds about 150 KB a request to both (and its sync.Pool
// drops a quarter of what is put back).
func TestAnswerBuffersKept(t *testing.T) {
	answer := []byte(`{"system_id":"abc","hostname":"` + strings.Repeat("x", 64<<10) + `"}`)
	srv, _ := recordRequests(t, answer)
	c, err := newClient(srv.URL+"/MAAS", "a:b:c", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours := allocatedPer(t, 100, func() {
		if err := c.call(t.Context(), http.MethodPost, "machines/abc/", "deploy", nil, nil); err != nil {
			t.Fatal(err)
		}
	})
	g := c.base
	g.HTTPClient = c.httpc
	theirs := allocatedPer(t, 100, func() {
		if _, err := g.Post(&url.URL{Path: "machines/abc/"}, "deploy", nil, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("bytes allocated per request for an answer of %d: %d, gomaasapi %d", len(answer), ours, theirs)
	if ours+uint64(len(answer)) > theirs {
		t.Errorf("each request allocated %d bytes for an answer of %d, gomaasapi's Post %d: not an answer's size less, its buffer is not kept", ours, len(answer), theirs)
	}
}

// TestMachineOpDecodesState: an action's answer (the whole machine) is
// decoded for its state alone, which is all its callers read: the
// interfaces and storage, most of the answer, cost nothing to keep.
func TestMachineOpDecodesState(t *testing.T) {
	var ifaces []string
	for i := range 200 {
		ifaces = append(ifaces, fmt.Sprintf(`{"id":%d,"name":"eth%d","type":"physical","mac_address":"52:54:00:00:%02x:%02x","links":[{"id":%d,"mode":"static","ip_address":"10.0.%d.%d","subnet":{"id":1,"cidr":"10.0.0.0/16"}}],"vlan":{"id":1,"vid":0,"fabric":"f"}}`, i, i, i/256, i%256, i, i/256, i%256))
	}
	answer := []byte(`{"system_id":"abc","status":9,"status_name":"Deploying","owner_data":{"slipway-node":"n1"},"interface_set":[` + strings.Join(ifaces, ",") + `]}`)
	srv, _ := recordRequests(t, answer)
	c, err := newClient(srv.URL+"/MAAS", "a:b:c", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := &Driver{c: c}
	m, err := d.machineOp(t.Context(), "abc", "deploy", nil)
	if err != nil || m.StatusName != "Deploying" || m.OwnerData["slipway-node"] != "n1" {
		t.Fatalf("machineOp: %+v, %v", m, err)
	}
	state := allocatedPer(t, 60, func() {
		if _, err := d.machineOp(t.Context(), "abc", "deploy", nil); err != nil {
			t.Fatal(err)
		}
	})
	whole := allocatedPer(t, 60, func() { // the same answer decoded whole, as before
		var m mMachine
		if err := d.c.call(t.Context(), http.MethodPost, "machines/abc/", "deploy", nil, &m); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("bytes allocated per action: %d, decoding the whole machine %d", state, whole)
	// The whole machine's decode costs about six times the answer's size
	// more (with the race detector too, which adds to both).
	if state+3*uint64(len(answer)) > whole {
		t.Errorf("each action allocated %d bytes, decoding the whole machine %d, for an answer of %d: more than its state was decoded", state, whole, len(answer))
	}
}
