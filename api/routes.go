package api

import (
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// route is one entry of the route table: the router, the authorisation,
// the audit and the OpenAPI document are all built from it.
type route struct {
	Method   string
	Path     string    // echo syntax (:param)
	Role     auth.Role // "" for the unauthenticated probes
	Mutating bool      // audited
	// SecretAnswer: the answer holds a secret (a token): it is never kept
	// for a retry with the same Idempotency-Key, which is told the call
	// was made (409) instead (TestSecretAnswersFlagged checks the table).
	SecretAnswer bool
	Audited      bool // a read that is audited too (it shows what a node is served)
	// Leader: a read only the leader answers (it needs the engine: a
	// console); a standby forwards it, as it does every mutating call.
	Leader  bool
	Summary string
	// Deprecated names the route this one is a documented alias of (the
	// OpenAPI document marks it deprecated); "" for a current route.
	Deprecated string
	// OK are the success statuses the handler answers (none: 200).
	OK []int
	// Request is a zero value of the JSON body's Go type (nil: no body);
	// OptionalBody: the body may be left out.
	Request      any
	OptionalBody bool
	// Upload: the body is a design upload (tar.gz or a JSON array).
	Upload bool
	// Response is a zero value of the answer's Go type (nil: no body, or
	// a body in Produces that is not JSON).
	Response any
	// Produces is the answer's media type when it is not JSON.
	Produces string
	Query    []param
	// Problems are the problem statuses the route answers besides those
	// every route of its kind does (see problemStatuses).
	Problems []int
	handler  echo.HandlerFunc
}

// param is a query parameter (or, with In "header", a header).
type param struct {
	Name string
	In   string // query (default) or header
	Type string // string (default), integer
	Many bool   // may repeat: ?stage=a&stage=b
	Enum []string
	Min  *float64
	Max  *float64
	Doc  string
}

// Query parameters the list routes share.
var (
	offsetParam = param{Name: "offset", Type: "integer", Min: ptr(0.0), Doc: "items to skip"}
	limitParam  = param{Name: "limit", Type: "integer", Min: ptr(1.0), Max: ptr(10000.0), Doc: "items in the page (default 100)"}
	sinceParam  = param{Name: "since", Type: "integer", Min: ptr(0.0), Doc: "answer what follows this sequence number"}
	taskParam   = param{Name: "task", Doc: "only this task's"}
	nodeParam   = param{Name: "node", Doc: "only this node's"}
)

func ptr[T any](v T) *T { return &v }

// enum lists a string type's values for the OpenAPI document.
func enum[T ~string](vs []T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// taskVerbs are the verbs POST /tasks/{id}/{verb} knows.
var taskVerbs = []record.Verb{record.VerbRetry, record.VerbResume, record.VerbRerun,
	record.VerbRestartClean, record.VerbCancel}

// table is every route of the API.
func (s *Server) table() []route {
	return slices.Concat(s.probeRoutes(), s.designRoutes(), s.planRoutes(), // plan.go
		s.nodeRoutes(), s.taskRoutes(), s.adminRoutes(),
		s.reconcileRoutes(v1+"/admin"), aliases(s.reconcileRoutes(v1), v1+"/admin"), // reconcile.go
		s.decommissionRoutes(v1+"/admin"), aliases(s.decommissionRoutes(v1), v1+"/admin"), // workflows.go
		s.powerCredentialRoutes(),          // powercreds.go
		s.storeRoutes(),                    // backup.go
		s.siteRoutes(), s.sitePartRoutes(), // sites.go, siteparts.go
		s.workflowRoutes(), s.onboardingRoutes(), s.layerRoutes(), // workflows.go, onboardings.go, layer.go
		s.gitRoutes(), s.fabricRoutes(), s.imageRoutes(), // git.go, fabric.go, images.go
		s.clusterRoutes(), s.dashboardRoutes()) // cluster.go, ui.go
}

// v1 prefixes the API's versioned routes.
const v1 = "/api/v1"

func (s *Server) probeRoutes() []route {
	return []route{
		{Method: "GET", Path: "/healthz", Summary: "process is up", Response: apitypes.Status{}, handler: s.healthz},
		{Method: "GET", Path: "/readyz", Response: apitypes.Status{},
			Summary:  "state store open, drivers answer (checked at most once per readyCheckTTL); the cluster view, or why not ready, only with a valid token",
			Problems: []int{http.StatusServiceUnavailable}, handler: s.readyz},
		{Method: "GET", Path: "/metrics", Summary: "Prometheus metrics", Produces: "text/plain", handler: s.metricsHandler},
		{Method: "GET", Path: "/openapi.json", Summary: "this API as OpenAPI 3", Response: map[string]any{}, handler: s.openapi},
	}
}

func (s *Server) designRoutes() []route {
	op, view := auth.RoleOperator, auth.RoleViewer
	busy := []int{http.StatusUnsupportedMediaType, http.StatusUnprocessableEntity, http.StatusServiceUnavailable}
	return []route{
		{Method: "POST", Path: v1 + "/designs", Role: op, Mutating: true, Upload: true, OK: []int{http.StatusOK, http.StatusCreated},
			Response: apitypes.Applied{}, Problems: append(busy, http.StatusConflict), Query: append(slices.Clone(provenanceParams), approveParam),
			Summary: "apply a design (tar.gz of the roots, or a JSON list of documents): 201 when stored, 200 when unchanged; findings on 422; " +
				"409 naming the plan's destructive actions unless approve is the plan's approval of them", handler: s.applyDesign},
		{Method: "POST", Path: v1 + "/designs/validate", Role: view, Upload: true, Response: apitypes.ValidationResult{}, Problems: busy,
			Summary: "validate a design without storing it", handler: s.validateDesign},
		{Method: "GET", Path: v1 + "/designs", Role: view, Response: []apitypes.RevisionSummary{}, Summary: "apply history", handler: s.listDesigns},
		{Method: "GET", Path: v1 + "/designs/:rev", Role: view, Response: apitypes.RevisionInfo{}, Problems: []int{http.StatusConflict},
			Summary: "a stored revision (an ID, a prefix of one, or current)", handler: s.getDesign},
		{Method: "GET", Path: v1 + "/designs/:rev/diff", Role: view, Response: apitypes.Diff{}, Problems: []int{http.StatusConflict},
			Query:   []param{{Name: "against", Doc: "the revision to compare with (default: the previous apply)"}},
			Summary: "what changed against another revision", handler: s.diffDesign},
		{Method: "GET", Path: v1 + "/designs/:rev/nodes/:name", Role: view, Response: apitypes.RenderedNode{}, Problems: []int{http.StatusConflict},
			Summary: "a node of a revision, resolved", handler: s.designNode},
	}
}

func (s *Server) nodeRoutes() []route {
	op, view, admin := auth.RoleOperator, auth.RoleViewer, auth.RoleAdmin
	nodeQuery := []param{{Name: "name", Many: true}, {Name: "label", Many: true, Doc: "key=value"}, {Name: "tag", Many: true},
		{Name: "rack", Many: true}, {Name: "site", Many: true, Doc: "the node's Site"}, {Name: "lifecycle", Many: true}, {Name: "stage", Many: true}, {Name: "outcome", Many: true},
		offsetParam, limitParam}
	verb := func(name, summary string) route {
		return route{Method: "POST", Path: v1 + "/nodes/:name/" + name, Role: op, Mutating: true, Request: apitypes.NodeVerbRequest{},
			OptionalBody: true, Response: apitypes.NodeRecord{}, Problems: []int{http.StatusConflict}, Summary: summary, handler: s.nodeVerb(name)}
	}
	return []route{
		{Method: "GET", Path: v1 + "/nodes", Role: view, Query: nodeQuery, Response: apitypes.Page[apitypes.NodeSummary]{},
			Summary: "nodes of the current design with their workflow state (filters, pages)", handler: s.listNodes},
		{Method: "GET", Path: v1 + "/nodes/:name", Role: view, Response: apitypes.NodeDetail{},
			Summary: "a node: resolved design, stage and history, machine, last events", handler: s.getNode},
		{Method: "GET", Path: v1 + "/nodes/:name/bootdata/:part", Role: admin, Audited: true, Response: map[string]any{}, Produces: "text/yaml",
			Problems: []int{http.StatusConflict, http.StatusNotImplemented, http.StatusServiceUnavailable},
			Summary:  "what the introspection API serves the node in its current deployment: self (JSON), meta-data, user-data (token redacted), vendor-data or network-config (YAML)", handler: s.bootData},
		{Method: "GET", Path: v1 + "/nodes/:name/inventory", Role: view, Response: apitypes.NodeInventory{},
			Summary: "what commissioning found on the node's machine; 404 when not commissioned yet", handler: s.nodeInventory}, // inventory.go
		verb("adopt", "take the provisioner's state of the node's machine as the truth (optionally attaching a machine)"),
		verb("mark-manual-intervention", "freeze the node"),
		verb("release-manual", "unfreeze the node"),
		{Method: "GET", Path: v1 + "/nodes/:name/as-built", Role: view, Response: apitypes.AsBuiltRecord{}, Problems: []int{http.StatusNotImplemented},
			Summary: "the node's last as-built check: inventory digest, differences from the design, acceptance", handler: s.asBuilt}, // asbuilt.go
		{Method: "POST", Path: v1 + "/nodes/:name/as-built/accept", Role: op, Mutating: true, Response: apitypes.AsBuiltRecord{},
			Problems: []int{http.StatusConflict, http.StatusNotImplemented},
			Summary:  "accept the node's machine as its last as-built check found it (that inventory only); retry the task to go on", handler: s.acceptHardware}, // asbuilt.go
		{Method: "GET", Path: v1 + "/nodes/:name/console", Role: admin, Audited: true, Leader: true, Produces: "text/plain",
			Query:    []param{{Name: "mode", Enum: consoleModes, Doc: "read-only (default) or read-write (POST .../console/input types at it)"}},
			Problems: []int{http.StatusConflict, http.StatusNotImplemented},
			Summary:  "attach to the node's serial console (IPMI Serial over LAN): the machine's output, streamed as it comes; one console per node", handler: s.console}, // console.go
		{Method: "POST", Path: v1 + "/nodes/:name/console/input", Role: admin, Mutating: true, Request: apitypes.ConsoleInput{}, OK: []int{http.StatusNoContent},
			Problems: []int{http.StatusConflict, http.StatusNotImplemented},
			Summary:  "type at the node's console, attached read-write (the audit record counts the characters, never holds them)", handler: s.consoleInput},
		{Method: "POST", Path: v1 + "/nodes/:name/rebootstrap", Role: admin, Mutating: true, SecretAnswer: true, Response: apitypes.Rebootstrapped{}, Problems: []int{http.StatusConflict},
			Summary: "reissue the node's introspection token for its current deployment and wait at bootstrap again; the answer holds the new token to install on the node", handler: s.rebootstrap},
	}
}

func (s *Server) taskRoutes() []route {
	op, view, admin := auth.RoleOperator, auth.RoleViewer, auth.RoleAdmin
	return []route{
		{Method: "POST", Path: v1 + "/tasks", Role: op, Mutating: true, Request: apitypes.TaskRequest{}, OK: []int{http.StatusCreated},
			Response: apitypes.Task{}, Problems: []int{http.StatusConflict, http.StatusUnprocessableEntity}, Summary: "create a task", handler: s.createTask},
		{Method: "GET", Path: v1 + "/tasks", Role: view, Response: apitypes.Page[apitypes.Task]{},
			Query:   []param{{Name: "status", Many: true}, {Name: "action", Many: true, Enum: enum(record.Actions)}, offsetParam, limitParam},
			Summary: "tasks, newest first (filters, pages)", handler: s.listTasks},
		{Method: "GET", Path: v1 + "/tasks/:id", Role: view, Response: apitypes.TaskDetail{}, Summary: "a task with its per-node results", handler: s.getTask},
		{Method: "GET", Path: v1 + "/tasks/:id/timeline", Role: view, Response: apitypes.TaskTimeline{},
			Summary: "where the task's time goes: its nodes per stage over time (at most 120 points) and each stage's p50/p95 duration, split into the wait on the provisioner or hardware and Slipway's own", handler: s.taskTimeline},
		{Method: "POST", Path: v1 + "/tasks/:id/:verb", Role: op, Mutating: true, OK: []int{http.StatusAccepted}, Response: apitypes.Task{},
			Problems: []int{http.StatusConflict}, Summary: "retry, resume, rerun, restart-clean or cancel", handler: s.taskVerb},

		{Method: "GET", Path: v1 + "/events", Role: view, Response: []apitypes.Event{}, Query: []param{sinceParam, taskParam, nodeParam, limitParam},
			Summary: "events, oldest first", handler: s.listEvents},
		{Method: "GET", Path: v1 + "/events/stream", Role: view, Produces: "text/event-stream",
			Query:   []param{sinceParam, taskParam, nodeParam, {Name: "Last-Event-ID", In: "header", Type: "integer", Min: ptr(0.0), Doc: "resume after this event"}},
			Summary: "events as server-sent events (id: the sequence number)", handler: s.streamEvents},
		{Method: "GET", Path: v1 + "/audit", Role: admin, Response: apitypes.AuditPage{}, Query: []param{sinceParam, limitParam},
			Summary: "the audit log, a page at a time", handler: s.listAudit},
	}
}

func (s *Server) adminRoutes() []route {
	admin := auth.RoleAdmin
	none := []int{http.StatusNotImplemented}
	return []route{
		{Method: "GET", Path: v1 + "/secrets", Role: admin, Response: []apitypes.SecretInfo{}, Problems: none,
			Summary: "secret names (values are never returned)", handler: s.listSecrets},
		{Method: "PUT", Path: v1 + "/secrets/:name", Role: admin, Mutating: true, Request: apitypes.SecretValue{}, Response: apitypes.SecretStored{},
			Problems: none, Summary: "store a secret, encrypted", handler: s.putSecret},
		{Method: "DELETE", Path: v1 + "/secrets/:name", Role: admin, Mutating: true, OK: []int{http.StatusNoContent}, Problems: none,
			Summary: "delete a secret", handler: s.deleteSecret},

		{Method: "GET", Path: v1 + "/tokens", Role: admin, Response: []apitypes.TokenInfo{}, Problems: none,
			Summary: "API tokens (never their values)", handler: s.listTokens},
		{Method: "POST", Path: v1 + "/tokens", Role: admin, Mutating: true, SecretAnswer: true, Request: apitypes.TokenRequest{}, OK: []int{http.StatusCreated},
			Response: apitypes.CreatedToken{}, Problems: none, Summary: "create a token (its value is shown once)", handler: s.createToken},
		{Method: "DELETE", Path: v1 + "/tokens/:id", Role: admin, Mutating: true, OK: []int{http.StatusNoContent},
			Problems: []int{http.StatusConflict, http.StatusNotImplemented}, Summary: "revoke a token", handler: s.revokeToken},
	}
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
	if p.ID == LocalPrincipalID { // the local socket's OS user: cli:<user>, as the CLI always named it
		return p.Name
	}
	if p.Name != "" {
		return "api:" + p.Name + " (" + p.ID + ")"
	}
	return "api:" + p.ID
}
