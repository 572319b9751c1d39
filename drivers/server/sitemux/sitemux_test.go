package sitemux

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slipway-dev/slipway/drivers"
)

// stub is one site's provisioner: machines by ID, and a gate that holds
// Commission while closed (a site that hangs).
type stub struct {
	drivers.Server
	name     string
	machines map[string]string // ID -> node
	images   []string
	gate     chan struct{}
	mu       sync.Mutex
	calls    []string
}

func (s *stub) note(c string) { s.mu.Lock(); s.calls = append(s.calls, c); s.mu.Unlock() }

func (s *stub) count() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.calls) }

func (s *stub) Commission(ctx context.Context, n drivers.NodeRef) (drivers.Result, error) {
	s.note("commission " + n.Name)
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return drivers.Result{}, ctx.Err()
		}
	}
	return drivers.Done("commissioned"), nil
}

func (s *stub) Status(_ context.Context, refs []drivers.NodeRef) ([]drivers.Machine, error) {
	out := make([]drivers.Machine, len(refs))
	for i, r := range refs {
		for id, node := range s.machines {
			if id == r.MachineID || node == r.Name {
				out[i] = drivers.Machine{MachineID: id, Node: node, State: "Deployed"}
			}
		}
	}
	return out, nil
}

func (s *stub) Owned(context.Context) ([]drivers.Machine, error) {
	var out []drivers.Machine
	for id, node := range s.machines {
		out = append(out, drivers.Machine{MachineID: id, Node: node, Owned: true})
	}
	return out, nil
}

func (s *stub) ProbeSite(context.Context) (drivers.SiteInfo, error) {
	return drivers.SiteInfo{Reachable: true, Authenticated: true, Version: s.name + "-3.5", BootImages: s.images}, nil
}

func twoSites(t *testing.T) (*Server, *stub, *stub) {
	a := &stub{name: "dc1", machines: map[string]string{"aaa111": "n1"}, images: []string{"ubuntu/jammy", "ubuntu/noble"}}
	b := &stub{name: "dc2", machines: map[string]string{"bbb222": "n2"}, images: []string{"ubuntu/jammy"}}
	siteOf := func(node string) (string, bool) {
		switch node {
		case "n1":
			return "dc1", true
		case "n2":
			return "dc2", true
		}
		return "", false
	}
	s, err := New(map[string]Site{"dc1": {Driver: a, Limit: 1}, "dc2": {Driver: b}}, siteOf)
	if err != nil {
		t.Fatal(err)
	}
	return s, a, b
}

// Status goes to each node's site, answers in the order asked, with the
// site; a machine known only by ID is found at its site.
func TestRouting(t *testing.T) {
	s, _, _ := twoSites(t)
	ctx := context.Background()
	ms, err := s.Status(ctx, []drivers.NodeRef{{Name: "n2"}, {Name: "n1"}})
	if err != nil || ms[0].MachineID != "bbb222" || ms[0].Site != "dc2" || ms[1].MachineID != "aaa111" || ms[1].Site != "dc1" {
		t.Fatalf("status: %+v %v", ms, err)
	}
	fresh, _, _ := twoSites(t)
	ms, err = fresh.Status(ctx, []drivers.NodeRef{{Name: "gone", MachineID: "bbb222"}})
	if err != nil || ms[0].Site != "dc2" {
		t.Fatalf("status of a node no longer in the design, by machine: %+v %v", ms, err)
	}
	owned, err := s.Owned(ctx)
	if err != nil || len(owned) != 2 {
		t.Fatalf("owned: %+v %v", owned, err)
	}
	for _, m := range owned {
		if m.Site == "" {
			t.Errorf("owned machine %s without its site", m.MachineID)
		}
	}
	info, err := s.ProbeSite(ctx)
	if err != nil || !info.Reachable || len(info.BootImages) != 1 || info.BootImages[0] != "ubuntu/jammy" || info.Version != "dc1: dc1-3.5, dc2: dc2-3.5" {
		t.Fatalf("probe: %+v %v", info, err)
	}
	if _, err := s.Commission(ctx, drivers.NodeRef{Name: "nowhere"}); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("a node of no site: %v", err)
	}
	if _, err := s.PrepareSite(ctx, drivers.SiteSpec{Name: "dc9"}); err == nil {
		t.Error("preparing a site the server does not drive")
	}
}

// A site that hangs holds its own slots only: the other site's calls go
// on, and a call waiting for the hung site's slot ends with its context.
func TestIsolation(t *testing.T) {
	s, a, b := twoSites(t)
	a.gate = make(chan struct{})
	defer close(a.gate)
	go func() { _, _ = s.Commission(context.Background(), drivers.NodeRef{Name: "n1"}) }() // takes dc1's one slot, hangs
	for a.count() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := s.Commission(ctx, drivers.NodeRef{Name: "n2"}); err != nil {
		t.Fatalf("dc2 waited for dc1: %v", err)
	}
	if b.count() != 1 {
		t.Fatalf("dc2's calls: %v", b.calls)
	}
	if got := testutil.ToFloat64(s.calls.WithLabelValues("dc2", "ok")); got != 1 {
		t.Errorf("slipway_site_calls_total{site=dc2,outcome=ok} = %v", got)
	}
	if got := testutil.ToFloat64(s.inFlight.WithLabelValues("dc1")); got != 1 {
		t.Errorf("slipway_site_calls_in_flight{site=dc1} = %v while dc1 hangs", got)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := s.Commission(short, drivers.NodeRef{Name: "n1"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second dc1 call while dc1 hangs: %v", err)
	}
}

// repairStub is a site whose driver repairs deployed machines.
type repairStub struct {
	*stub
	repaired []string
}

func (r *repairStub) RepairMachine(_ context.Context, n drivers.Node, parts []string) (drivers.Result, error) {
	r.repaired = append(r.repaired, n.Name)
	return drivers.Done("repaired %v", parts), nil
}

// RepairMachine goes to the node's site when its driver repairs, and is a
// Permanent error at a site whose driver can't; servers built again over
// the same Metrics count into the same series.
func TestRepairAndSharedMetrics(t *testing.T) {
	a := &repairStub{stub: &stub{name: "dc1"}}
	b := &stub{name: "dc2"}
	siteOf := func(node string) (string, bool) {
		return map[string]string{"n1": "dc1", "n2": "dc2"}[node], node == "n1" || node == "n2"
	}
	m := NewMetrics()
	s, err := NewWith(map[string]Site{"dc1": {Driver: a}, "dc2": {Driver: b}}, siteOf, m)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r, err := s.RepairMachine(ctx, drivers.Node{NodeRef: drivers.NodeRef{Name: "n1"}}, []string{"tags"}); err != nil || len(a.repaired) != 1 {
		t.Fatalf("repair at dc1: %+v %v", r, err)
	}
	if _, err := s.RepairMachine(ctx, drivers.Node{NodeRef: drivers.NodeRef{Name: "n2"}}, []string{"tags"}); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("repair at a site that can't: %v", err)
	}
	again, err := NewWith(map[string]Site{"dc1": {Driver: a}}, siteOf, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.Commission(ctx, drivers.NodeRef{Name: "n1"}); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(m.calls.WithLabelValues("dc1", "ok")); got != 2 {
		t.Errorf("dc1's ok calls over both servers: %v, want 2", got)
	}
}
