package ha_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/slipway-dev/slipway/internal/etcdtest"
	"github.com/slipway-dev/slipway/internal/leader"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/server/ha"
)

// TestGroup: of two replicas one leads and runs lead; both list each
// other, agree on the leader and export their roles; when the leader
// stops, it gives the leadership up and the other leads at once.
func TestGroup(t *testing.T) {
	ec := etcdtest.Start(t, 1)
	type rep struct {
		r      *ha.Replica
		reg    *prometheus.Registry
		leads  atomic.Int32
		cancel context.CancelFunc
		done   chan struct{}
	}
	start := func(id string) *rep {
		x := &rep{reg: prometheus.NewRegistry(), done: make(chan struct{})}
		var err error
		x.r, err = ha.New(ha.Config{Client: ec.Client(t), Prefix: "/t/", ID: id, URL: "http://" + id, TTL: 5,
			Endpoints: ec.Endpoints(), Log: zerolog.Nop(), Registry: x.reg})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		x.cancel = cancel
		go func() {
			defer close(x.done)
			_ = x.r.Run(ctx, func(ctx context.Context, l *leader.Leadership) error {
				x.leads.Add(1)
				<-ctx.Done()
				return nil
			})
		}()
		t.Cleanup(func() { cancel(); <-x.done })
		return x
	}
	a, b := start("a"), start("b")
	testtool.WaitUntil(t, func() bool { return a.r.Leading() || b.r.Leading() }, "a leader")
	lead, other := a, b
	if b.r.Leading() {
		lead, other = b, a
	}
	testtool.WaitUntil(t, func() bool { _, id, u := other.r.Leader(); return u != nil && id == lead.r.ID() }, "the standby to see the leader")
	cl, err := other.r.Cluster(t.Context())
	if err != nil || cl.Self.Role != "standby" || cl.Leader == nil || cl.Leader.ID != lead.r.ID() || len(cl.Replicas) != 2 ||
		!cl.Store.Writable || len(cl.Store.Members) != 1 || !cl.Store.Members[0].Healthy {
		t.Fatalf("the standby's view: %+v %v", cl, err)
	}
	if v := roleGauge(t, lead.reg, "leader"); v != 1 {
		t.Errorf("the leader's slipway_replica_role{role=leader} = %v", v)
	}
	if v := roleGauge(t, other.reg, "leader"); v != 0 {
		t.Errorf("the standby's slipway_replica_role{role=leader} = %v", v)
	}
	cli := ec.Client(t)
	keys, err := cli.Get(t.Context(), "/t/ha/election/", clientv3.WithFirstCreate()...)
	if err != nil || len(keys.Kvs) == 0 {
		t.Fatalf("the leader's election key: %v", err)
	}
	lease, err := cli.TimeToLive(t.Context(), clientv3.LeaseID(keys.Kvs[0].Lease))
	if err != nil || lease.TTL <= 0 {
		t.Fatalf("the leader key's lease: %v", err)
	}
	stopped := time.Now()
	lead.cancel()
	<-lead.done
	// Stopped, the leader resigned: its key is gone once it has, sooner
	// than its lease (5 s) could have ended.
	if r, err := cli.Get(t.Context(), string(keys.Kvs[0].Key)); err != nil || len(r.Kvs) != 0 {
		t.Errorf("the stopped leader did not resign: its election key %s is still in etcd (%v)", keys.Kvs[0].Key, err)
	} else if took, left := time.Since(stopped), time.Duration(lease.TTL)*time.Second; took >= left {
		t.Errorf("the leader took %s to stop, and its lease had %s left: the key's end does not show it resigned", took, left)
	}
	// Leading is true a moment before Run calls the function it leads
	// with: wait for the call, not for the flag.
	testtool.WaitUntil(t, func() bool { return other.r.Leading() && other.leads.Load() > 0 }, "the standby to lead")
	if other.leads.Load() != 1 || lead.leads.Load() != 1 {
		t.Errorf("lead ran %d and %d times", lead.leads.Load(), other.leads.Load())
	}
}

func roleGauge(t *testing.T, reg *prometheus.Registry, role string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "slipway_replica_role" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "role" && l.GetValue() == role {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no slipway_replica_role{role=%q}", role)
	return 0
}

// TestClusterView: the members are asked at once (two that accept and
// never answer are dialled together, not one after the other's 1 s
// timeout), and a view is reused for 2 s after its answers came (a
// balancer probing /readyz often does not ask etcd each time, even when
// silent members make each asking last a second).
func TestClusterView(t *testing.T) {
	ec := etcdtest.Start(t, 1)
	s1, dialled1 := silentListener(t)
	s2, dialled2 := silentListener(t)
	r, err := ha.New(ha.Config{Client: ec.Client(t), Prefix: "/v/", ID: "a", URL: "http://a", TTL: 5,
		Endpoints: append(ec.Endpoints(), s1, s2), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	begun := time.Now()
	cl, err := r.Cluster(t.Context())
	took := time.Since(begun)
	if err != nil || len(cl.Store.Members) != 3 || !cl.Store.Members[0].Healthy || cl.Store.Members[1].Error == "" ||
		cl.Store.Members[2].Error == "" || !cl.Store.Writable || cl.Store.Checked.IsZero() {
		t.Fatalf("the view: %+v %v", cl.Store, err)
	}
	t.Logf("a view with two silent members: %s", took)
	// One after the other, the second dial would come at least the first's
	// 1 s timeout later.
	if a, b := dialled1(), dialled2(); a.IsZero() || b.IsZero() || a.Sub(b).Abs() > 900*time.Millisecond {
		t.Errorf("the silent members were dialled at %s and %s: one after the other (1 s each), not at once", a, b)
	}
	again, _ := r.Cluster(t.Context())
	if !again.Store.Checked.Equal(cl.Store.Checked) {
		t.Errorf("a second view at once asked etcd again (checked %s, then %s)", cl.Store.Checked, again.Store.Checked)
	}
	time.Sleep(2100 * time.Millisecond)
	later, _ := r.Cluster(t.Context())
	if !later.Store.Checked.After(cl.Store.Checked) {
		t.Errorf("a view 2.1 s later is the old one (checked %s)", later.Store.Checked)
	}
}

// silentListener accepts connections on loopback and never answers; it
// also answers when it first accepted one.
func silentListener(t *testing.T) (string, func() time.Time) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var first time.Time
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if first.IsZero() {
				first = time.Now()
			}
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return "http://" + ln.Addr().String(), func() time.Time { mu.Lock(); defer mu.Unlock(); return first }
}
