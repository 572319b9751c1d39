package ha

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	apitypes "github.com/slipway-dev/slipway/api/types"
)

// Cluster is the group as this replica sees it: itself, the leader, the
// registered replicas, and the etcd cluster (each member's own answer, and
// whether a write can commit now).
func (r *Replica) Cluster(ctx context.Context) (apitypes.Cluster, error) {
	out := apitypes.Cluster{Self: r.self(), Leader: r.leader.Load(),
		Store: apitypes.ClusterStore{Kind: "etcd", Endpoints: r.cfg.Endpoints, Prefix: r.cfg.Prefix}}
	out.Replicas = r.replicas(ctx, out.Leader)
	out.Store.Members = r.members(ctx)
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if resp, err := r.cfg.Client.Get(qctx, r.cfg.Prefix, clientv3.WithPrefix(), clientv3.WithCountOnly()); err == nil {
		out.Store.Writable, out.Store.Keys = true, resp.Count // a linearizable read needs the quorum a write does
	}
	return out, nil
}

func (r *Replica) self() apitypes.Replica {
	role := RoleStandby
	if r.leading.Load() {
		role = RoleLeader
	}
	return apitypes.Replica{ID: r.cfg.ID, Role: role, URL: r.cfg.URL, Started: r.started}
}

// replicas are the registered replicas, by ID; this one at least.
func (r *Replica) replicas(ctx context.Context, li *apitypes.LeaderInfo) []apitypes.Replica {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out := []apitypes.Replica{r.self()}
	resp, err := r.cfg.Client.Get(ctx, r.replicasPrefix(), clientv3.WithPrefix())
	if err != nil {
		return out
	}
	for _, kv := range resp.Kvs {
		var rep apitypes.Replica
		if json.Unmarshal(kv.Value, &rep) != nil || rep.ID == r.cfg.ID {
			continue
		}
		rep.Role = RoleStandby
		if li != nil && li.ID == rep.ID {
			rep.Role = RoleLeader
		}
		out = append(out, rep)
	}
	slices.SortFunc(out, func(a, b apitypes.Replica) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// members asks each etcd endpoint for its status (1 s each).
func (r *Replica) members(ctx context.Context) []apitypes.StoreMember {
	out := make([]apitypes.StoreMember, 0, len(r.cfg.Endpoints))
	for _, ep := range r.cfg.Endpoints {
		m := apitypes.StoreMember{Endpoint: ep}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := r.cfg.Client.Status(sctx, ep)
		cancel()
		if err != nil {
			m.Error = err.Error()
		} else {
			m.Healthy = len(st.Errors) == 0 && st.Leader != 0
			m.Leader = st.Leader == st.Header.MemberId
			m.DBSize = st.DbSize
			if len(st.Errors) > 0 {
				m.Error = strings.Join(st.Errors, "; ")
			}
		}
		out = append(out, m)
	}
	return out
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
