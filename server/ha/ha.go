// Package ha runs one serve replica of a group sharing an etcd state
// store: it registers the replica (a key on its own lease, gone when the
// process is), follows which replica leads, and campaigns for the
// leadership (internal/leader). The replica that wins runs the engine
// through a store fenced on its leader key until it loses the lease;
// then it stops the engine and campaigns again, so a replica that lost
// the etcd quorum leads again by itself once the quorum is back.
//
// Keys, under the store's prefix:
//
//	ha/election/<lease>   the election (the oldest key leads; its value
//	                      is the leader's ID, URL and since, JSON)
//	ha/replicas/<id>      a replica: ID, URL, start time (JSON), on the
//	                      replica's lease
package ha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"golang.org/x/sync/errgroup"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/internal/backoff"
	"github.com/slipway-dev/slipway/internal/leader"
)

// Roles a replica has.
const (
	RoleLeader  = "leader"
	RoleStandby = "standby"
)

// Config configures a replica.
type Config struct {
	Client *clientv3.Client
	// Prefix is the state store's key prefix; the group's keys are under
	// Prefix+"ha/".
	Prefix string
	// ID names the replica (unique in the group); URL is where its
	// control API answers the other replicas.
	ID, URL string
	// TTL is the lease, in seconds (0: leader.DefaultTTL): how long a
	// dead leader's leadership outlives it.
	TTL int
	// Endpoints are the etcd client URLs (reported in Cluster).
	Endpoints []string
	Log       zerolog.Logger
	Registry  prometheus.Registerer // the role and leader-change metrics (nil: none)
}

// LeadFunc runs while the replica leads: it must return soon after ctx
// ends (the lease is lost, or the replica stops). l fences its writes.
type LeadFunc func(ctx context.Context, l *leader.Leadership) error

// Replica is this process in its group.
type Replica struct {
	cfg     Config
	started time.Time
	leading atomic.Bool
	leader  atomic.Pointer[apitypes.LeaderInfo]
	m       metrics
	viewMu  sync.Mutex
	view    storeView // what Cluster last asked etcd
}

// New is the replica of cfg; Run makes it take part.
func New(cfg Config) (*Replica, error) {
	if cfg.Client == nil || cfg.ID == "" {
		return nil, errors.New("ha: a client and a replica ID are required")
	}
	if cfg.TTL <= 0 {
		cfg.TTL = leader.DefaultTTL
	}
	r := &Replica{cfg: cfg, started: time.Now().UTC().Truncate(time.Millisecond), m: newMetrics(cfg.ID)}
	if cfg.Registry != nil {
		if err := r.m.register(cfg.Registry); err != nil {
			return nil, err
		}
	}
	r.m.setRole(false)
	return r, nil
}

func (r *Replica) electionPrefix() string { return r.cfg.Prefix + "ha/election" }
func (r *Replica) replicasPrefix() string { return r.cfg.Prefix + "ha/replicas/" }

// Run registers the replica, follows the leader and campaigns until ctx
// ends, calling lead each time the replica wins.
func (r *Replica) Run(ctx context.Context, lead LeadFunc) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { r.register(gctx); return nil })
	g.Go(func() error { r.follow(gctx); return nil })
	g.Go(func() error { r.campaign(gctx, lead); return nil })
	return g.Wait()
}

// Leading reports whether this replica leads now.
func (r *Replica) Leading() bool { return r.leading.Load() }

// Leader is where mutating calls go: self when this replica leads, else
// the leader's control API (nil when no replica is known to lead).
func (r *Replica) Leader() (self bool, id string, u *url.URL) {
	if r.leading.Load() {
		return true, r.cfg.ID, nil
	}
	li := r.leader.Load()
	if li == nil || li.ID == r.cfg.ID || li.URL == "" {
		return false, "", nil
	}
	u, err := url.Parse(li.URL)
	if err != nil {
		return false, li.ID, nil
	}
	return false, li.ID, u
}

// campaign wins the election, leads until the lease is lost, and begins
// again; a refused campaign (no quorum) is tried again after a back-off.
func (r *Replica) campaign(ctx context.Context, lead LeadFunc) {
	wait := retryWait()
	for ctx.Err() == nil {
		l, err := leader.Campaign(ctx, r.cfg.Client, r.electionPrefix(), r.value(time.Time{}), r.cfg.TTL)
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Log.Warn().Err(err).Msg("campaign for the leadership failed; trying again")
				_ = wait.Wait(ctx)
			}
			continue
		}
		wait.Reset()
		if !r.lead(ctx, l, lead) {
			_ = wait.Wait(ctx) // leading failed at once (the engine did not start): not in a tight loop
		}
	}
}

// lead runs lead while l holds, then gives the leadership up; false when
// lead failed.
func (r *Replica) lead(ctx context.Context, l *leader.Leadership, lead LeadFunc) bool {
	since := time.Now().UTC().Truncate(time.Millisecond)
	if err := l.Proclaim(ctx, r.value(since)); err != nil {
		r.cfg.Log.Warn().Err(err).Msg("could not record when the leadership began")
	}
	r.leader.Store(&apitypes.LeaderInfo{ID: r.cfg.ID, URL: r.cfg.URL, Since: since})
	r.leading.Store(true)
	r.m.setRole(true)
	r.cfg.Log.Info().Str("replica", r.cfg.ID).Int64("fence", l.Rev).Msg("this replica leads: the engine runs here")
	lctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-l.Lost():
			r.cfg.Log.Warn().Str("replica", r.cfg.ID).Msg("the leadership's lease is lost: the engine stops here")
			cancel()
		case <-lctx.Done():
		}
	}()
	err := lead(lctx, l)
	if err != nil && ctx.Err() == nil {
		r.cfg.Log.Error().Err(err).Msg("leading failed; giving the leadership up")
	}
	cancel()
	r.leading.Store(false)
	r.m.setRole(false)
	rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer rcancel()
	_ = l.Resign(rctx) // the key and lease go at once, or at the lease's end
	return err == nil
}

// value is what the leader key holds: this replica's ID, URL and since.
func (r *Replica) value(since time.Time) string {
	b, _ := json.Marshal(apitypes.LeaderInfo{ID: r.cfg.ID, URL: r.cfg.URL, Since: since})
	return string(b)
}

// register keeps the replica's key on a lease of its own while ctx
// lasts, putting it again after the lease was lost.
func (r *Replica) register(ctx context.Context) {
	wait := retryWait()
	for ctx.Err() == nil {
		sess, err := r.putSelf(ctx)
		if err != nil {
			if ctx.Err() == nil {
				r.cfg.Log.Warn().Err(err).Msg("could not register this replica; trying again")
				_ = wait.Wait(ctx)
			}
			continue
		}
		wait.Reset()
		select {
		case <-sess.Done():
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, _ = r.cfg.Client.Revoke(cctx, sess.Lease()) // the key goes with the process
			cancel()
		}
	}
}

func (r *Replica) putSelf(ctx context.Context) (*concurrency.Session, error) {
	lease, err := r.cfg.Client.Grant(ctx, int64(r.cfg.TTL))
	if err != nil {
		return nil, fmt.Errorf("etcd lease: %w", err)
	}
	sess, err := concurrency.NewSession(r.cfg.Client, concurrency.WithLease(lease.ID), concurrency.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(apitypes.Replica{ID: r.cfg.ID, URL: r.cfg.URL, Started: r.started})
	if _, err := r.cfg.Client.Put(ctx, r.replicasPrefix()+r.cfg.ID, string(b), clientv3.WithLease(lease.ID)); err != nil {
		_ = sess.Close()
		return nil, err
	}
	return sess, nil
}

// follow keeps the leader this replica knows up to date: at each change
// of the election's keys, and every 2 s (a watch cut off from the quorum
// says nothing; the read then fails and no leader is known).
func (r *Replica) follow(ctx context.Context) {
	wch := r.cfg.Client.Watch(clientv3.WithRequireLeader(ctx), r.electionPrefix(), clientv3.WithPrefix())
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		r.refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case _, ok := <-wch:
			if !ok {
				wch = r.cfg.Client.Watch(clientv3.WithRequireLeader(ctx), r.electionPrefix(), clientv3.WithPrefix())
				time.Sleep(200 * time.Millisecond)
			}
		case <-tick.C:
		}
	}
}

// refresh reads which replica leads.
func (r *Replica) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	val, _, ok, err := leader.Current(ctx, r.cfg.Client, r.electionPrefix())
	var li *apitypes.LeaderInfo
	if err == nil && ok {
		li = &apitypes.LeaderInfo{}
		if json.Unmarshal([]byte(val), li) != nil {
			li = &apitypes.LeaderInfo{ID: val}
		}
	}
	if err != nil && r.leading.Load() {
		return // the lease says whether this replica still leads
	}
	old := r.leader.Swap(li)
	if li != nil && (old == nil || old.ID != li.ID) {
		r.m.changes.Inc()
		r.cfg.Log.Info().Str("leader", li.ID).Msg("the leader changed")
	}
}

// retryWait is the pause between failed tries: 100 ms, doubling to 2 s.
func retryWait() backoff.Doubling {
	return backoff.Doubling{Min: 100 * time.Millisecond, Max: 2 * time.Second}
}

// ID is the replica's.
func (r *Replica) ID() string { return r.cfg.ID }
