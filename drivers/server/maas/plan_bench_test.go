package maas

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	simmaas "github.com/slipway-dev/slipway/sim/maas"
)

// BenchmarkPlanNodes10000 plans 10,000 commissioned machines of a
// simulated MAAS: each node's NICs named by PCI address (a node devices
// read per machine), a bond of two of them with an address, and a disk
// layout that differs from MAAS's default (so each plan has changes).
// It reports the requests one plan makes.
func BenchmarkPlanNodes10000(b *testing.B) {
	const count = 10000
	creds := simmaas.Credentials{ConsumerKey: "ck", TokenKey: "tk", TokenSecret: "ts"}
	s := simmaas.New(simmaas.Options{APIKey: creds, TimeScale: 0.00001})
	hs := httptest.NewServer(s)
	defer hs.Close()
	d, err := NewDriver(drivers.Config{Settings: map[string]string{SettingURL: hs.URL + "/MAAS", SettingTimeout: "60s"},
		Secrets: map[string]drivers.Secret{SecretAPIKey: drivers.NewSecret(creds.String())}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ids := make([]string, count)
	for i := range ids {
		ids[i] = s.Enlist(planBenchHardware(i), "manual", nil)
	}
	commissionAll(b, d, ids)
	site := drivers.SiteSpec{Subnets: []drivers.Subnet{{Name: "data", CIDR: "10.40.0.0/16", Gateway: "10.40.0.1"}}}
	if _, err := d.PrepareSite(ctx, site); err != nil {
		b.Fatal(err)
	}
	nodes := make([]drivers.Node, count)
	for i := range nodes {
		nodes[i] = planBenchNode(i, ids[i])
	}
	before := s.Stats().Snapshot().Total
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		ps, err := d.PlanNodes(ctx, nodes)
		if err != nil || len(ps) != count || !ps[count-1].Found || len(ps[count-1].Changes) == 0 {
			b.Fatalf("%d plans, %v", len(ps), err)
		}
		b.Logf("%d nodes planned in %s", count, time.Since(start).Round(time.Millisecond))
	}
	b.StopTimer()
	b.ReportMetric(float64(s.Stats().Snapshot().Total-before)/float64(b.N), "requests/plan")
}

func planBenchHardware(i int) *simmaas.Hardware {
	mac := func(port int) string {
		return fmt.Sprintf("02:30:%02x:%02x:%02x:%02x", i>>16&0xff, i>>8&0xff, i&0xff, port)
	}
	return &simmaas.Hardware{Arch: "amd64/generic", CPUs: 32, MemoryMiB: 131072,
		NICs: []simmaas.NIC{{MAC: mac(1), PCI: "0000:19:00.0", Name: "eno1"}, {MAC: mac(2), PCI: "0000:3b:00.0", Name: "ens3f0"},
			{MAC: mac(3), PCI: "0000:3b:00.1", Name: "ens3f1"}},
		Disks: []simmaas.Disk{{Name: "sda", Bus: "scsi", Addr: "2:0:0:0", Size: 480_103_981_056, Serial: fmt.Sprintf("S%08d", i)}}}
}

func planBenchNode(i int, id string) drivers.Node {
	pci := func(alias, addr string) drivers.Device {
		return drivers.Device{Alias: alias, Bus: "pci", Address: addr}
	}
	root := &drivers.Filesystem{FSType: "ext4", Mountpoint: "/"}
	return drivers.Node{NodeRef: drivers.NodeRef{Name: fmt.Sprintf("n%05d", i), MachineID: id}, Hostname: fmt.Sprintf("n%05d", i),
		Tags: []string{"bench"},
		Interfaces: []drivers.Interface{{Name: "bond0", Link: drivers.Link{Name: "data", BondMode: "802.3ad", MTU: 9000},
			Devices: []drivers.Device{pci("p0", "0000:3b:00.0"), pci("p1", "0000:3b:00.1")},
			Networks: []drivers.InterfaceNetwork{{Subnet: drivers.Subnet{Name: "data", CIDR: "10.40.0.0/16"},
				Address: fmt.Sprintf("10.40.%d.%d", i/250, i%250+2)}}}},
		Storage: drivers.Storage{Devices: []drivers.StorageDevice{{Device: drivers.Device{Alias: "sda"},
			Partitions: []drivers.Partition{{Name: "root", Size: ">10G", Filesystem: root}}}}},
		Platform: drivers.Platform{KernelParams: map[string]string{"console": "ttyS0"}}}
}

// commissionAll commissions the machines, 32 requests at a time, and
// waits until every one is Ready.
func commissionAll(b *testing.B, d *Driver, ids []string) {
	ctx := context.Background()
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for _, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := d.c.call(ctx, http.MethodPost, "machines/"+id+"/", "commission", nil, nil); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var ms []mMachineState
		if err := d.c.call(ctx, http.MethodGet, "machines/", "", url.Values{"status": {"ready"}}, &ms); err != nil {
			b.Fatal(err)
		}
		if len(ms) == len(ids) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d machines Ready", len(ms), len(ids))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
