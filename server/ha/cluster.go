package ha

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// viewTTL is how long a replica reuses what it last asked etcd for the
// cluster view: a load balancer probing /readyz every second on every
// replica costs etcd one round of questions per replica every viewTTL,
// not one per probe.
const viewTTL = 2 * time.Second

// storeView is what the cluster view asks etcd: the registered replicas
// (other than this one), each member's own status, and whether a write
// can commit now.
type storeView struct {
	checked  time.Time // when it was asked
	until    time.Time // reused until then: viewTTL after the answers came
	replicas []apitypes.Replica
	members  []apitypes.StoreMember
	writable bool
	keys     int64
}

// Cluster is the group as this replica sees it: itself and the leader as
// of now, the registered replicas and the etcd cluster (each member's own
// answer, and whether a write can commit) as of Store.Checked: asked at
// most viewTTL (and the asking's 2 s) ago.
func (r *Replica) Cluster(ctx context.Context) (apitypes.Cluster, error) {
	out := apitypes.Cluster{Self: r.self(), Leader: r.leader.Load()}
	v := r.storeView(ctx)
	out.Replicas = append([]apitypes.Replica{out.Self}, v.replicas...)
	for i := range out.Replicas[1:] {
		rep := &out.Replicas[i+1]
		if rep.Role = RoleStandby; out.Leader != nil && out.Leader.ID == rep.ID {
			rep.Role = RoleLeader
		}
	}
	slices.SortFunc(out.Replicas, func(a, b apitypes.Replica) int { return strings.Compare(a.ID, b.ID) })
	out.Store = apitypes.ClusterStore{Kind: "etcd", Endpoints: r.cfg.Endpoints, Prefix: r.cfg.Prefix,
		Writable: v.writable, Keys: v.keys, Members: v.members, Checked: v.checked}
	return out, nil
}

// storeView is the last view of etcd, asked again viewTTL after its
// answers came (callers meanwhile wait for the one asking, at most 2 s).
// Counted from the answers, not the asking: a view whose silent members
// took most of the 2 s to time out is still reused for viewTTL.
func (r *Replica) storeView(ctx context.Context) storeView {
	r.viewMu.Lock()
	defer r.viewMu.Unlock()
	if time.Now().Before(r.view.until) {
		return r.view
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second) // shared with later callers
	defer cancel()
	v := storeView{checked: time.Now().UTC()}
	var g errgroup.Group
	g.Go(func() error { v.replicas = r.replicas(ctx); return nil })
	g.Go(func() error { v.members = r.members(ctx); return nil })
	g.Go(func() error {
		if resp, err := r.cfg.Client.Get(ctx, r.cfg.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly()); err == nil {
			v.writable, v.keys = true, resp.Count // a linearizable read needs the quorum a write does
		}
		return nil
	})
	_ = g.Wait()
	v.until = time.Now().Add(viewTTL)
	r.view = v
	return v
}

func (r *Replica) self() apitypes.Replica {
	role := RoleStandby
	if r.leading.Load() {
		role = RoleLeader
	}
	return apitypes.Replica{ID: r.cfg.ID, Role: role, URL: r.cfg.URL, Started: r.started}
}

// replicas are the registered replicas other than this one.
func (r *Replica) replicas(ctx context.Context) []apitypes.Replica {
	resp, err := r.cfg.Client.Get(ctx, r.replicasPrefix(), clientv3.WithPrefix())
	if err != nil {
		return nil
	}
	var out []apitypes.Replica
	for _, kv := range resp.Kvs {
		var rep apitypes.Replica
		if json.Unmarshal(kv.Value, &rep) != nil || rep.ID == r.cfg.ID {
			continue
		}
		out = append(out, rep)
	}
	return out
}

// members asks every etcd endpoint for its status at once (1 s each).
func (r *Replica) members(ctx context.Context) []apitypes.StoreMember {
	out := make([]apitypes.StoreMember, len(r.cfg.Endpoints))
	var g errgroup.Group
	for i, ep := range r.cfg.Endpoints {
		g.Go(func() error {
			out[i] = r.member(ctx, ep)
			return nil
		})
	}
	_ = g.Wait()
	return out
}

func (r *Replica) member(ctx context.Context, ep string) apitypes.StoreMember {
	m := apitypes.StoreMember{Endpoint: ep}
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := r.cfg.Client.Status(sctx, ep)
	if err != nil {
		m.Error = err.Error()
		return m
	}
	m.Healthy = len(st.Errors) == 0 && st.Leader != 0
	m.Leader = st.Leader == st.Header.MemberId
	m.DBSize = st.DbSize
	if len(st.Errors) > 0 {
		m.Error = strings.Join(st.Errors, "; ")
	}
	return m
}

// metrics are the replica's role and the leader changes it saw.
type metrics struct {
	role    *prometheus.GaugeVec
	changes prometheus.Counter
}

func newMetrics(id string) metrics {
	return metrics{
		role: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "slipway_replica_role",
			Help: "1 for this replica's role now (leader: it runs the engine; standby), 0 for the other.", ConstLabels: prometheus.Labels{"replica": id}}, []string{"role"}),
		changes: prometheus.NewCounter(prometheus.CounterOpts{Name: "slipway_leader_changes_total",
			Help: "Changes of the leading replica this replica saw (its own elections included)."}),
	}
}

func (m metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.role, m.changes} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (m metrics) setRole(leading bool) {
	l, s := 0.0, 1.0
	if leading {
		l, s = 1, 0
	}
	m.role.WithLabelValues(RoleLeader).Set(l)
	m.role.WithLabelValues(RoleStandby).Set(s)
}
