package maas

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/slipway-dev/slipway/drivers"
)

// decodeWhole decodes a listing the way decodeList must agree with: the
// standard library's decoder on the whole answer.
func decodeWhole(b []byte) ([]map[string]any, bool) {
	var v []map[string]any
	if err := json.Unmarshal(b, &v); err != nil || v == nil && !bytes.Equal(bytes.TrimSpace(b), []byte("[]")) {
		return nil, false
	}
	for _, e := range v {
		if e == nil { // a null element: not an object
			return nil, false
		}
	}
	return v, true
}

// decodeStream runs decodeList over r, read n bytes at a time (0: as
// the reader gives them).
func decodeStream(b []byte, oneByte bool) ([]map[string]any, error) {
	var r io.Reader = bytes.NewReader(b)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	out, _, err := decodeList[map[string]any](r, make([]byte, 0, 16), nil)
	return out, err
}

// TestDecodeList: a listing decoded an element at a time, read one byte
// at a time or whole, is what the whole answer decodes to; what is not
// an array of objects is refused as MAAS's fault (*listDecodeError), a
// failed read is the reader's error.
func TestDecodeList(t *testing.T) {
	good := []string{
		`[]`, " \n[ ]\t", `[{}]`, `[{"a":1},{"b":[1,{"c":"}"}]}]`,
		`[{"s":"a \"quoted\" {brace} [bracket] \\\\"},{"t":"\\\\\\\""}]`,
		`[{"u":"\u00e9\ud83d\ude00"}, {"n":null,"x":[[],[[]]],"y":{"z":{}}}]` + "\n",
	}
	for _, in := range good {
		want, ok := decodeWhole([]byte(in))
		if !ok {
			t.Fatalf("bad case %s", in)
		}
		for _, one := range []bool{false, true} {
			got, err := decodeStream([]byte(in), one)
			if err != nil || len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
				t.Errorf("%s (byte at a time %v): %v %v, want %v", in, one, got, err, want)
			}
		}
	}
	bad := []string{``, `{}`, `[`, `[{}`, `[{},]`, `[{} {}]`, `[1]`, `[null]`, `[{"a":}]`, `[{}] x`, `[{"a":"}]`, `[{"a":1}}]`}
	for _, in := range bad {
		for _, one := range []bool{false, true} {
			_, err := decodeStream([]byte(in), one)
			if _, ok := errors.AsType[*listDecodeError](err); !ok {
				t.Errorf("%q (byte at a time %v): %v, want a decode error", in, one, err)
			}
		}
	}
	broken := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader(`[{"a":1},{"b"`), iotest.ErrReader(broken))
	if _, _, err := decodeList[map[string]any](r, nil, nil); !errors.Is(err, broken) {
		t.Errorf("a read that fails midway: %v, want the read's error", err)
	}
}

// FuzzDecodeList: on any input, decodeList read one byte at a time and
// whole agree; it accepts exactly the arrays of objects the standard
// decoder accepts, with the same elements.
func FuzzDecodeList(f *testing.F) {
	for _, s := range []string{`[]`, `[{"a":"\"}"}]`, `[{"b":[{"c":1}]},{}]`, `[{]`, `[{"x":"\\"}, {"y":"\\\""}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		whole, werr := decodeStream(b, false)
		one, oerr := decodeStream(b, true)
		if (werr == nil) != (oerr == nil) || (werr == nil && !reflect.DeepEqual(whole, one)) {
			t.Fatalf("whole %v %v, byte at a time %v %v", whole, werr, one, oerr)
		}
		want, ok := decodeWhole(b)
		if ok != (werr == nil) {
			t.Fatalf("standard decoder ok=%v, decodeList %v", ok, werr)
		}
		if ok && len(want) > 0 && !reflect.DeepEqual(whole, want) {
			t.Fatalf("decodeList %v, standard %v", whole, want)
		}
	})
}

// driverAt is a driver on the MAAS at url, with the default retries.
func driverAt(t *testing.T, url string) *Driver {
	t.Helper()
	drv, err := NewDriver(drivers.Config{Settings: map[string]string{SettingURL: url, SettingTimeout: "10s"},
		Secrets: map[string]drivers.Secret{SecretAPIKey: drivers.NewSecret("a:b:c")}})
	if err != nil {
		t.Fatal(err)
	}
	return drv
}

// listingOf is a machines/ answer of n machines of about 10 KB each
// (padded with interfaces, strings with escapes and braces, as MAAS's
// machine objects carry much the status poll does not read).
func listingOf(n int) []byte {
	var b bytes.Buffer
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"system_id":"m%05d","hostname":"n%05d","status":6,"status_name":"Deployed","status_message":"Deployed \"ubuntu\" {ok}","owner":"slipway","power_state":"on","power_type":"ipmi","owner_data":{"slipway.node":"n%05d"},"tag_names":[],"domain":{"name":"maas"},"interface_set":[`, i, i, i)
		for k := range 40 {
			if k > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"id":%d,"name":"eth%d","mac_address":"52:54:00:00:%02x:%02x","links":[{"mode":"static","subnet":{"cidr":"10.%d.0.0/16"}}],"params":{"note":"a \\\\ path ]["},"vlan":{"vid":%d}}`, k, k, i%256, k, k, k)
		}
		b.WriteString("]}")
	}
	b.WriteString("]")
	return b.Bytes()
}

// TestListingsNotHeldWhole: the status poll's listing and the owned
// machines' listing (the sweep's, a site's every machine) are decoded as
// they are read: reading one allocates less than half its size (a
// listing held whole, then decoded, allocated 2.3 times it).
func TestListingsNotHeldWhole(t *testing.T) {
	const n = 500
	refs := make([]drivers.NodeRef, n)
	for i := range refs {
		refs[i] = drivers.NodeRef{Name: fmt.Sprintf("n%05d", i), MachineID: fmt.Sprintf("m%05d", i)}
	}
	for _, c := range []struct {
		name  string
		asked func(q url.Values) bool
		read  func(*Driver) ([]drivers.Machine, error)
	}{
		{"status", func(q url.Values) bool { return len(q["id"]) == n },
			func(d *Driver) ([]drivers.Machine, error) { return d.Status(context.Background(), refs) }},
		{"owned", func(q url.Values) bool { return q.Get("agent_name") != "" },
			func(d *Driver) ([]drivers.Machine, error) { return d.Owned(context.Background()) }},
	} {
		t.Run(c.name, func(t *testing.T) { listingNotHeldWhole(t, n, c.asked, c.read) })
	}
}

func listingNotHeldWhole(t *testing.T, n int, asked func(url.Values) bool, read func(*Driver) ([]drivers.Machine, error)) {
	listing := listingOf(n)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/MAAS/api/2.0/machines/" || !asked(r.URL.Query()) {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(listing)
	}))
	defer srv.Close()
	drv := driverAt(t, srv.URL+"/MAAS")
	readAll := func() []drivers.Machine {
		ms, err := read(drv)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	readAll() // connections and codecs made, windows kept
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ms := readAll()
	runtime.ReadMemStats(&after)
	if len(ms) != n || ms[n-1].MachineID != "m00499" || ms[n-1].State != "Deployed" || ms[0].Power != "on" {
		t.Fatalf("decoded %d: %+v ... %+v", len(ms), ms[0], ms[len(ms)-1])
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d KiB listing: %d KiB allocated", len(listing)>>10, alloc>>10)
	if alloc > uint64(len(listing))/2 { // the decoded states and the cache's copies are about a quarter
		t.Errorf("a %d KiB listing allocated %d KiB: want under half its size (it is decoded as read)", len(listing)>>10, alloc>>10)
	}
}

// TestStatusListingErrorsClassified: a listing MAAS answers 503 is
// retried after its Retry-After; one it refuses (401) fails at once,
// Permanent, naming the key, as call's answers do.
func TestStatusListingErrorsClassified(t *testing.T) {
	var calls atomic.Int32
	refuse := atomic.Bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch n := calls.Add(1); {
		case refuse.Load():
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
		case n == 1:
			w.Header().Set("Retry-After", "0")
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default:
			_, _ = w.Write(listingOf(1))
		}
	}))
	defer srv.Close()
	drv := driverAt(t, srv.URL+"/MAAS")
	refs := []drivers.NodeRef{{Name: "n00000", MachineID: "m00000"}}
	if ms, err := drv.Status(t.Context(), refs); err != nil || ms[0].State != "Deployed" || calls.Load() != 2 {
		t.Fatalf("after a 503: %+v %v, %d requests (want 2)", ms, err, calls.Load())
	}
	refuse.Store(true)
	before := calls.Load()
	_, err := drv.Status(t.Context(), refs)
	if drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "check maas.apiKey") || calls.Load() != before+1 {
		t.Fatalf("a 401: %v (class %v), %d requests", err, drivers.Classify(err), calls.Load()-before)
	}
}
