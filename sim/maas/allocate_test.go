package maas

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// allocLab has four Ready machines placed by their hardware:
// small (16 CPUs, 64 GiB, zone default), gpu-a (224 CPUs, 2 TiB, zone
// rack-a, pool gpu, tags gpu,h100), gpu-b (the same with 192 CPUs and
// 1 TiB) and cpu-a (64 CPUs, 512 GiB, zone rack-a).
func allocLab(t *testing.T) (*simLab, map[string]string) {
	l := newSimLab(t, nil)
	set := func(i, cpus, memGiB int, zone, pool string, tags ...string) {
		h := l.hw[strings.ToLower(labMAC(i, 1))]
		h.CPUs, h.MemoryMiB, h.Zone, h.Pool, h.Tags = cpus, memGiB<<10, zone, pool, tags
	}
	set(2, 224, 2048, "rack-a", "gpu", "gpu", "h100")
	set(3, 192, 1024, "rack-a", "gpu", "gpu", "h100")
	set(4, 64, 512, "rack-a", "", "")
	ids := map[string]string{}
	for i, name := range []string{"small", "gpu-a", "gpu-b", "cpu-a"} {
		ids[name] = l.ready(i+1, name)
	}
	return l, ids
}

func allocate(l *simLab, form url.Values) rawResp {
	form.Set("dry_run", "true")
	return l.do("POST", "/machines/?op=allocate", form)
}

func allocated(t *testing.T, r rawResp) string {
	t.Helper()
	if r.code != http.StatusOK {
		t.Fatalf("allocate: %s", r)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatal(err)
	}
	return m["hostname"].(string)
}

// TestAllocateConstraints: zone, pool, tags (all), cpu_count and mem
// (minimums), name and system_id select machines; of several matches
// the cheapest (cpu_count + memory/1024) is taken.
func TestAllocateConstraints(t *testing.T) {
	l, ids := allocLab(t)
	cases := []struct {
		name string
		form url.Values
		want string
	}{
		{"nothing: the cheapest", url.Values{}, "small"},
		{"zone", url.Values{"zone": {"rack-a"}}, "cpu-a"},
		{"pool", url.Values{"pool": {"gpu"}}, "gpu-b"},
		{"every tag", url.Values{"tags": {"gpu,h100"}}, "gpu-b"},
		{"tags repeated", url.Values{"tags": {"gpu", "h100"}}, "gpu-b"},
		{"tags space separated", url.Values{"tags": {"gpu h100"}}, "gpu-b"},
		{"not_tags", url.Values{"zone": {"rack-a"}, "not_tags": {"h100"}}, "cpu-a"},
		{"cpu_count minimum", url.Values{"cpu_count": {"200"}}, "gpu-a"},
		{"cpu_count equal", url.Values{"cpu_count": {"192"}}, "gpu-b"},
		{"mem minimum (MiB)", url.Values{"mem": {"1048577"}}, "gpu-a"},
		{"mem as a float", url.Values{"mem": {"524288.0"}}, "cpu-a"},
		{"name", url.Values{"name": {"gpu-a"}}, "gpu-a"},
		{"name as FQDN", url.Values{"name": {"gpu-a.maas"}}, "gpu-a"},
		{"system_id", url.Values{"system_id": {ids["gpu-a"]}}, "gpu-a"},
		{"zone and tags and cpu", url.Values{"zone": {"rack-a"}, "tags": {"gpu"}, "cpu_count": {"100"}, "pool": {"gpu"}}, "gpu-b"},
		{"either zone", url.Values{"zone": {"default", "rack-a"}, "cpu_count": {"50"}}, "cpu-a"},
	}
	for _, tc := range cases {
		if got := allocated(t, allocate(l, tc.form)); got != tc.want {
			t.Errorf("%s: allocated %s, want %s", tc.name, got, tc.want)
		}
	}
	// A real allocation takes the machine: the next one gets another.
	first := allocated(t, l.do("POST", "/machines/?op=allocate", url.Values{"tags": {"gpu"}}))
	second := allocated(t, l.do("POST", "/machines/?op=allocate", url.Values{"tags": {"gpu"}}))
	if first != "gpu-b" || second != "gpu-a" {
		t.Errorf("two allocations by tag: %s then %s", first, second)
	}
	r := l.do("POST", "/machines/?op=allocate", url.Values{"tags": {"gpu"}})
	wantConflict(t, "a third GPU machine", r, `No available machine matches constraints: [('tags', ['gpu'])] (resolved to "tags=gpu")`)
}

// TestAllocateRefusals: MAAS's form errors (400, by field) for a zone,
// pool or tag it lacks and numbers that do not parse; its 409 messages
// when nothing matches.
func TestAllocateRefusals(t *testing.T) {
	l, ids := allocLab(t)
	bad := []struct {
		form        url.Values
		field, want string
	}{
		{url.Values{"zone": {"nowhere"}}, "zone", "No such zone: 'nowhere'."},
		{url.Values{"zone": {"rack-a", "x", "y"}}, "zone", "No such zone(s): x, y."},
		{url.Values{"pool": {"nopool"}}, "pool", "No such pool: 'nopool'."},
		{url.Values{"tags": {"gpu,nosuch,other"}}, "tags", "No such tag(s): 'nosuch', 'other'."},
		{url.Values{"cpu_count": {"many"}}, "cpu_count", "Invalid CPU count: number required."},
		{url.Values{"mem": {"1GiB"}}, "mem", "Invalid memory: number of MiB required."},
	}
	for _, b := range bad {
		r := allocate(l, b.form)
		var fields map[string][]string
		if r.code != http.StatusBadRequest || json.Unmarshal(r.body, &fields) != nil || len(fields[b.field]) != 1 || fields[b.field][0] != b.want {
			t.Errorf("allocate %v: %s, want 400 {%q: [%q]}", b.form, r, b.field, b.want)
		}
	}
	wantConflict(t, "too many CPUs", allocate(l, url.Values{"cpu_count": {"1000"}, "zone": {"rack-a"}}),
		`No available machine matches constraints: [('cpu_count', ['1000']), ('dry_run', ['true']), ('zone', ['rack-a'])] (resolved to "cpu_count=1000.0 zone=rack-a")`)
	wantConflict(t, "a tag no Ready machine in the zone has", allocate(l, url.Values{"tags": {"gpu"}, "zone": {"default"}}),
		`(resolved to "tags=gpu zone=default")`)
	// A machine that is not Ready is not available.
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {ids["small"]}}, nil)
	wantConflict(t, "an allocated machine by system_id", allocate(l, url.Values{"system_id": {ids["small"]}}),
		"No machine with system ID "+ids["small"]+" available.")
	wantConflict(t, "an allocated machine by name", allocate(l, url.Values{"name": {"small"}}),
		`(resolved to "name=small")`)
}
