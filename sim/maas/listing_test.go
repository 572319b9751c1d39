package maas

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestMain checks every listing cache hit of every test of the package
// against a fresh rendering; a stale one fails the run.
func TestMain(m *testing.M) {
	verifyListingCache = true
	code := m.Run()
	if n := listingCacheStale.Load(); n > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "listing cache: %d stale machines served\n", n)
		code = 1
	}
	os.Exit(code)
}

// TestListingCacheFollowsChanges: a listing shows every change made
// since the last one, whether by a request on the machine, a write
// elsewhere (a VLAN, a tag), a phase's end or a new machine in the
// domain; unchanged machines come from the cache.
func TestListingCacheFollowsChanges(t *testing.T) {
	l := newSimLab(t, nil)
	a, b := l.ready(1, "a"), l.enlist(2, "b")
	list := func(q url.Values) map[string]map[string]any {
		t.Helper()
		var ms []map[string]any
		l.must(http.StatusOK, "GET", "/machines/", q, &ms)
		out := map[string]map[string]any{}
		for _, m := range ms {
			out[m["system_id"].(string)] = m
		}
		return out
	}
	before := listingCacheStale.Load()
	list(nil) // fills the cache
	hitsBefore := func() bool {
		l.s.mu.Lock()
		defer l.s.mu.Unlock()
		m := l.s.machines[a]
		return m.rendered.valid && m.rendered.rev == m.rev
	}
	if !hitsBefore() {
		t.Fatal("a listing did not cache machine a")
	}
	// A request on the machine.
	l.must(http.StatusOK, "POST", "/machines/"+a+"/?op=set_owner_data", url.Values{"team": {"x"}}, nil)
	if got := list(nil)[a]["owner_data"].(map[string]any)["team"]; got != "x" {
		t.Errorf("owner_data after set_owner_data: %v", got)
	}
	// A write elsewhere: a tag applied to b through the tags API.
	l.must(http.StatusOK, "POST", "/tags/", url.Values{"name": {"fast"}}, nil)
	l.must(http.StatusOK, "POST", "/tags/fast/?op=update_nodes", url.Values{"add": {b}}, nil)
	if got := list(url.Values{"id": {b}})[b]["tag_names"]; fmt.Sprint(got) != "[fast]" {
		t.Errorf("tag_names after update_nodes: %v", got)
	}
	// A phase's end: b commissions to Ready by a timer.
	l.must(http.StatusOK, "POST", "/machines/"+b+"/?op=commission", nil, nil)
	l.waitStatus(b, StatusReady)
	if got := list(nil)[b]["status_name"]; got != "Ready" {
		t.Errorf("status_name after commissioning: %v", got)
	}
	// A new machine changes the domain's record count every machine shows.
	l.enlist(3, "c")
	if got := list(url.Values{"id": {a}})[a]["domain"].(map[string]any)["resource_record_count"]; got != float64(3) {
		t.Errorf("resource_record_count after a third machine: %v", got)
	}
	// The id filter: repeated and unknown ids, answered in system ID order.
	var ms []map[string]any
	l.must(http.StatusOK, "GET", "/machines/", url.Values{"id": {b, a, b, "nosuch"}}, &ms)
	if len(ms) != 2 || ms[0]["system_id"].(string) > ms[1]["system_id"].(string) {
		t.Errorf("id filter: %d machines %v", len(ms), ms)
	}
	// Every listing's JSON equals a fresh rendering of the machine.
	for id, m := range list(nil) {
		l.s.mu.Lock()
		fresh, _ := appendJSON(nil, l.s.renderMachine(l.s.machines[id]))
		l.s.mu.Unlock()
		got, _ := json.Marshal(m)
		var want map[string]any
		_ = json.Unmarshal(fresh, &want)
		w, _ := json.Marshal(want)
		if string(got) != string(w) {
			t.Errorf("machine %s listed differs from its fresh rendering", id)
		}
	}
	if n := listingCacheStale.Load() - before; n > 0 {
		t.Errorf("%d stale machines served", n)
	}
}

// TestMayFoldEqual: the MAC scan's shortcut never says no where
// strings.EqualFold says yes.
func TestMayFoldEqual(t *testing.T) {
	words := []string{"", "a", "A", "k", "K", "\u212a", "02:00:AA:bb:0c:0F", "02:00:aa:BB:0C:0f", "02:00:aa:bb:0c:0e",
		"x@", "x`", "ſ", "s", "S", "1", "01", "ǅ", "ǆ", "Ǆ"}
	for _, a := range words {
		for _, b := range words {
			if strings.EqualFold(a, b) && !mayFoldEqual(a, b) {
				t.Errorf("mayFoldEqual(%q, %q) = false, EqualFold says equal", a, b)
			}
		}
	}
	if mayFoldEqual("02:00:aa:bb:0c:0f", "02:00:aa:bb:0c:0e") {
		t.Error("different last hex digits: want false")
	}
}

// TestIPIndexFollowsLinks: an address linked on one machine is in use
// for the next, through the index (and TestMain's check of every answer
// against a walk through every link), also after the first machine's
// link is gone.
func TestIPIndexFollowsLinks(t *testing.T) {
	l := newSimLab(t, nil)
	a, b := l.ready(1, "a"), l.ready(2, "b")
	nic := func(id string) (string, string) {
		var ifs []map[string]any
		l.must(http.StatusOK, "GET", "/nodes/"+id+"/interfaces/", nil, &ifs)
		return fmt.Sprint(ifs[0]["id"]), fmt.Sprint(ifs[0]["vlan"].(map[string]any)["id"])
	}
	_, vlan := nic(a)
	var sn map[string]any
	l.must(http.StatusOK, "POST", "/subnets/", url.Values{"cidr": {"10.77.0.0/24"}, "vlan": {vlan}}, &sn)
	subnet, ip := fmt.Sprint(sn["id"]), "10.77.0.77"
	link := func(id string) rawResp {
		n, _ := nic(id)
		return l.do("POST", "/nodes/"+id+"/interfaces/"+n+"/?op=link_subnet", url.Values{"mode": {"static"}, "subnet": {subnet}, "ip_address": {ip}})
	}
	before := listingCacheStale.Load()
	if r := link(a); r.code != http.StatusOK {
		t.Fatalf("link %s on a: %s", ip, r)
	}
	if r := link(b); r.code != http.StatusNotFound || !strings.Contains(string(r.body), "already in use") {
		t.Errorf("the same address on b: %s, want 404 already in use", r)
	}
	na, _ := nic(a)
	l.must(http.StatusOK, "POST", "/nodes/"+a+"/interfaces/"+na+"/?op=disconnect", nil, nil)
	if r := link(b); r.code != http.StatusOK {
		t.Errorf("the address on b after a let it go: %s", r)
	}
	if n := listingCacheStale.Load() - before; n > 0 {
		t.Errorf("%d wrong answers of the index", n)
	}
}

// TestMachineAnswersShareTheListingCache: a machine read changes nothing,
// so it leaves the machine's kept JSON current; a write that answers the
// machine (set_owner_data, and allocate with constraints_by_type) is
// answered by a fresh rendering that is not kept (writtenJSON), and the
// stale JSON kept before it is let go (dropStale); the next read keeps
// its rendering again. Every answer is byte for byte a fresh rendering,
// with the Content-Length MAAS's Django sends.
func TestMachineAnswersShareTheListingCache(t *testing.T) {
	l := newSimLab(t, nil)
	a := l.ready(1, "a")
	kept := func() (current, held bool) {
		l.s.mu.Lock()
		defer l.s.mu.Unlock()
		m := l.s.machines[a]
		return m.rendered.valid && m.rendered.rev == m.rev, m.rendered.json != nil
	}
	fresh := func() string {
		l.s.mu.Lock()
		defer l.s.mu.Unlock()
		b, err := appendJSON(nil, l.s.renderMachine(l.s.machines[a]))
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	check := func(what string, r rawResp, wantKept bool) {
		t.Helper()
		if got, want := string(r.body), fresh(); got != want {
			t.Errorf("%s: answer differs from a fresh rendering:\n got %s\nwant %s", what, got, want)
		}
		if got := r.header.Get("Content-Length"); got != strconv.Itoa(len(r.body)) {
			t.Errorf("%s: Content-Length %q, body %d bytes", what, got, len(r.body))
		}
		if current, held := kept(); current != wantKept || held != wantKept {
			t.Errorf("%s: kept JSON current %v, held %v; want both %v", what, current, held, wantKept)
		}
	}
	l.must(http.StatusOK, "GET", "/machines/", nil, nil) // fills the cache
	check("read", l.must(http.StatusOK, "GET", "/machines/"+a+"/", nil, nil), true)
	for _, q := range []string{"/machines/" + a + "/?op=details", "/nodes/" + a + "/devices/"} {
		l.must(http.StatusOK, "GET", q, nil, nil)
		if current, _ := kept(); !current {
			t.Errorf("GET %s: the machine's kept JSON is not current after it", q)
		}
	}
	check("set_owner_data", l.must(http.StatusOK, "POST", "/machines/"+a+"/?op=set_owner_data", url.Values{"team": {"x"}}, nil), false)
	check("read after the write", l.must(http.StatusOK, "GET", "/machines/"+a+"/", nil, nil), true)
	// allocate answers the machine with constraints_by_type added.
	r := l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {a}}, nil)
	l.s.mu.Lock()
	want, err := appendJSON(nil, l.s.renderAllocated(l.s.machines[a]))
	l.s.mu.Unlock()
	if err != nil || string(r.body) != string(want)+"\n" {
		t.Errorf("allocate: answer differs from a fresh rendering (%v):\n got %s\nwant %s", err, r.body, want)
	}
	if current, held := kept(); current || held {
		t.Errorf("allocate: kept JSON current %v, held %v; want neither", current, held)
	}
	check("read after allocate", l.must(http.StatusOK, "GET", "/machines/"+a+"/", nil, nil), true)
}

// TestAnswersTakeNoListingBuffer: once a listing of many machines has
// put its buffer back, a machine's answer is written from a buffer of
// its own size class, and the listing's buffer serves the next listing.
func TestAnswersTakeNoListingBuffer(t *testing.T) {
	big := pooledBuffer(4 * answerBufferMax)
	*big = append((*big)[:0], make([]byte, 4*answerBufferMax)...)
	pooledJSON{big}.release()
	for range 8 { // sync.Pool may drop what was put; none of the gets may be the listing's
		b := pooledBuffer(17 << 10)
		if cap(*b) > answerBufferMax {
			t.Fatalf("an answer of 17 KB took a buffer of %d bytes", cap(*b))
		}
		pooledJSON{b}.release()
	}
	if b := pooledBuffer(2 * answerBufferMax); cap(*b) < 2*answerBufferMax {
		t.Fatalf("a listing buffer of %d bytes, want at least %d", cap(*b), 2*answerBufferMax)
	}
}

// TestSharedJSONFollowsVLANAndSubnetChanges: the VLAN and subnet JSON
// every interface repeats (render_shared.go) shows a change to the VLAN,
// its fabric or the subnet at the next read of the machine.
func TestSharedJSONFollowsVLANAndSubnetChanges(t *testing.T) {
	l := newSimLab(t, nil)
	a := l.ready(1, "a")
	var ifs []map[string]any
	l.must(http.StatusOK, "GET", "/nodes/"+a+"/interfaces/", nil, &ifs)
	nic, v := fmt.Sprint(ifs[0]["id"]), ifs[0]["vlan"].(map[string]any)
	vlan, fabric := fmt.Sprint(v["id"]), fmt.Sprint(v["fabric_id"])
	var sn map[string]any
	l.must(http.StatusOK, "POST", "/subnets/", url.Values{"cidr": {"10.78.0.0/24"}, "vlan": {vlan}}, &sn)
	l.must(http.StatusOK, "POST", "/nodes/"+a+"/interfaces/"+nic+"/?op=link_subnet",
		url.Values{"mode": {"static"}, "subnet": {fmt.Sprint(sn["id"])}, "ip_address": {"10.78.0.9"}}, nil)
	first := func() (vl, sub map[string]any) {
		t.Helper()
		m := l.machine(a)
		for _, i := range m["interface_set"].([]any) {
			i := i.(map[string]any)
			if fmt.Sprint(i["id"]) == nic {
				s := i["links"].([]any)[0].(map[string]any)["subnet"].(map[string]any)
				return i["vlan"].(map[string]any), s
			}
		}
		t.Fatalf("no interface %s on %s", nic, a)
		return nil, nil
	}
	first() // kept
	before := listingCacheStale.Load()
	l.must(http.StatusOK, "PUT", "/fabrics/"+fabric+"/vlans/"+fmt.Sprint(v["vid"])+"/", url.Values{"mtu": {"9000"}, "name": {"jumbo"}}, nil)
	l.must(http.StatusOK, "PUT", "/fabrics/"+fabric+"/", url.Values{"name": {"renamed"}}, nil)
	l.must(http.StatusOK, "PUT", "/subnets/"+fmt.Sprint(sn["id"])+"/", url.Values{"gateway_ip": {"10.78.0.1"}, "dns_servers": {"10.78.0.2"}}, nil)
	vl, sub := first()
	if vl["mtu"] != 9000.0 || vl["name"] != "jumbo" || vl["fabric"] != "renamed" {
		t.Errorf("interface's VLAN after the changes: %v", vl)
	}
	sv := sub["vlan"].(map[string]any)
	if sub["gateway_ip"] != "10.78.0.1" || fmt.Sprint(sub["dns_servers"]) != "[10.78.0.2]" || sv["mtu"] != 9000.0 || sv["fabric"] != "renamed" {
		t.Errorf("link's subnet after the changes: %v", sub)
	}
	if n := listingCacheStale.Load() - before; n > 0 {
		t.Errorf("%d stale answers", n)
	}
}

// TestAnswersEncodedUnderTheLock: the answers of the requests on a
// machine (its read, its ops, its interfaces' reads and writes) leave the
// handler encoded. A rendering holds the machine's own maps and slices
// (owner_data, tag_names, an interface's params, parents and tags);
// encoded by ServeHTTP after the lock was let go, it raced with the next
// request on the machine (a poll's read against the node's
// set_owner_data), which could crash the lab with a concurrent map
// read and write.
func TestAnswersEncodedUnderTheLock(t *testing.T) {
	l := newSimLab(t, nil)
	a := l.ready(1, "a")
	var ifs []map[string]any
	l.must(http.StatusOK, "GET", "/nodes/"+a+"/interfaces/", nil, &ifs)
	nic := fmt.Sprint(ifs[0]["id"])
	for _, c := range []struct {
		method, path, op string
		form             formValues
	}{
		{"GET", "/machines/" + a + "/", "", nil},
		{"POST", "/machines/" + a + "/", "set_owner_data", formValues{"team": {"x"}}},
		{"POST", "/machines/" + a + "/", "restore_networking_configuration", nil},
		{"GET", "/nodes/" + a + "/devices/", "", nil},
		{"GET", "/nodes/" + a + "/blockdevices/", "", nil},
		{"GET", "/machines/" + a + "/", "power_parameters", nil},
		{"GET", "/nodes/" + a + "/interfaces/", "", nil},
		{"GET", "/nodes/" + a + "/interfaces/" + nic + "/", "", nil},
		{"PUT", "/nodes/" + a + "/interfaces/" + nic + "/", "", formValues{"tags": {"t1"}}},
	} {
		fn, params, err := l.s.match(c.method, c.path, c.op)
		if err != nil {
			t.Fatalf("%s %s op=%s: %v", c.method, c.path, c.op, err)
		}
		r := httptest.NewRequest(c.method, APIPrefix+c.path, nil)
		out, aerr := fn(l.s, &request{r: r, params: params, form: c.form, user: l.s.opts.User, op: c.op})
		if aerr != nil {
			t.Fatalf("%s %s op=%s: %v", c.method, c.path, c.op, aerr.msg)
		}
		switch out.(type) {
		case rawJSON, pooledJSON:
		default:
			t.Errorf("%s %s op=%s answers %T, encoded after the lock is let go", c.method, c.path, c.op, out)
		}
	}
}

// TestDeployKeepsTheDisksRendered: a deploy changes the machine's
// interfaces (the AUTO links' addresses), not its disks, so the disks'
// part of its JSON is not rendered again (the answer and every later
// read are still checked against a fresh rendering: verifyListingCache).
func TestDeployKeepsTheDisksRendered(t *testing.T) {
	l := newSimLab(t, nil)
	a := l.ready(1, "a")
	revs := func() (iface, disk uint64) {
		l.s.mu.Lock()
		defer l.s.mu.Unlock()
		p := &l.s.machines[a].parts
		return p.ifaceRev, p.diskRev
	}
	before := listingCacheStale.Load()
	l.must(http.StatusOK, "GET", "/machines/"+a+"/", nil, nil)
	i0, d0 := revs()
	l.must(http.StatusOK, "POST", "/machines/"+a+"/?op=deploy", nil, nil)
	l.must(http.StatusOK, "GET", "/machines/"+a+"/", nil, nil)
	if i1, d1 := revs(); d1 != d0 || i1 == i0 {
		t.Errorf("deploy: interface rev %d -> %d, disk rev %d -> %d; want the interfaces touched and the disks not", i0, i1, d0, d1)
	}
	if n := listingCacheStale.Load() - before; n > 0 {
		t.Errorf("%d stale answers", n)
	}
}
