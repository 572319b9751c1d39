package ovs_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
)

// Six drivers (six orchestrators, separate connections, no shared lock)
// regroup the same ports at once, three to production (a LAG), three
// to quarantine (plain ports): every call either succeeds or fails
// Transient, and afterwards every interface is in exactly one Port and
// a last production call reads back as planned.
func TestTwoDriversAtOnce(t *testing.T) {
	s := conformanceSwitch(t)
	addr := map[string]string{driverstest.ConformanceSwitch: s.Unix}
	d1, d2 := open(t, addr), open(t, addr)
	node := driverstest.NetworkNode()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 6 { // three drivers each way
		d, phase := drivers.Network(d1), drivers.PhaseProduction
		if i%2 == 1 {
			d, phase = d2, drivers.PhaseQuarantine
		}
		if i > 1 {
			d = open(t, addr)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 8 {
				if _, err := d.ConfigurePorts(ctx, node, phase); err != nil && drivers.Classify(err) != drivers.Transient {
					t.Errorf("%s: %v", phase, err)
				}
			}
		}()
	}
	wg.Wait()
	out, err := s.Vsctl(ctx, "--bare", "--columns=interfaces", "list", "port")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, u := range strings.Fields(strings.ReplaceAll(out, ",", " ")) {
		seen[u]++
	}
	for u, n := range seen {
		if n != 1 {
			t.Errorf("interface %s is in %d ports:\n%s", u, n, out)
		}
	}
	if _, err := d1.ConfigurePorts(ctx, node, drivers.PhaseProduction); err != nil {
		t.Fatal(err)
	}
	want, _ := drivers.PortPlan(node, drivers.PhaseProduction)
	refs := make([]drivers.SwitchPort, len(want))
	for i, w := range want {
		refs[i] = w.SwitchPort
	}
	got, err := d2.ReadPorts(ctx, refs)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		if !w.Equal(got[i].PortConfig) {
			t.Errorf("%s: %v", w.SwitchPort, w.Diff(got[i].PortConfig))
		}
	}
}
