package maas

import (
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzEncodeForm: the driver's form body is url.Values.Encode's, byte
// for byte, for any keys and values.
func FuzzEncodeForm(f *testing.F) {
	f.Add("user_data", "I2Nsb3VkLWNvbmZpZwo+/=", "agent_name", "slipway a&b")
	f.Add("", "", "op", "")
	f.Add("k\x00", "v\xff%", "ü", "~-._ +")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		p := url.Values{}
		p.Add(k1, v1)
		p.Add(k2, v2)
		p.Add(k1, v2)
		if got, want := string(encodeForm(p)), p.Encode(); got != want {
			t.Fatalf("encodeForm(%q) = %q, url.Values.Encode %q", p, got, want)
		}
	})
}

func TestEncodeFormAsURLValues(t *testing.T) {
	for _, p := range []url.Values{nil, {}, {"a": nil}, {"a": {""}}, {"b": {"1", "2"}, "a": {"x y", "%/+="}}} {
		if got, want := string(encodeForm(p)), p.Encode(); got != want {
			t.Errorf("encodeForm(%q) = %q, want %q", p, got, want)
		}
	}
}

// TestDeployFormAllocatesTheBodyOnce: a deploy's request, whose base64
// user data is about 10 KB, costs about its body in allocation (plus the
// request and its signature), not the three bodies url.Values.Encode
// made (an escaped copy of each value, then a builder grown by doubling).
func TestDeployFormAllocatesTheBodyOnce(t *testing.T) {
	c, err := newClient("http://127.0.0.1:5240/MAAS", "a:b:c", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	ud := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("#cloud-config\x00\xff?", 512)))
	p := url.Values{"agent_name": {"slipway"}, "user_data": {ud}, "distro_series": {"noble"}}
	size := len(p.Encode())
	per := allocatedPer(t, 50, func() {
		req, err := c.request(t.Context(), http.MethodPost, "machines/abc/", "deploy", p)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := io.Copy(io.Discard, req.Body); n != int64(size) {
			t.Fatalf("the body is %d bytes, want %d", n, size)
		}
	})
	t.Logf("a deploy request of a %d-byte body allocated %d bytes", size, per)
	if per > uint64(size)+6<<10 {
		t.Errorf("a deploy request of a %d-byte body allocated %d bytes: more than the body once and 6 KB", size, per)
	}
}

// writeCounting counts a connection's writes.
type writeCounting struct {
	net.Conn
	writes *atomic.Int64
}

func (c writeCounting) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestDeployRequestInOneWrite: a deploy's request, its form about 12 KB,
// goes to the socket in one write (each write is a system call, costly
// in a virtual machine), not Go's 4 KB buffer flushed and then the rest.
func TestDeployRequestInOneWrite(t *testing.T) {
	srv, _ := recordRequests(t, []byte(`{"system_id":"abc","status":9}`))
	c, err := newClient(srv.URL+"/MAAS", "a:b:c", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	var writes atomic.Int64
	tr := c.httpc.Transport.(*http.Transport)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		return writeCounting{conn, &writes}, err
	}
	ud := base64.StdEncoding.EncodeToString(make([]byte, 9<<10))
	p := url.Values{"agent_name": {"slipway"}, "user_data": {ud}}
	d := &Driver{c: c}
	for i := range 3 {
		writes.Store(0)
		if _, err := d.machineOp(t.Context(), "abc", "deploy", p); err != nil {
			t.Fatal(err)
		}
		if n := writes.Load(); n != 1 {
			t.Fatalf("deploy %d: the request of %d bytes of form took %d writes, want 1", i+1, len(p.Encode()), n)
		}
	}
}
