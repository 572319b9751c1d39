package maas

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGetAnswerBufferKept: a GET's answer is read into a buffer kept
// between calls, whether MAAS gives its length or sends it in chunks.
// gomaasapi read each answer with io.ReadAll, about twice its size
// allocated (growing pieces, then a zeroed copy): 2,195 KiB a call here.
func TestGetAnswerBufferKept(t *testing.T) {
	answer := append(append([]byte(`"`), bytes.Repeat([]byte("x"), 1<<20)...), '"')
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "OAuth ") || r.URL.Query().Get("op") != "read" {
			http.Error(w, "unsigned or without its op", http.StatusBadRequest)
			return
		}
		if r.URL.Query().Get("length") != "" {
			w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		}
		_, _ = w.Write(answer)
	}))
	defer srv.Close()
	c, err := newClient(srv.URL+"/MAAS", "a:b:c", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []url.Values{nil, {"length": {"1"}}} {
		get := func() {
			if err := c.call(t.Context(), http.MethodGet, "machines/", "read", q, nil); err != nil {
				t.Fatal(err)
			}
		}
		get()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		const calls = 20
		for range calls {
			get()
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / calls; per > 256<<10 {
			t.Errorf("a GET of a 1 MiB answer (%v) allocated %d KiB, want the answer's buffer kept (under 256 KiB)", q, per>>10)
		}
	}
}

// TestGetStatusErrorClassified: a GET answered 404 or 503 with
// Retry-After is classified as gomaasapi's answers were: not found, and
// retried after the time MAAS gave.
func TestGetStatusErrorClassified(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if strings.Contains(r.URL.Path, "gone") {
			http.Error(w, "No Machine matches the given query.", http.StatusNotFound)
			return
		}
		if calls == 2 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"system_id":"abc"}`))
	}))
	defer srv.Close()
	c, err := newClient(srv.URL+"/MAAS", "a:b:c", 5*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	err = c.call(t.Context(), http.MethodGet, "machines/gone/", "", nil, nil)
	if !isNotFound(err) || !strings.Contains(err.Error(), "No Machine matches") {
		t.Fatalf("404: %v, want not found with MAAS's message", err)
	}
	var m struct {
		ID string `json:"system_id"`
	}
	if err := c.call(t.Context(), http.MethodGet, "machines/abc/", "", nil, &m); err != nil || m.ID != "abc" || calls != 3 {
		t.Fatalf("503 then 200: %v, %q after %d calls, want abc after 3", err, m.ID, calls)
	}
}
