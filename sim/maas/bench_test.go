package maas

// Benchmarks of the lab's scale: reading 1,000 machines in one request (a
// driver's inventory poll), and the memory 10,000 simulated machines take.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// benchHardware is a server with a few NICs and disks, as the lab builds.
func benchHardware(i int) *Hardware {
	nic := func(port int, pci, name, network string) NIC {
		return NIC{MAC: fmt.Sprintf("02:00:%02x:%02x:%02x:%02x", i>>16&0xff, i>>8&0xff, i&0xff, port), PCI: pci, Name: name,
			Network: network, Vendor: "Intel Corporation", Product: "Ethernet Controller X710 for 10GbE SFP+"}
	}
	return &Hardware{
		Arch: "amd64/generic", CPUs: 32, MemoryMiB: 262144, Vendor: "Dell Inc.", Product: "PowerEdge R650",
		NICs: []NIC{
			nic(1, "0000:19:00.0", "eno1", "oob"),
			nic(2, "0000:3b:00.0", "ens3f0", "prov"),
			nic(3, "0000:3b:00.1", "ens3f1", "data"),
			nic(4, "0000:5e:00.0", "ens4f0", "storage"),
		},
		Disks: []Disk{
			{Name: "sda", Bus: "scsi", Addr: "2:0:0:0", Size: 480_103_981_056, Model: "MZ7LH480HAHQ0D3", Serial: fmt.Sprintf("S45PNA0M%06d", i)},
			{Name: "nvme0n1", Bus: "nvme", Addr: "0000:b1:00.0", Size: 1_600_321_314_816, Model: "Dell Ent NVMe P5600 MU U.2 1.6TB", Serial: fmt.Sprintf("PHAB%06dA", i)},
			{Name: "nvme1n1", Bus: "nvme", Addr: "0000:b2:00.0", Size: 1_600_321_314_816, Model: "Dell Ent NVMe P5600 MU U.2 1.6TB", Serial: fmt.Sprintf("PHAB%06dB", i)},
		},
	}
}

// addReadyMachines puts n commissioned, Ready machines into s the way the
// lab does (the machine enlists itself; commissioning discovers it),
// without waiting on phase timers.
func addReadyMachines(s *Server, hw []*Hardware) {
	for i, h := range hw {
		id := s.Enlist(h, "ipmi", PowerParams{"power_address": fmt.Sprintf("10.99.%d.%d", i/250, i%250+1), "power_user": "root", "power_pass": "calvin"})
		s.mu.Lock()
		m := s.machines[id]
		m.CPUCount, m.MemoryMiB = h.CPUs, h.MemoryMiB
		s.discoverInterfaces(m)
		s.discoverDisks(m)
		m.commissioned = true
		m.Status, m.PowerState = StatusReady, "off"
		s.mu.Unlock()
	}
}

// addLinks gives every machine's provisioning NIC an address on a subnet
// of its VLAN, as a deployed site has.
func addLinks(s *Server) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range sortedMachines(s.machines) {
		for _, i := range m.Interfaces {
			if i.Name != "ens3f0" {
				continue
			}
			var sn *subnet
			for _, x := range s.subnets {
				if x.VLANID == i.VLANID {
					sn = x
				}
			}
			if sn == nil {
				sn = &subnet{ID: s.nextID(), Name: "prov", CIDR: "10.10.0.0/16", VLANID: i.VLANID, GatewayIP: "10.10.0.1",
					DNSServers: []string{"10.10.0.2"}, Managed: true, AllowDNS: true}
				s.subnets[sn.ID] = sn
			}
			n++
			i.Links = append(i.Links, &link{ID: s.nextID(), Mode: "auto", SubnetID: sn.ID, IP: fmt.Sprintf("10.10.%d.%d", n/250, n%250+2)})
		}
	}
}

// BenchmarkMachinesRead1000 is GET /machines/ on a site of 1,000 machines
// (4 NICs, 3 disks each), through HTTP with the OAuth header. Target: under
// 200 ms per read.
func BenchmarkMachinesRead1000(b *testing.B) {
	const n = 1000
	s := New(Options{APIKey: labCreds, TimeScale: labTimeScale, Durations: labDurations()})
	defer s.Close()
	hw := make([]*Hardware, n)
	for i := range hw {
		hw[i] = benchHardware(i)
	}
	addReadyMachines(s, hw)
	addLinks(s)
	hs := httptest.NewServer(s)
	defer hs.Close()
	cl := hs.Client()
	read := func() int {
		req, _ := http.NewRequest("GET", hs.URL+APIPrefix+"/machines/", nil)
		req.Header.Set("Authorization", oauthHeader(labCreds))
		resp, err := cl.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		nb, _ := io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET /machines/: %d", resp.StatusCode)
		}
		return int(nb)
	}
	size := read()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		read()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
	b.ReportMetric(float64(size)/(1<<20), "MiB/response")
}

// BenchmarkLab10000 measures the memory of 10,000 machines: the simulator's
// records of them (B/machine) and the simulated hardware behind them
// (hw-B/machine), from the live heap before and after.
func BenchmarkLab10000(b *testing.B) {
	const n = 10000
	var perMachine, hwPerMachine float64
	for b.Loop() {
		heap0 := liveHeap()
		hw := make([]*Hardware, n)
		for i := range hw {
			hw[i] = benchHardware(i)
		}
		heap1 := liveHeap()
		s := New(Options{APIKey: labCreds, TimeScale: labTimeScale, Durations: labDurations()})
		addReadyMachines(s, hw)
		heap2 := liveHeap()
		if len(s.machines) != n {
			b.Fatalf("%d machines", len(s.machines))
		}
		hwPerMachine = float64(heap1-heap0) / n
		perMachine = float64(heap2-heap1) / n
		runtime.KeepAlive(hw)
		runtime.KeepAlive(s)
		s.Close()
	}
	b.ReportMetric(perMachine, "B/machine")
	b.ReportMetric(hwPerMachine, "hw-B/machine")
}

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// BenchmarkRequests10000 is what one request costs the simulator when it
// holds 10,000 machines (4 NICs, 3 disks, a linked address each): the
// look-ups a driver makes to identify a node (by hostname, by MAC, every
// machine's power parameters), the batched status poll of every machine
// by id (twice: the second from the listing cache), a single machine's
// read. Served by the handler directly, without HTTP.
// benchSite is a simulator of n Ready machines, each with a linked
// provisioning address, without the listing cache's self-check (what the
// lab does: a benchmark measures cache hits, not their check); it closes,
// and the check is back, when b ends.
func benchSite(b *testing.B, n int) *Server {
	b.Helper()
	verify := verifyListingCache
	verifyListingCache = false
	s := New(Options{APIKey: labCreds, TimeScale: labTimeScale, Durations: labDurations()})
	b.Cleanup(func() {
		s.Close()
		verifyListingCache = verify
	})
	hw := make([]*Hardware, n)
	for i := range hw {
		hw[i] = benchHardware(i)
	}
	addReadyMachines(s, hw)
	addLinks(s)
	return s
}

func BenchmarkRequests10000(b *testing.B) {
	const n = 10000
	s := benchSite(b, n)
	ids := url.Values{}
	for _, m := range sortedMachines(s.machines) {
		ids.Add("id", m.SystemID)
	}
	one := sortedMachines(s.machines)[n/2]
	serve := func(b *testing.B, method, target string) {
		req := httptest.NewRequest(method, APIPrefix+target, nil)
		req.Header.Set("Authorization", oauthHeader(labCreds))
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s %s: %d %s", method, target, rec.Code, rec.Body.String()[:min(rec.Body.Len(), 200)])
		}
	}
	for _, c := range []struct{ name, target string }{
		{"hostname", "/machines/?hostname=nosuch"},
		{"mac", "/machines/?mac_address=02:00:ff:ff:ff:01"},
		{"power_parameters", "/machines/?op=power_parameters"},
		{"poll", "/machines/?" + ids.Encode()},
		{"read", "/machines/" + one.SystemID + "/"},
	} {
		b.Run(c.name, func(b *testing.B) {
			serve(b, "GET", c.target)
			b.ReportAllocs()
			for b.Loop() {
				serve(b, "GET", c.target)
			}
		})
	}
}

// BenchmarkHotHandlers is what the requests a rollout's configure stage
// sends most cost the simulator at 2,000 machines, through its handler
// (no HTTP): a machine read when nothing changed it since the last
// answer, a write that answers the machine (set_owner_data) followed by
// the engine's read of it, and the batched status poll of 500 machines
// of which 50 were written since the last poll.
func BenchmarkHotHandlers(b *testing.B) {
	const n = 2000
	s := benchSite(b, n)
	ms := sortedMachines(s.machines)
	one := ms[n/2].SystemID
	ids := url.Values{}
	for _, m := range ms[:500] {
		ids.Add("id", m.SystemID)
	}
	serve := func(b *testing.B, method, target string, body url.Values) {
		req := httptest.NewRequest(method, APIPrefix+target, strings.NewReader(body.Encode()))
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.Header.Set("Authorization", oauthHeader(labCreds))
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s %s: %d %s", method, target, rec.Code, rec.Body.String()[:min(rec.Body.Len(), 200)])
		}
	}
	read := "/machines/" + one + "/"
	b.Run("read", func(b *testing.B) {
		serve(b, "GET", read, nil)
		b.ReportAllocs()
		for b.Loop() {
			serve(b, "GET", read, nil)
		}
	})
	b.Run("write+read", func(b *testing.B) {
		b.ReportAllocs()
		k := 0
		for b.Loop() {
			k++
			serve(b, "POST", read+"?op=set_owner_data", url.Values{"bench": {strconv.Itoa(k % 2)}})
			serve(b, "GET", read, nil)
		}
	})
	b.Run("poll500-50changed", func(b *testing.B) {
		serve(b, "GET", "/machines/?"+ids.Encode(), nil)
		b.ReportAllocs()
		k := 0
		for b.Loop() {
			s.mu.Lock()
			for j := 0; j < 50; j++ {
				k++
				s.touch(ms[k%500])
			}
			s.mu.Unlock()
			serve(b, "GET", "/machines/?"+ids.Encode(), nil)
		}
	})
}

// BenchmarkConfigure is one machine's network configuration as the
// engine's configure stage sends it, on a site of 2,000 Ready machines
// with a linked provisioning address each: a bond (of one NIC: the
// simulated NICs are on VLANs of their own), two VLAN
// interfaces on it, a static address on each (the design's, as the
// engine sends it) and an automatic one on the
// provisioning NIC, the owner data, the engine's read of the machine and
// the poll of it; then restore_networking_configuration, so that the
// next round configures the next machine from the same start.
func BenchmarkConfigure(b *testing.B) {
	const n = 2000
	s := benchSite(b, n)
	ms := sortedMachines(s.machines)
	vlanIDs, subnetIDs, provSubnet := benchVLANs(s, ms[0])
	do := func(method, target string, form url.Values) string {
		var req *http.Request
		if method == http.MethodGet {
			req = httptest.NewRequest(method, APIPrefix+target+"?"+form.Encode(), nil)
		} else {
			req = httptest.NewRequest(method, APIPrefix+target, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.Header.Set("Authorization", oauthHeader(labCreds))
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%s %s: %d %s", method, target, rec.Code, rec.Body.String()[:min(rec.Body.Len(), 300)])
		}
		var out struct{ ID int }
		if method == http.MethodPost && strings.Contains(target, "op=create_") {
			_ = json.Unmarshal(rec.Body.Bytes(), &out) // the new interface's id
		}
		return strconv.Itoa(out.ID)
	}
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		m := ms[k%n]
		k++
		sid := m.SystemID
		nics := map[string]string{}
		for _, i := range m.Interfaces {
			nics[i.Name] = strconv.Itoa(i.ID)
		}
		base := "/nodes/" + sid + "/interfaces/"
		bond := do("POST", base+"?op=create_bond", url.Values{"name": {"bond0"}, "parents": {nics["ens3f1"]}})
		for j, v := range vlanIDs {
			vif := do("POST", base+"?op=create_vlan", url.Values{"parent": {bond}, "vlan": {v}})
			ip := fmt.Sprintf("10.%d.%d.%d", 101+j, 1+k/250%250, 1+k%250) // the design's address
			do("POST", base+vif+"/?op=link_subnet", url.Values{"mode": {"static"}, "subnet": {subnetIDs[j]}, "ip_address": {ip}})
		}
		do("POST", base+nics["ens3f0"]+"/?op=link_subnet", url.Values{"mode": {"auto"}, "subnet": {provSubnet}, "force": {"true"}})
		do("POST", "/machines/"+sid+"/?op=set_owner_data", url.Values{"rollout": {"bench"}})
		do("GET", "/machines/"+sid+"/", nil)
		do("GET", "/machines/", url.Values{"id": {sid}})
		do("POST", "/machines/"+sid+"/?op=restore_networking_configuration", nil)
	}
}

// benchVLANs adds two tagged VLANs, with a subnet each, on the fabric of
// m's data NIC, and returns their IDs and the provisioning subnet's.
func benchVLANs(s *Server, m *machine) (vlans, subnets []string, prov string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var fabric, provVLAN int
	for _, i := range m.Interfaces {
		switch i.Name {
		case "ens3f1":
			fabric = s.vlans[i.VLANID].FabricID
		case "ens3f0":
			provVLAN = i.VLANID
		}
	}
	for _, sn := range s.subnets {
		if sn.VLANID == provVLAN {
			prov = strconv.Itoa(sn.ID)
		}
	}
	for j, vid := range []int{101, 102} {
		v := &vlan{ID: s.nextID(), FabricID: fabric, VID: vid, Name: strconv.Itoa(vid), MTU: 1500}
		s.vlans[v.ID] = v
		sn := &subnet{ID: s.nextID(), Name: "v" + strconv.Itoa(vid), CIDR: fmt.Sprintf("10.%d.0.0/16", 101+j), VLANID: v.ID, Managed: true}
		s.subnets[sn.ID] = sn
		vlans, subnets = append(vlans, strconv.Itoa(v.ID)), append(subnets, strconv.Itoa(sn.ID))
	}
	return vlans, subnets, prov
}

// BenchmarkMachineOpsParallel is a rollout's configure-stage traffic
// from several goroutines at once, each on machines of its own turn (run
// it with -cpu 2 and more): an owner data write, a tag added to or
// removed from an interface (a write of its interfaces), the engine's
// read of the machine after them, its details, and a poll of 20
// machines. Reads that run beside each other under the read lock
// (shared_reads.go) show as ns/op falling as -cpu grows.
func BenchmarkMachineOpsParallel(b *testing.B) {
	const n = 500
	s := benchSite(b, n)
	ms := sortedMachines(s.machines)
	nics := make([]string, n)
	for k, m := range ms {
		nics[k] = strconv.Itoa(m.Interfaces[0].ID)
	}
	serve := func(method, target string, body url.Values) int {
		req := httptest.NewRequest(method, APIPrefix+target, strings.NewReader(body.Encode()))
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.Header.Set("Authorization", oauthHeader(labCreds))
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Code
	}
	var turn atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := int(turn.Add(1))
			sid := ms[k%n].SystemID
			poll := url.Values{}
			for j := 0; j < 20; j++ {
				poll.Add("id", ms[(k+j*25)%n].SystemID)
			}
			op := []string{"add_tag", "remove_tag"}[k/n%2]
			for _, c := range []struct {
				method, target string
				body           url.Values
			}{
				{"POST", "/machines/" + sid + "/?op=set_owner_data", url.Values{"bench": {strconv.Itoa(k)}}},
				{"POST", "/nodes/" + sid + "/interfaces/" + nics[k%n] + "/?op=" + op, url.Values{"tag": {"bench"}}},
				{"GET", "/machines/" + sid + "/", nil},
				{"GET", "/machines/" + sid + "/?op=details", nil},
				{"GET", "/machines/?" + poll.Encode(), nil},
			} {
				if code := serve(c.method, c.target, c.body); code != http.StatusOK {
					b.Errorf("%s %s: %d", c.method, c.target, code)
					return
				}
			}
		}
	})
}
