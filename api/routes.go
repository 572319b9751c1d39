package api

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// route is one entry of the route table.
type route struct {
	Method   string
	Path     string // echo syntax (:param)
	Role     Role   // "" for the unauthenticated probes
	Mutating bool   // audited
	Audited  bool   // a read that is audited too (it shows what a node is served)
	Summary  string
	Body     string // request body schema name in the OpenAPI document
	handler  echo.HandlerFunc
}

// table is every route of the API.
func (s *Server) table() []route {
	const v1 = "/api/v1"
	op, view, admin := RoleOperator, RoleViewer, RoleAdmin
	return append([]route{
		{Method: "GET", Path: "/healthz", Summary: "process is up", handler: s.healthz},
		{Method: "GET", Path: "/readyz", Summary: "state store open, drivers answer", handler: s.readyz},
		{Method: "GET", Path: "/metrics", Summary: "Prometheus metrics", handler: s.metricsHandler},
		{Method: "GET", Path: "/openapi.json", Summary: "this API as OpenAPI 3", handler: s.openapi},

		{Method: "POST", Path: v1 + "/designs", Role: op, Mutating: true, Body: "DesignUpload", Summary: "apply a design (tar.gz of the roots, or a JSON list of documents); findings on 422", handler: s.applyDesign},
		{Method: "POST", Path: v1 + "/designs/validate", Role: view, Body: "DesignUpload", Summary: "validate a design without storing it", handler: s.validateDesign},
		{Method: "GET", Path: v1 + "/designs", Role: view, Summary: "apply history", handler: s.listDesigns},
		{Method: "GET", Path: v1 + "/designs/:rev", Role: view, Summary: "a stored revision", handler: s.getDesign},
		{Method: "GET", Path: v1 + "/designs/:rev/diff", Role: view, Summary: "what changed against ?against=REV (default: the previous revision)", handler: s.diffDesign},
		{Method: "GET", Path: v1 + "/designs/:rev/nodes/:name", Role: view, Summary: "a node of a revision, resolved", handler: s.designNode},

		{Method: "GET", Path: v1 + "/nodes", Role: view, Summary: "nodes of the current design with their workflow state (filters, pages)", handler: s.listNodes},
		{Method: "GET", Path: v1 + "/nodes/:name", Role: view, Summary: "a node: resolved design, stage and history, machine, last events", handler: s.getNode},
		{Method: "GET", Path: v1 + "/nodes/:name/bootdata/:part", Role: admin, Audited: true, Summary: "what the introspection API serves the node in its current deployment: self, meta-data, user-data (token redacted), vendor-data or network-config", handler: s.bootData},
		{Method: "GET", Path: v1 + "/nodes/:name/inventory", Role: view, Summary: "what commissioning found on the node's machine (system, firmware, CPU, memory, GPUs, disks, NICs with their LLDP neighbours); 404 when not commissioned yet", handler: s.nodeInventory}, // inventory.go
		{Method: "POST", Path: v1 + "/nodes/:name/adopt", Role: op, Mutating: true, Summary: "take the provisioner's state of the node's machine as the truth", handler: s.nodeVerb("adopt")},
		{Method: "POST", Path: v1 + "/nodes/:name/mark-manual-intervention", Role: op, Mutating: true, Body: "Reason", Summary: "freeze the node", handler: s.nodeVerb("mark-manual-intervention")},
		{Method: "POST", Path: v1 + "/nodes/:name/release-manual", Role: op, Mutating: true, Summary: "unfreeze the node", handler: s.nodeVerb("release-manual")},
		{Method: "GET", Path: v1 + "/nodes/:name/as-built", Role: view, Summary: "the node's last as-built check: inventory digest, differences from the design, acceptance", handler: s.asBuilt},                                                 // asbuilt.go
		{Method: "POST", Path: v1 + "/nodes/:name/as-built/accept", Role: op, Mutating: true, Summary: "accept the node's machine as its last as-built check found it (that inventory only); retry the task to go on", handler: s.acceptHardware}, // asbuilt.go
		{Method: "POST", Path: v1 + "/nodes/:name/rebootstrap", Role: admin, Mutating: true, Summary: "reissue the node's introspection token for its current deployment and wait at bootstrap again; the answer holds the new token (bootstrapEnv, userData) to install on the node", handler: s.rebootstrap},

		{Method: "POST", Path: v1 + "/tasks", Role: op, Mutating: true, Body: "TaskRequest", Summary: "create a task", handler: s.createTask},
		{Method: "GET", Path: v1 + "/tasks", Role: view, Summary: "tasks (filters: status, action; pages)", handler: s.listTasks},
		{Method: "GET", Path: v1 + "/tasks/:id", Role: view, Summary: "a task with its per-node results", handler: s.getTask},
		{Method: "POST", Path: v1 + "/tasks/:id/:verb", Role: op, Mutating: true, Summary: "retry, resume, rerun, restart-clean or cancel", handler: s.taskVerb},

		{Method: "GET", Path: v1 + "/events", Role: view, Summary: "events (?since=SEQ&task=&node=&limit=)", handler: s.listEvents},
		{Method: "GET", Path: v1 + "/events/stream", Role: view, Summary: "events as server-sent events", handler: s.streamEvents},
		{Method: "GET", Path: v1 + "/audit", Role: admin, Summary: "the audit log (?since=SEQ&limit=)", handler: s.listAudit},

		{Method: "GET", Path: v1 + "/secrets", Role: admin, Summary: "secret names (values are never returned)", handler: s.listSecrets},
		{Method: "PUT", Path: v1 + "/secrets/:name", Role: admin, Mutating: true, Body: "SecretValue", Summary: "store a secret, encrypted", handler: s.putSecret},
		{Method: "DELETE", Path: v1 + "/secrets/:name", Role: admin, Mutating: true, Summary: "delete a secret", handler: s.deleteSecret},

		{Method: "GET", Path: v1 + "/tokens", Role: admin, Summary: "API tokens (never their values)", handler: s.listTokens},
		{Method: "POST", Path: v1 + "/tokens", Role: admin, Mutating: true, Body: "TokenRequest", Summary: "create a token (its value is shown once)", handler: s.createToken},
		{Method: "DELETE", Path: v1 + "/tokens/:id", Role: admin, Mutating: true, Summary: "revoke a token", handler: s.revokeToken},
	}, s.reconcileRoutes(v1)...) // reconcile.go
}

const principalKey = "slipway.principal"

// authorize checks the bearer token and the route's role. Refusals for
// want of a valid token are counted (slipway_http_unauthenticated_total).
func (s *Server) authorize(r *route) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			tok, ok := bearerToken(c.Request())
			if !ok {
				s.metrics.unauthenticated.WithLabelValues(r.Path).Inc()
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="slipway"`)
				return problem(http.StatusUnauthorized, "no bearer token: send Authorization: Bearer <token> (create one with `orchestrator token create`)")
			}
			p, err := s.cfg.Authenticate(c.Request().Context(), tok)
			if err != nil {
				s.metrics.unauthenticated.WithLabelValues(r.Path).Inc()
				c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="slipway", error="invalid_token"`)
				return problem(http.StatusUnauthorized, "the bearer token is not valid (unknown, revoked or malformed)")
			}
			c.Set(principalKey, p)
			if !p.Role.Allows(r.Role) {
				return problem(http.StatusForbidden, "token "+p.ID+" has role "+string(p.Role)+"; "+r.Method+" "+r.Path+" needs "+string(r.Role))
			}
			return next(c)
		}
	}
}

// bearerToken is the request's bearer token; false when there is none.
func bearerToken(req *http.Request) (string, bool) {
	tok, ok := strings.CutPrefix(req.Header.Get(echo.HeaderAuthorization), "Bearer ")
	tok = strings.TrimSpace(tok)
	return tok, ok && tok != ""
}

func principal(c echo.Context) Principal {
	p, _ := c.Get(principalKey).(Principal)
	return p
}

// who names the caller for the engine's records.
func who(c echo.Context) string {
	p := principal(c)
	if p.Name != "" {
		return "api:" + p.Name + " (" + p.ID + ")"
	}
	return "api:" + p.ID
}
