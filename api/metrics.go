package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/internal/httpx"
)

// metrics are the API's Prometheus metrics.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// unauthenticated counts refusals for want of a valid token, by
	// route; auditDropped the ones the audit did not record (sampling).
	unauthenticated *prometheus.CounterVec
	auditDropped    prometheus.Counter
	handler         http.Handler
}

func newMetrics(reg *prometheus.Registry, s *Server) *metrics {
	m := &metrics{reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_http_requests_total",
			Help: "Control API requests by route, method and status code."}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "slipway_http_request_duration_seconds",
			Help: "Control API request latency by route and method.", Buckets: prometheus.DefBuckets}, []string{"route", "method"}),
		unauthenticated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "slipway_http_unauthenticated_total",
			Help: "Control API requests refused for want of a valid token (401), by route."}, []string{"route"}),
		auditDropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "slipway_audit_refusals_dropped_total",
			Help: "Unauthenticated refusals the audit log did not record (over the per-address or total rate)."}),
	}
	reg.MustRegister(m.requests, m.latency, m.unauthenticated, m.auditDropped, &stateCollector{s: s})
	// The process and Go runtime collectors, unless the caller registered them.
	_ = reg.Register(collectors.NewGoCollector())
	_ = reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return m
}

// instrument counts and times a route's requests.
func (s *Server) instrument(r *route) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			code := c.Response().Status
			if err != nil {
				code, _ = statusOf(err)
			}
			s.metrics.requests.WithLabelValues(r.Path, r.Method, strconv.Itoa(code)).Inc()
			s.metrics.latency.WithLabelValues(r.Path, r.Method).Observe(time.Since(start).Seconds())
			return err
		}
	}
}

func (s *Server) metricsHandler(c echo.Context) error {
	s.metrics.handler.ServeHTTP(c.Response(), c.Request())
	return nil
}

// stateCollector reports tasks by status and nodes by stage and outcome,
// read from the engine at scrape time.
type stateCollector struct{ s *Server }

var (
	descTasks = prometheus.NewDesc("slipway_tasks", "Tasks by action and status.", []string{"action", "status"}, nil)
	descNodes = prometheus.NewDesc("slipway_nodes", "Node records by workflow stage and outcome.", []string{"stage", "outcome"}, nil)
)

func (sc *stateCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descTasks; ch <- descNodes }

func (sc *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type key struct{ a, b string }
	if ts, err := sc.s.cfg.Engine.Tasks(ctx); err == nil {
		n := map[key]int{}
		for _, t := range ts {
			n[key{string(t.Action), string(t.Status)}]++
		}
		for k, v := range n {
			ch <- prometheus.MustNewConstMetric(descTasks, prometheus.GaugeValue, float64(v), k.a, k.b)
		}
	}
	if rs, err := sc.s.cfg.Engine.Nodes(ctx); err == nil {
		n := map[key]int{}
		for _, r := range rs {
			n[key{string(r.Stage), string(r.Outcome)}]++
		}
		for k, v := range n {
			ch <- prometheus.MustNewConstMetric(descNodes, prometheus.GaugeValue, float64(v), k.a, k.b)
		}
	}
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, apitypes.Status{Status: "ok"})
}

// readyz: the state store answers and, when configured, the drivers do,
// as of the last round of checks (readiness.go: at most one round per
// Config.ReadyTTL, whoever asks). Anyone may ask, so a caller without a
// valid token learns only ready or not: {"status":"ready"}, or a 503
// problem whose detail is "not ready". A token's holder (any role) also
// gets the cluster view, or the reason when not ready.
func (s *Server) readyz(c echo.Context) error {
	ctx := c.Request().Context()
	detailed := s.holdsToken(c)
	if err := s.readiness.result(ctx); err != nil {
		detail := "not ready"
		if detailed {
			detail = err.Error()
		}
		// Written here, not returned: the round logged its failure once;
		// each probe's 503 would otherwise be logged again.
		httpx.WriteProblem(c, httpx.NewProblem(http.StatusServiceUnavailable, detail, shownPath(c),
			c.Response().Header().Get(echo.HeaderXRequestID)))
		return nil
	}
	if !detailed {
		return c.JSON(http.StatusOK, apitypes.Status{Status: "ready"})
	}
	cl, err := s.clusterView(ctx)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apitypes.Status{Status: "ready", Cluster: &cl})
}

// readyChecks are the probe's upstream checks: the state store answers
// and, when configured, the drivers do.
func (s *Server) readyChecks(ctx context.Context) error {
	if _, err := s.cfg.Store.LastSeq(ctx, logAudit); err != nil {
		return fmt.Errorf("state store: %w", err)
	}
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(ctx); err != nil {
			return fmt.Errorf("drivers: %w", err)
		}
	}
	return nil
}

// holdsToken tells whether the caller of a route open to all sent a valid
// token (any role). An invalid one is no refusal there: the caller is
// answered as one without a token.
func (s *Server) holdsToken(c echo.Context) bool {
	tok, ok := bearerToken(c.Request())
	if !ok {
		return false
	}
	p, err := s.cfg.Authenticate(c.Request().Context(), tok)
	return err == nil && p.Role.Allows(auth.RoleViewer)
}
