package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
)

// Cluster is the replica group the server is one of (server/ha): one
// replica leads and runs the engine; the others (standbys) answer reads
// from the shared store and forward every mutating call, and every call
// that needs the engine itself (a console), to the leader.
type Cluster interface {
	Cluster(ctx context.Context) (apitypes.Cluster, error)
	// Leader is where mutating calls go: self when this replica leads,
	// else the leader's ID and control API (u nil when none is known).
	Leader() (self bool, id string, u *url.URL)
	// ID is this replica's.
	ID() string
}

// ForwardedBy is the header a standby sets on a call it forwards (its
// replica ID): a replica that gets a forwarded call and does not lead
// refuses it rather than forwarding it again.
const ForwardedBy = "X-Slipway-Forwarded-By"

// NotRun is the header of a 503 answered before the call ran anywhere
// (no replica leads, or the replica forwarded to lost the lead): sending
// it again after Retry-After is safe, and the Go client does.
const NotRun = apitypes.NotRunHeader

func (s *Server) clusterRoutes() []route {
	return []route{
		{Method: "GET", Path: v1 + "/cluster", Role: auth.RoleViewer, Response: apitypes.Cluster{},
			Summary: "the replica group: this replica and its role, the leader, the replicas, the state store", handler: s.cluster},
	}
}

func (s *Server) cluster(c echo.Context) error {
	cl, err := s.clusterView(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cl)
}

// clusterView is the configured group's view, or a group of one.
func (s *Server) clusterView(ctx context.Context) (apitypes.Cluster, error) {
	if s.cfg.Cluster == nil {
		return apitypes.Cluster{Self: apitypes.Replica{ID: "self", Role: "leader"}, Replicas: []apitypes.Replica{{ID: "self", Role: "leader"}},
			Store: apitypes.ClusterStore{Kind: "unknown", Writable: true}}, nil
	}
	return s.cfg.Cluster.Cluster(ctx)
}

// forward sends a route's calls to the leader when this replica does not
// lead. The leader checks the token, authorises and audits the call
// itself; the caller's address goes in X-Forwarded-For (list the
// replicas in trustedProxies for the leader's audit to believe it).
func (s *Server) forward(r *route) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if s.cfg.Cluster == nil {
				return next(c)
			}
			self, id, u := s.cfg.Cluster.Leader()
			switch {
			case self:
				return next(c)
			case u == nil:
				c.Response().Header().Set("Retry-After", "2")
				c.Response().Header().Set(NotRun, "1")
				return problem(http.StatusServiceUnavailable, "no replica leads now (an election is under way, or the state store lost its quorum): nothing can be changed until one does; reads still answer")
			case c.Request().Header.Get(ForwardedBy) != "":
				c.Response().Header().Set("Retry-After", "1")
				c.Response().Header().Set(NotRun, "1")
				return problem(http.StatusServiceUnavailable, fmt.Sprintf("this replica was forwarded the call as the leader, but the leader is now %s: send it again", id))
			case isLocal(c.Request()):
				return problem(http.StatusServiceUnavailable, fmt.Sprintf("this replica is a standby and the local socket's calls carry no token to forward: send it to the leader %s (%s) with --server and --token", id, u))
			}
			s.proxyTo(c, r, id, u)
			return nil
		}
	}
}

// proxyTo streams the call to the leader and its answer back.
func (s *Server) proxyTo(c echo.Context, r *route, id string, u *url.URL) {
	client := c.RealIP()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = u.Host
			pr.Out.Header.Set("X-Forwarded-For", client)
			pr.Out.Header.Set(ForwardedBy, s.cfg.Cluster.ID())
		},
		Transport:     s.cfg.ForwardTransport,
		FlushInterval: -1, // a console streams
		ErrorHandler: func(_ http.ResponseWriter, _ *http.Request, err error) {
			s.log.Warn().Err(err).Str("leader", id).Str("route", r.Path).Msg("forwarding to the leader failed")
			if !c.Response().Committed {
				s.errorHandler(problem(http.StatusBadGateway, fmt.Sprintf("this replica is a standby and the leader %s did not answer the forwarded call (it may have just failed: a standby takes over within the lease's TTL); send it again", id)), c)
			}
		},
	}
	rp.ServeHTTP(c.Response(), c.Request())
}

// isLocal reports whether the call came through the local socket.
func isLocal(r *http.Request) bool {
	_, ok := r.Context().Value(localPeerKey{}).(localPeer)
	return ok
}
