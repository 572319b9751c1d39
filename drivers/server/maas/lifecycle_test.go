package maas

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
)

func TestProbeSite(t *testing.T) {
	l := startLab(t, lab.Config{Machines: 1})
	d := newTestDriver(t, l, nil)
	info, err := d.ProbeSite(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if !info.Reachable || !info.Authenticated || info.Version == "" || len(info.Capabilities) == 0 {
		t.Errorf("ProbeSite: %+v", info)
	}
	found := false
	for _, b := range info.BootImages {
		found = found || b == "ubuntu/jammy"
	}
	if !found {
		t.Errorf("boot images %v lack ubuntu/jammy", info.BootImages)
	}
}

func TestWrongAPIKeyIsPermanent(t *testing.T) {
	l := startLab(t, lab.Config{Machines: 1})
	info := l.Info()
	d, err := NewDriver(drivers.Config{Settings: map[string]string{SettingURL: info.MAASURL},
		Secrets: map[string]drivers.Secret{SecretAPIKey: drivers.NewSecret("wrong:wrong:wrong")}})
	if err != nil {
		t.Fatal(err)
	}
	si, err := d.ProbeSite(testCtx(t))
	if drivers.Classify(err) != drivers.Permanent || !si.Reachable || si.Authenticated {
		t.Errorf("ProbeSite with a wrong key: %+v, %v; want reachable, not authenticated, a Permanent error", si, err)
	}
	if _, err := d.Status(testCtx(t), []drivers.NodeRef{{Name: "x", MachineID: "abc"}}); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("Status with a wrong key: %v, want Permanent", err)
	}
}

func TestPrepareSiteTwice(t *testing.T) {
	des := exampleDesign(t)
	l := startLab(t, lab.Config{Design: des})
	d := newTestDriver(t, l, nil)
	site := driverspec.Site(des)
	if site.PXENetwork != "pxe" || len(site.Links) != 2 || len(site.SSHKeys) == 0 {
		t.Fatalf("driverspec.Site: pxe %q links %+v keys %v", site.PXENetwork, site.Links, site.SSHKeys)
	}
	// A route MAAS can hold: mgmt -> storage (both design subnets).
	for i := range site.Subnets {
		if site.Subnets[i].Name == "mgmt" {
			site.Subnets[i].Routes = append(site.Subnets[i].Routes, drivers.Route{To: "10.13.0.0/24", Via: "10.12.0.254", Metric: 50})
		}
	}
	// The pxe subnet already exists on the wrong fabric: it is moved.
	if err := d.c.call(testCtx(t), "POST", "subnets/", "", url.Values{"cidr": {"10.11.0.0/24"}, "vlan": {"5001"}}, nil); err != nil {
		t.Fatal(err)
	}
	first := l.MAAS.Stats().Snapshot().Total
	r, err := d.PrepareSite(testCtx(t), site)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first PrepareSite: %d requests", l.MAAS.Stats().Snapshot().Total-first)
	if r.Status != drivers.StatusDone || r.Message == "no changes" || !strings.Contains(r.Message, "created subnet") ||
		!strings.Contains(r.Message, "created subnet 10.0.0.0/24 on fabric "+RouteFabric+" as the destination of static routes") {
		t.Fatalf("first PrepareSite: %+v", r)
	}
	t.Logf("first PrepareSite: %s", r.Message)
	before := l.MAAS.Stats().Snapshot().Total
	writesBefore := count(l, "POST*") + count(l, "PUT*")
	r, err = d.PrepareSite(testCtx(t), site)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != drivers.StatusDone || !strings.HasPrefix(r.Message, "no changes") {
		t.Errorf("second PrepareSite: %+v, want Done no changes", r)
	}
	if w := count(l, "POST*") + count(l, "PUT*") - writesBefore; w != 0 {
		t.Errorf("second PrepareSite wrote %d times", w)
	}
	t.Logf("second PrepareSite: %d requests, %s", l.MAAS.Stats().Snapshot().Total-before, r.Message)

	// What MAAS now has: the storage subnet on VLAN 30 with MTU 9000, the
	// pxe dhcp range dynamic, no MAAS range for static ranges.
	var subnets []mSubnet
	var ranges []mIPRange
	if err := d.c.call(testCtx(t), "GET", "subnets/", "", nil, &subnets); err != nil {
		t.Fatal(err)
	}
	if err := d.c.call(testCtx(t), "GET", "ipranges/", "", nil, &ranges); err != nil {
		t.Fatal(err)
	}
	for _, sn := range subnets {
		if sn.CIDR == "10.13.0.0/24" && (sn.VLAN == nil || sn.VLAN.VID != 30 || sn.VLAN.MTU != 9000 || sn.GatewayIP == nil || *sn.GatewayIP != "10.13.0.1") {
			t.Errorf("storage subnet: %+v vlan %+v", sn, sn.VLAN)
		}
	}
	// A fabric per link; each network's VLAN on its link's fabric; DHCP on
	// the PXE VLAN.
	var fabrics []mFabric
	if err := d.c.call(testCtx(t), "GET", "fabrics/", "", nil, &fabrics); err != nil {
		t.Fatal(err)
	}
	fabID := map[string]int{}
	for _, f := range fabrics {
		fabID[f.Name] = f.ID
	}
	if _, ok := fabID["pxe-link"]; !ok {
		t.Errorf("no fabric pxe-link: %+v", fabrics)
	}
	if _, ok := fabID["data-bond"]; !ok {
		t.Errorf("no fabric data-bond: %+v", fabrics)
	}
	wantOn := map[string]struct {
		fabric string
		vid    int
	}{"10.11.0.0/24": {"pxe-link", 0}, "10.12.0.0/24": {"data-bond", 0}, "10.13.0.0/24": {"data-bond", 30},
		"10.14.0.0/24": {"data-bond", 40}, "10.10.0.0/24": {"fabric-0", 10}}
	subnetID := map[string]int{}
	for _, sn := range subnets {
		subnetID[sn.CIDR] = sn.ID
		w, ok := wantOn[sn.CIDR]
		if !ok {
			continue
		}
		if sn.VLAN == nil || sn.VLAN.FabricID != fabID[w.fabric] || sn.VLAN.VID != w.vid {
			t.Errorf("subnet %s on %+v, want VID %d of fabric %s", sn.CIDR, sn.VLAN, w.vid, w.fabric)
		}
		if dhcp := sn.VLAN != nil && sn.VLAN.DHCPOn && sn.VLAN.Primary != nil; dhcp != (sn.CIDR == "10.11.0.0/24") {
			t.Errorf("subnet %s: DHCP on its VLAN %v", sn.CIDR, dhcp)
		}
	}
	var routes []mStaticRoute
	if err := d.c.call(testCtx(t), "GET", "static-routes/", "", nil, &routes); err != nil {
		t.Fatal(err)
	}
	// The design's routes to networks outside the design (10.0.0.0/24,
	// 10.113.0.0/24) got destination subnets, so MAAS has every route.
	got := map[string]bool{}
	for _, r := range routes {
		if r.Source != nil && r.Destination != nil {
			got[fmt.Sprintf("%s -> %s via %s metric %d", r.Source.CIDR, r.Destination.CIDR, r.GatewayIP, r.Metric)] = true
		}
	}
	for _, w := range []string{"10.12.0.0/24 -> 10.13.0.0/24 via 10.12.0.254 metric 50", "10.12.0.0/24 -> 10.0.0.0/24 via 10.12.0.254 metric 100",
		"10.10.0.0/24 -> 10.0.0.0/24 via 10.10.0.254 metric 100", "10.13.0.0/24 -> 10.113.0.0/24 via 10.13.0.254 metric 100"} {
		if !got[w] {
			t.Errorf("no static route %s in %v", w, got)
		}
	}
	if len(routes) != 4 {
		t.Errorf("%d static routes, want 4", len(routes))
	}
	if ok, err := d.domainExists(testCtx(t), "lab.example.net"); err != nil || !ok {
		t.Errorf("domain lab.example.net: %v %v", ok, err)
	}
	var keys []mSSHKey
	if err := d.c.call(testCtx(t), "GET", "account/prefs/sshkeys/", "", nil, &keys); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keyID(keys[0].Key) != keyID(site.SSHKeys[0]) {
		t.Errorf("ssh keys: %+v", keys)
	}
	types := map[string]string{}
	for _, rg := range ranges {
		types[rg.StartIP] = rg.Type
	}
	if types["10.11.0.10"] != "dynamic" || types["10.11.0.2"] != "reserved" || types["10.12.0.10"] != "" {
		t.Errorf("ranges: %v", types)
	}
	// An empty SiteSpec changes nothing.
	if r, err := d.PrepareSite(testCtx(t), drivers.SiteSpec{}); err != nil || r.Message != "no changes" {
		t.Errorf("PrepareSite(empty): %+v, %v", r, err)
	}
}

// TestLifecycle takes generic lab machines through identify, commission,
// deploy, status, owned, recover and release.
func TestLifecycle(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 3})
	d := newTestDriver(t, l, nil)
	ms := l.Machines()
	nA, nB, nC := genericNode(ms[0]), genericNode(ms[1]), genericNode(ms[2])

	// A: powered on from PXE; found by its BMC address once enlisted.
	start := l.MAAS.Stats().Snapshot().Total
	polls := 0 // requests of calls that only looked at the state
	step := func(what string, fn func(ctx context.Context) (drivers.Result, error)) func(ctx context.Context) (drivers.Result, error) {
		return func(ctx context.Context) (drivers.Result, error) {
			b := l.MAAS.Stats().Snapshot().Total
			r, err := fn(ctx)
			if n := l.MAAS.Stats().Snapshot().Total - b; r.Status == drivers.StatusInProgress && n == 1 {
				polls += n
			} else {
				t.Logf("%s: %d requests: %s %s", what, n, r.Status, r.Message)
			}
			return r, err
		}
	}
	_, r, err := d.IdentifyNode(testCtx(t), nA)
	if err != nil || r.Status != drivers.StatusInProgress || !strings.Contains(r.Message, "PXE") {
		t.Fatalf("IdentifyNode before enlistment: %+v, %v", r, err)
	}
	pxeBoot(ms[0])
	var mA drivers.Machine
	mustDone(t, "IdentifyNode A", step("identify", func(ctx context.Context) (r drivers.Result, err error) {
		mA, r, err = d.IdentifyNode(ctx, nA)
		return r, err
	}))
	if mA.Hostname != nA.Hostname || mA.State != "New" || mA.Node != nA.Name {
		t.Errorf("machine A: %+v", mA)
	}
	nA.MachineID = mA.MachineID
	mustDone(t, "Commission A", step("commission", func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, nA.NodeRef) }))
	if s := stateOf(t, d, mA.MachineID); s != "Ready" {
		t.Fatalf("after Commission: %s", s)
	}
	nA.OwnerData = map[string]string{"team": "lab"}
	deployA := step("deploy", func(ctx context.Context) (drivers.Result, error) {
		return d.Deploy(ctx, nA, drivers.Deployment{UserData: []byte("#cloud-config\nhostname: a\n")})
	})
	mustDone(t, "Deploy A", deployA)
	total := l.MAAS.Stats().Snapshot().Total - start
	t.Logf("node A New -> Deployed: %d requests, %d of them state polls, %d without", total, polls, total-polls)
	if total-polls > 40 {
		t.Errorf("New -> Deployed took %d requests besides polls, want <= 40", total-polls)
	}
	if m, err := d.fetchMachine(testCtx(t), mA.MachineID); err != nil {
		t.Errorf("read machine A: %v", err)
	} else if m.OwnerData["team"] != "lab" || m.OwnerData[OwnerDataNode] != nA.Name {
		t.Errorf("owner data after Deploy (the design's and the node's mark): %v", m.OwnerData)
	}
	if ms[0].OS() == "" || !strings.Contains(string(ms[0].UserData()), "hostname: a") {
		t.Errorf("deployed machine: os %q, user data %q", ms[0].OS(), ms[0].UserData())
	}
	if r := mustDone(t, "Deploy A again", deployA); !strings.Contains(r.Message, "Deployed") {
		t.Errorf("Deploy after Done: %s", r.Message)
	}
	again, r, err := d.IdentifyNode(testCtx(t), nA)
	if err != nil || r.Status != drivers.StatusDone || again.MachineID != mA.MachineID || !again.Owned {
		t.Errorf("IdentifyNode of the deployed node: %+v %+v %v", again, r, err)
	}

	// B: PXE-enlisted, then found by its boot MAC.
	pxeBoot(ms[1])
	waitEnlisted(t, d, ms[1].Hardware.NICs[0].MAC)
	nB.BootMAC, nB.BMCAddress = strings.ToUpper(ms[1].Hardware.NICs[0].MAC), ""
	mB := identify(t, d, nB)
	nB.MachineID = mB.MachineID
	// C: never powered on; enlisted by its boot MAC, which starts its
	// commissioning (MAAS's create commissions when asked).
	nC.BootMAC, nC.BMCAddress = ms[2].Hardware.NICs[0].MAC, ""
	commissions := count(l, "POST /machines/{machine}/?op=commission")
	mC := identify(t, d, nC)
	nC.MachineID = mC.MachineID
	if mC.State != "Commissioning" || mC.Hostname != nC.Hostname || mB.MachineID == mC.MachineID {
		t.Errorf("machines B %+v, C %+v", mB, mC)
	}
	mustDone(t, "Commission B", func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, nB.NodeRef) })
	mustDone(t, "Commission C", func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, nC.NodeRef) })
	if n := count(l, "POST /machines/{machine}/?op=commission") - commissions; n != 1 {
		t.Errorf("%d commission requests for B and C, want 1 (B's; C's create commissioned it)", n)
	}

	// Status of several nodes: one request.
	lists := count(l, "GET /machines/")
	sts, err := d.Status(testCtx(t), []drivers.NodeRef{nA.NodeRef, {Name: "nowhere"}, nC.NodeRef, nB.NodeRef, {Name: "gone", MachineID: "xyz123"}})
	if err != nil {
		t.Fatal(err)
	}
	labSettle(l) // the answer of three machines in full can reach us before the lab records it
	if n := count(l, "GET /machines/") - lists; n != 1 {
		t.Errorf("Status of 5 nodes made %d GET /machines/ requests, want 1", n)
	}
	want := []struct{ id, state string }{{mA.MachineID, "Deployed"}, {"", ""}, {mC.MachineID, "Ready"}, {mB.MachineID, "Ready"}, {"", ""}}
	for i, w := range want {
		if sts[i].MachineID != w.id || sts[i].State != w.state || sts[i].Node == "" {
			t.Errorf("Status[%d] = %+v, want %s %s", i, sts[i], w.id, w.state)
		}
	}
	if !sts[0].Owned || sts[0].Power != drivers.PowerOn || sts[3].Owned {
		t.Errorf("Status ownership/power: %+v, %+v", sts[0], sts[3])
	}

	owned, err := d.Owned(testCtx(t))
	if err != nil || len(owned) != 1 || owned[0].MachineID != mA.MachineID || owned[0].Node != nA.Name || !owned[0].Owned {
		t.Errorf("Owned: %+v, %v", owned, err)
	}

	// Recovery: abort a deployment of B, then deploy it to the end. The
	// deployment to abort lasts until the abort (at the test's time scale
	// a deploy takes 0.24 s, less than a loaded machine may take between
	// the two calls); the next one takes the usual time.
	l.MAAS.SetDurations(func(du *maas.Durations) { du.Deploy = 1000 * time.Hour })
	r, err = d.Deploy(testCtx(t), nB, drivers.Deployment{})
	l.MAAS.SetDurations(func(du *maas.Durations) { du.Deploy = maas.DefaultDurations.Deploy })
	if err != nil || r.Status != drivers.StatusInProgress {
		t.Fatalf("Deploy B: %+v, %v", r, err)
	}
	if r, err := d.Recover(testCtx(t), nB.NodeRef, drivers.RecoveryAbort); err != nil || r.Status != drivers.StatusDone {
		t.Errorf("abort a deployment: %+v, %v", r, err)
	}
	if s := stateOf(t, d, mB.MachineID); s != "Allocated" {
		t.Errorf("after abort: %s, want Allocated", s)
	}
	if r, err := d.Recover(testCtx(t), nB.NodeRef, drivers.RecoveryMarkFixed); err != nil || r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "Allocated") {
		t.Errorf("mark-fixed on an Allocated machine: %+v, %v", r, err)
	}
	if _, err := d.Recover(testCtx(t), nB.NodeRef, "reboot"); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("unknown recovery: %v", err)
	}
	mustDone(t, "Deploy B", func(ctx context.Context) (drivers.Result, error) { return d.Deploy(ctx, nB, drivers.Deployment{}) })

	// A machine allocated to another agent is never deployed or released.
	other := newTestDriver(t, l, map[string]string{SettingInstance: "someone-else"})
	if _, err := other.Deploy(testCtx(t), nB, drivers.Deployment{}); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("Deploy of another agent's machine: %v, want Permanent", err)
	}
	strip := nB
	strip.Name = "imposter"
	if _, err := d.Release(testCtx(t), strip.NodeRef, drivers.EraseNone); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("Release of another node's machine: %v, want Permanent", err)
	}

	// Release with erase, then again.
	sawErase := false
	mustDone(t, "Release A", func(ctx context.Context) (drivers.Result, error) {
		r, err := d.Release(ctx, nA.NodeRef, drivers.EraseDefault)
		sawErase = sawErase || strings.Contains(r.Message, "Disk erasing") || strings.Contains(r.Message, "disk erase")
		return r, err
	})
	if s := stateOf(t, d, mA.MachineID); s != "Ready" || !sawErase {
		t.Errorf("after Release: %s (saw erase: %v)", s, sawErase)
	}
	if r, err := d.Release(testCtx(t), nA.NodeRef, drivers.EraseDefault); err != nil || r.Status != drivers.StatusDone {
		t.Errorf("Release again: %+v, %v", r, err)
	}
	if ms[0].OS() != "" {
		t.Errorf("released machine still runs %q", ms[0].OS())
	}
	// An unknown machine ID is a Permanent error.
	if _, err := d.Commission(testCtx(t), drivers.NodeRef{Name: "x", MachineID: "nosuch"}); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("Commission of an unknown machine: %v", err)
	}
}

// enlistAndIdentify PXE-boots a lab machine and identifies it by BMC.
func enlistAndIdentify(t *testing.T, d *Driver, m *lab.Machine) drivers.Node {
	t.Helper()
	n := genericNode(m)
	pxeBoot(m)
	n.MachineID = identify(t, d, n).MachineID
	return n
}

func TestFailCommissioningAfterRetries(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 1, Faults: &maas.Faults{Machines: map[string]maas.MachineFaults{"lab-0001": {FailCommissioning: 10}}}})
	d := newTestDriver(t, l, map[string]string{SettingCommissionRetries: "2"})
	n := enlistAndIdentify(t, d, l.Machines()[0])
	commissions := count(l, "POST /machines/{machine}/?op=commission")
	r, _ := poll(t, "Commission", func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, n.NodeRef) })
	if r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "injected fault") || !strings.Contains(r.Message, "3 times") {
		t.Errorf("Commission: %+v, want Failed after 3 attempts with MAAS's message", r)
	}
	if n := count(l, "POST /machines/{machine}/?op=commission") - commissions; n != 3 {
		t.Errorf("%d commissionings, want 3 (1 + 2 retries)", n)
	}
}

// TestCommissionBudgetFrom: once the retries are spent Commission is
// Failed, and stays so for the same budget; an operator's retry opens a
// fresh budget (NodeRef.BudgetFrom) and the machine commissions again.
func TestCommissionBudgetFrom(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 1, Faults: &maas.Faults{Machines: map[string]maas.MachineFaults{"lab-0001": {FailCommissioning: 3}}}})
	d := newTestDriver(t, l, map[string]string{SettingCommissionRetries: "1"})
	n := enlistAndIdentify(t, d, l.Machines()[0])
	commission := func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, n.NodeRef) }
	if r, _ := poll(t, "Commission", commission); r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "2 times") {
		t.Fatalf("Commission with its budget spent: %+v, want Failed after 2 attempts", r)
	}
	if r, err := commission(testCtx(t)); err != nil || r.Status != drivers.StatusFailed {
		t.Fatalf("Commission again, same budget: %+v %v, want Failed at once", r, err)
	}
	// MAAS stamps events to the second: the fresh budget starts in a
	// second after the last failure.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	n.BudgetFrom = time.Now()
	before := count(l, "POST /machines/{machine}/?op=commission")
	mustDone(t, "Commission with a fresh budget", func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, n.NodeRef) })
	if got := count(l, "POST /machines/{machine}/?op=commission") - before; got != 2 {
		t.Errorf("%d commissionings with the fresh budget, want 2 (the third fault, then a success)", got)
	}
}

func TestCommissionRetrySucceeds(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 1, Faults: &maas.Faults{Machines: map[string]maas.MachineFaults{"lab-0001": {FailCommissioning: 1}}}})
	d := newTestDriver(t, l, nil)
	n := enlistAndIdentify(t, d, l.Machines()[0])
	mustDone(t, "Commission", func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, n.NodeRef) })
}

func TestDeployFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  maas.MachineFaults
		expect string
	}{
		{"failDeploy", maas.MachineFaults{FailDeploy: 1}, "curtin"},
		{"hangDeploy", maas.MachineFaults{HangDeploy: true}, "timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := startLab(t, lab.Config{Machines: 1, Faults: &maas.Faults{Machines: map[string]maas.MachineFaults{"lab-0001": tc.fault}}})
			d := newTestDriver(t, l, nil)
			n := enlistAndIdentify(t, d, l.Machines()[0])
			mustDone(t, "Commission", func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, n.NodeRef) })
			deploy := func(ctx context.Context) (drivers.Result, error) { return d.Deploy(ctx, n, drivers.Deployment{}) }
			r, _ := poll(t, "Deploy", deploy)
			if r.Status != drivers.StatusFailed || !strings.Contains(r.Message, tc.expect) {
				t.Fatalf("Deploy: %+v, want Failed with %q", r, tc.expect)
			}
			// The engine's choice: release (no erase), then deploy again.
			mustDone(t, "Release", func(ctx context.Context) (drivers.Result, error) { return d.Release(ctx, n.NodeRef, drivers.EraseNone) })
			if tc.fault.FailDeploy > 0 {
				mustDone(t, "Deploy again", deploy)
			}
		})
	}
}

func TestBMCUnreachable(t *testing.T) {
	t.Parallel() // waits on the lab (main_test.go)
	l := startLab(t, lab.Config{Machines: 1, Faults: &maas.Faults{Machines: map[string]maas.MachineFaults{"lab-0001": {BMCUnreachable: true}}}})
	d := newTestDriver(t, l, map[string]string{SettingRetries: "1"})
	m := l.Machines()[0]
	n := enlistAndIdentify(t, d, m) // powered by hand: the BMC is not needed to enlist
	mustDone(t, "Commission", func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, n.NodeRef) })
	sts, err := d.Status(testCtx(t), []drivers.NodeRef{n.NodeRef})
	if err != nil {
		t.Fatal(err)
	}
	if sts[0].Power != drivers.PowerUnknown {
		t.Errorf("power of a machine whose BMC MAAS cannot reach: %q, want unknown", sts[0].Power)
	}
	// MAAS answers power actions 503: a Transient error after the retries.
	if _, err := d.machineOp(testCtx(t), n.MachineID, "power_on", nil); drivers.Classify(err) != drivers.Transient {
		t.Errorf("power_on with an unreachable BMC: %v, want Transient", err)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	l := startLab(t, lab.Config{Machines: 1, Seed: 7, Faults: &maas.Faults{Seed: 7,
		Ops: map[string]maas.OpFaults{"GET read": {Error503: 0.5, RetryAfter: 1}}}})
	d := newTestDriver(t, l, map[string]string{SettingRetries: "8"})
	d.c.maxWait = 30 * time.Millisecond
	begin := time.Now()
	for range 10 {
		if _, err := d.Owned(testCtx(t)); err != nil {
			t.Fatalf("Owned through 503s: %v", err)
		}
	}
	n503 := statuses(l)[503]
	if n503 == 0 {
		t.Fatal("no 503 was injected")
	}
	if el := time.Since(begin); el < time.Duration(n503)*d.c.maxWait {
		t.Errorf("%d 503s in %s: the client did not wait out Retry-After (capped at %s)", n503, el, d.c.maxWait)
	}
	// With no retries left, a 503 is a Transient error.
	d0 := newTestDriver(t, l, map[string]string{SettingRetries: "0"})
	var terr error
	for range 20 {
		if _, terr = d0.Owned(testCtx(t)); terr != nil {
			break
		}
	}
	if drivers.Classify(terr) != drivers.Transient {
		t.Errorf("a 503 without retries: %v, want Transient", terr)
	}
}

// TestCancelledContext: a call ends with context.Canceled when its
// context is cancelled mid-call. Every answer of the lab's MAAS waits
// 2 minutes and the driver's own request timeout is 5 minutes, so only
// the cancel can end a call within the test's 1 min bound (a hang guard,
// not a measurement).
func TestCancelledContext(t *testing.T) {
	l := startLab(t, lab.Config{Machines: 1, Faults: &maas.Faults{Ops: map[string]maas.OpFaults{"*": {Latency: 2 * time.Minute}}}})
	d := newTestDriver(t, l, map[string]string{SettingTimeout: "5m", SettingRetries: "0"})
	ref := drivers.NodeRef{Name: "n", MachineID: "abc"}
	calls := map[string]func(context.Context) error{
		"ProbeSite":  func(ctx context.Context) error { _, err := d.ProbeSite(ctx); return err },
		"Status":     func(ctx context.Context) error { _, err := d.Status(ctx, []drivers.NodeRef{ref}); return err },
		"Commission": func(ctx context.Context) error { _, err := d.Commission(ctx, ref); return err },
		"Identify": func(ctx context.Context) error {
			_, _, err := d.IdentifyNode(ctx, drivers.Node{NodeRef: ref, Hostname: "n"})
			return err
		},
	}
	for name, call := range calls {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(50*time.Millisecond, cancel)
		begin := time.Now()
		err := call(ctx)
		if el := time.Since(begin); err == nil || el > time.Minute || !errors.Is(err, context.Canceled) {
			t.Errorf("%s cancelled mid-call: %v after %s", name, err, el)
		}
		ctx, cancel = context.WithCancel(t.Context())
		cancel()
		begin = time.Now()
		if err := call(ctx); err == nil || time.Since(begin) > time.Minute {
			t.Errorf("%s with a cancelled context: %v after %s", name, err, time.Since(begin))
		}
	}
}

func TestConcurrentEnlistOneMachine(t *testing.T) {
	l := startLab(t, lab.Config{Machines: 1})
	d := newTestDriver(t, l, nil)
	m := l.Machines()[0]
	n := drivers.Node{NodeRef: drivers.NodeRef{Name: m.Name}, Hostname: m.Name, BootMAC: m.Hardware.NICs[0].MAC}
	ids := make([]string, 6)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			mm, r, err := d.IdentifyNode(testCtx(t), n)
			if err != nil || r.Status != drivers.StatusDone {
				t.Errorf("IdentifyNode %d: %+v %v", i, r, err)
			}
			ids[i] = mm.MachineID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || id == "" {
			t.Fatalf("concurrent IdentifyNode: machines %v, want one", ids)
		}
	}
}

func TestMarkFixed(t *testing.T) {
	l := startLab(t, lab.Config{Machines: 1})
	d := newTestDriver(t, l, nil)
	n := enlistAndIdentify(t, d, l.Machines()[0])
	mustDone(t, "Commission", func(ctx context.Context) (drivers.Result, error) { return d.Commission(ctx, n.NodeRef) })
	// MAAS lets only the owner mark a machine broken: allocate it first.
	if err := d.c.call(testCtx(t), http.MethodPost, "machines/", "allocate", url.Values{"system_id": {n.MachineID}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.machineOp(testCtx(t), n.MachineID, "mark_broken", url.Values{"comment": {"bad DIMM"}}); err != nil {
		t.Fatal(err)
	}
	r, err := d.Deploy(testCtx(t), n, drivers.Deployment{})
	if err != nil || r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "bad DIMM") {
		t.Errorf("Deploy of a Broken machine: %+v, %v", r, err)
	}
	if r, err := d.Recover(testCtx(t), n.NodeRef, drivers.RecoveryAbort); err != nil || r.Status != drivers.StatusDone || !strings.Contains(r.Message, "Broken") {
		t.Errorf("abort on a Broken machine: %+v, %v, want Done (nothing runs) naming the state", r, err)
	}
	if r, err := d.Recover(testCtx(t), n.NodeRef, drivers.RecoveryMarkFixed); err != nil || r.Status != drivers.StatusDone {
		t.Errorf("mark-fixed: %+v, %v", r, err)
	}
	if s := stateOf(t, d, n.MachineID); s != "Ready" {
		t.Errorf("after mark-fixed: %s", s)
	}
}

func TestSameBMC(t *testing.T) {
	for _, tc := range []struct {
		power, want string
		ok          bool
	}{
		{"10.10.0.11", "10.10.0.11", true},
		{"10.10.0.11:623", "10.10.0.11", true},
		{"10.10.0.11", "10.10.0.11:623", true},
		{"127.0.0.1:4001", "127.0.0.1:4001", true},
		{"127.0.0.1:4001", "127.0.0.1:4002", false},
		{"10.10.0.12", "10.10.0.11", false},
		{"qemu+ssh://10.10.0.11/system", "10.10.0.11", true},
		{"", "10.10.0.11", false},
	} {
		if got := sameBMC(tc.power, tc.want); got != tc.ok {
			t.Errorf("sameBMC(%q, %q) = %v", tc.power, tc.want, got)
		}
	}
}
