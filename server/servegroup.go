package server

// serve --store etcd://: one replica of a group sharing the state in
// etcd. Every replica serves the control API (reads from the shared
// store; mutating calls forwarded to the leader) and the introspection
// API (tokens and answers from the shared store); the replica that wins
// the election (server/ha) runs the engine through a store fenced on
// its leader key, and stops it when it loses the lease.

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/internal/leader"
	"github.com/slipway-dev/slipway/server/ha"
	"github.com/slipway-dev/slipway/statestore"
	etcdstore "github.com/slipway-dev/slipway/statestore/etcdstore"
)

// HAConfig are the configuration's keys for a replica group.
type HAConfig struct {
	// Store is etcd://HOST:PORT[,HOST:PORT...]: the state in etcd (""
	// : the State file).
	Store      string `yaml:"store"`
	EtcdPrefix string `yaml:"etcdPrefix"` // default /slipway/
	// EtcdCA, EtcdCert, EtcdKey: TLS to etcd (the CA alone, or with a
	// client certificate and key).
	EtcdCA   string `yaml:"etcdCA"`
	EtcdCert string `yaml:"etcdCert"`
	EtcdKey  string `yaml:"etcdKey"`
	// EtcdMaxTxnOps and EtcdMaxRequestBytes are the members'
	// --max-txn-ops and --max-request-bytes when raised from etcd's
	// defaults (128, 1.5 MiB): the store then merges more Writes in a
	// transaction (it works on the defaults).
	EtcdMaxTxnOps       int `yaml:"etcdMaxTxnOps"`
	EtcdMaxRequestBytes int `yaml:"etcdMaxRequestBytes"`
	// LeaseTTL is the leadership's lease, in seconds (default 10): how
	// long a dead leader leads before a standby takes over.
	LeaseTTL int `yaml:"leaseTTL"`
	// ReplicaID names the replica (default: host name and API port);
	// AdvertiseURL is where the others reach its control API (default:
	// the listener's address, the host name when it listens on all).
	ReplicaID    string `yaml:"replicaID"`
	AdvertiseURL string `yaml:"advertiseURL"`
	// PeerCA verifies the other replicas' control API certificates when
	// they serve TLS (default: the system's roots and tlsCert).
	PeerCA string `yaml:"peerCA"`
	// DataDir holds the keys, the first admin token, the local socket
	// (slipway.sock) and uploads (default: the State file's directory).
	DataDir string `yaml:"dataDir"`
}

// etcdLimits are the members' limits the configuration gives.
func (c Config) etcdLimits() etcdstore.Limits {
	return etcdstore.Limits{MaxTxnOps: c.EtcdMaxTxnOps, MaxRequestBytes: c.EtcdMaxRequestBytes}
}

// etcdUnaryRetries: enough to go round three members more than three
// times (the client backs off 25 ms after each quorum's worth of tries).
const etcdUnaryRetries = 10

// EtcdClientConfig is the client configuration of the store's cluster.
func (c Config) EtcdClientConfig() (clientv3.Config, error) {
	scheme := "http"
	var tc *tls.Config
	if c.EtcdCA != "" || c.EtcdCert != "" {
		var err error
		if tc, err = clientTLS(c.EtcdCA, c.EtcdCert, c.EtcdKey); err != nil {
			return clientv3.Config{}, fmt.Errorf("config etcdCA, etcdCert, etcdKey: etcd TLS: %w", err)
		}
		scheme = "https"
	}
	eps, err := etcdEndpointsScheme(c.Store, scheme)
	if err != nil {
		return clientv3.Config{}, fmt.Errorf("store %w", err)
	}
	// The client may send what the members take (its own limit is 2 MiB).
	// A call the members answer Unavailable ("no leader", a member gone)
	// is tried etcdUnaryRetries more times, not the client's default 100:
	// those are round trips a request waits through (over 10 s on a
	// loaded machine), and the store serves a read the cluster can't
	// answer linearizably from the member's copy, and retries a write
	// itself until etcdstore.QuorumWait has passed.
	return clientv3.Config{Endpoints: eps, DialTimeout: 10 * time.Second, TLS: tc,
		DialKeepAliveTime: 5 * time.Second, DialKeepAliveTimeout: 3 * time.Second,
		MaxCallSendMsgSize: max(2<<20, c.EtcdMaxRequestBytes+64<<10), MaxUnaryRetries: etcdUnaryRetries}, nil
}

// clientTLS trusts ca (else the system's roots) and presents cert/key
// when given.
func clientTLS(ca, cert, key string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, err
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", ca)
		}
	}
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("a client certificate needs both the certificate and the key")
	}
	if cert != "" {
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{kp}
	}
	return tc, nil
}

// identity is the replica's ID and control API URL.
func (c Config) identity(addr net.Addr) (id, url string) {
	host, _ := os.Hostname()
	_, port, _ := net.SplitHostPort(addr.String())
	id = c.ReplicaID
	if id == "" {
		id = host + "-" + port
	}
	url = c.AdvertiseURL
	if url == "" {
		scheme := "http"
		if c.TLSCert != "" {
			scheme = "https"
		}
		h := addr.(*net.TCPAddr).IP
		hp := addr.String()
		if h.IsUnspecified() {
			hp = net.JoinHostPort(host, port)
		}
		url = scheme + "://" + hp
	}
	return id, strings.TrimSuffix(url, "/")
}

// forwardTransport reaches the other replicas' control APIs.
func (c Config) forwardTransport() (http.RoundTripper, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	ca := c.PeerCA
	if ca == "" && c.TLSCert != "" {
		ca = c.TLSCert
	}
	if ca == "" {
		return t, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		return nil, fmt.Errorf("config peerCA: %w", err)
	}
	pool.AppendCertsFromPEM(pem)
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}

// openEtcd connects to the store's cluster: the client, and the store
// under the configured prefix and limits (on the client: closing the
// client closes it).
func (c Config) openEtcd() (*clientv3.Client, *etcdstore.Store, error) {
	ccfg, err := c.EtcdClientConfig()
	if err != nil {
		return nil, nil, err
	}
	cl, err := clientv3.New(ccfg)
	if err != nil {
		return nil, nil, fmt.Errorf("etcd %v: %w", ccfg.Endpoints, err)
	}
	base := etcdstore.New(cl, c.EtcdPrefix)
	if err := base.SetLimits(c.etcdLimits()); err != nil {
		cl.Close()
		return nil, nil, fmt.Errorf("configuration: %w", err)
	}
	return cl, base, nil
}

// serveGroup runs this replica until ctx ends.
func (o Options) serveGroup(ctx context.Context, c Config) error {
	cl, base, err := c.openEtcd()
	if err != nil {
		return err
	}
	defer cl.Close()
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (another process there? use --listen)", c.Listen, err)
	}
	defer ln.Close()
	if err := hasDesign(ctx, base, cl.Endpoints(), c.Store); err != nil {
		return err
	}
	p, err := o.openParts(ctx, c, base, true)
	if err != nil {
		return err
	}
	if c.IntrospectionURL == "" && p.design.Site != nil && p.design.Site.Spec.Introspection.URL == "" {
		o.Log.Warn().Msg("nodes will call this replica's own introspection listener, and lose it with the replica: set introspectionURL (or the Site's introspection.url) to a load balancer in front of every replica")
	}
	defer closeAll(p.closers)
	if err := base.CheckLimits(ctx); err != nil {
		return fmt.Errorf("etcd's limits are below what the store needs: %w", err)
	}
	id, url := c.identity(ln.Addr())
	rep, err := ha.New(ha.Config{Client: cl, Prefix: base.Prefix(), ID: id, URL: url, TTL: c.LeaseTTL,
		Endpoints: cl.Endpoints(), Log: o.Log, Registry: p.metrics})
	if err != nil {
		return err
	}
	reader, err := p.engine(o, c, base) // never started: it answers the API's reads
	if err != nil {
		return err
	}
	fwd, err := c.forwardTransport()
	if err != nil {
		return err
	}
	he := &haEngine{reader: reader}
	env := &Env{store: base, secrets: p.sec, sites: p.sites, prober: p.prober, drivers: p.drv, metrics: p.metrics,
		api: he, cluster: rep, forward: fwd}
	gs, err := o.newGit(c, env) // gitsource.go: it runs while this replica leads
	if err != nil {
		return err
	}
	srv, err := o.newAPI(c, env)
	if err != nil {
		return err
	}
	local, err := ListenLocal(c.socket()) // local.go
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Stderr, "slipway: replica %s of the group on etcd %s (prefix %s), lease %d s; control API on %s/api/v1 and %s\n",
		id, strings.Join(cl.Endpoints(), ","), base.Prefix(), cmp.Or(c.LeaseTTL, leader.DefaultTTL), url, c.socket())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Serve(gctx, ln, c.TLSCert, c.TLSKey) })
	g.Go(func() error { return srv.ServeLocal(gctx, local, LocalName) })
	if p.intro != nil {
		g.Go(func() error { _ = p.intro.Follow(gctx, base); return nil })
	}
	g.Go(func() error { return rep.Run(gctx, o.lead(c, p, base, he, gs, srv)) })
	if err := g.Wait(); err != nil {
		return err
	}
	return nil
}

// hasDesign checks, within 30 s, that etcd answers and holds a design.
func hasDesign(ctx context.Context, st *etcdstore.Store, endpoints []string, store string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := st.Current(ctx)
	switch {
	case errors.Is(err, statestore.ErrNotFound):
		return fmt.Errorf("etcd %s under %s: %w: apply the first design to a state file and copy it in with `orchestrator store migrate --from bolt:FILE --to %s`",
			strings.Join(endpoints, ","), st.Prefix(), err, store)
	case err != nil:
		return fmt.Errorf("etcd %s did not answer: %w (check the endpoints, TLS flags and the members' health)", strings.Join(endpoints, ","), err)
	}
	return nil
}

// lead runs the engine while this replica leads: a large Write the last
// leader left half applied finished first, then every write of it fenced
// on the leader key; the admin token made at the group's first
// start; etcd's history compacted.
func (o Options) lead(c Config, p *engineParts, base *etcdstore.Store, he *haEngine, gs *gitSource, srv *api.Server) ha.LeadFunc {
	return func(ctx context.Context, l *leader.Leadership) error {
		st := base.Fenced(l.Key, l.Rev)
		if err := st.FinishStaged(ctx); err != nil { // a leader that died applying a large Write
			return err
		}
		if created, err := auth.NewStore(st).EnsureAdmin(ctx, c.adminTokenFile()); err != nil {
			return err
		} else if created {
			fmt.Fprintf(o.Stderr, "first start: an admin token was written to %s (mode 0600)\n", c.adminTokenFile())
		}
		e, err := p.engine(o, c, st)
		if err != nil {
			return err
		}
		if err := e.Start(ctx); err != nil {
			return err
		}
		he.set(e)
		fmt.Fprintf(o.Stderr, "slipway: this replica leads (fence revision %d): the engine resumed every unfinished task\n", l.Rev)
		gitStopped := gs.run(ctx, srv) // the git source follows while this replica leads
		base.RunCompactor(ctx, time.Minute, 0, func(err error) { o.Log.Warn().Err(err).Msg("etcd compaction failed") })
		gitStopped()
		he.set(nil)
		e.Close()
		return nil
	}
}

// socket is where the local socket is: in the data directory, else
// beside the state file.
func (c Config) socket() string {
	if c.DataDir != "" {
		return c.DataDir + string(os.PathSeparator) + "slipway.sock"
	}
	return LocalSocket(c.State)
}

// EtcdEndpoints reads etcd://HOST:PORT[,HOST:PORT...] into client URLs.
func EtcdEndpoints(s string) ([]string, error) { return etcdEndpointsScheme(s, "http") }

// etcdEndpointsScheme is EtcdEndpoints with the URLs' scheme.
func etcdEndpointsScheme(s, scheme string) ([]string, error) {
	rest, ok := strings.CutPrefix(s, "etcd://")
	if !ok || rest == "" {
		return nil, fmt.Errorf("%q: give etcd://HOST:PORT[,HOST:PORT...]", s)
	}
	var out []string
	for _, hp := range strings.Split(rest, ",") {
		u, err := url.Parse("http://" + hp)
		if err != nil || u.Host == "" || u.Port() == "" || u.Path != "" {
			return nil, fmt.Errorf("%q: %q is not HOST:PORT", s, hp)
		}
		out = append(out, scheme+"://"+u.Host)
	}
	return out, nil
}
