package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"
	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/httpx"
	"github.com/slipway-dev/slipway/introspection"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// The OpenAPI document is built, never written by hand: from the route
// table (paths, methods, roles, statuses, parameters, media types) and
// from the Go types the handlers decode and encode (schemas, through
// their json tags, by kin-openapi's openapi3gen). A handler that answers
// something else fails the contract test (api/apitest validates every
// request and answer of the test suites against this document).

// OpenAPIPath is the committed copy of the document, relative to the
// repository's root (`go run ./cmd/gendocs` writes it).
const OpenAPIPath = "docs/openapi.json"

var paramRE = regexp.MustCompile(`:([a-zA-Z_]+)`)

// openapiPath turns an echo path into an OpenAPI one (:id → {id}).
func openapiPath(p string) string { return paramRE.ReplaceAllString(p, "{$1}") }

var (
	documentOnce sync.Once
	document     *openapi3.T
	documentErr  error
)

// Document is the API's OpenAPI 3 document. It is built once and shared:
// callers must not change it.
func Document() (*openapi3.T, error) {
	documentOnce.Do(func() { document, documentErr = buildDocument((&Server{}).table()) })
	return document, documentErr
}

// DocumentJSON is the document as docs/openapi.json holds it: indented,
// with a final newline.
func DocumentJSON() ([]byte, error) {
	doc, err := Document()
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	return append(b, '\n'), err
}

func (s *Server) openapi(c echo.Context) error {
	doc, err := Document()
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, doc)
}

// docBuilder builds the document: answers' struct types become component
// schemas; request bodies are inlined (their required fields differ).
type docBuilder struct {
	doc   *openapi3.T
	out   *openapi3gen.Generator
	in    *openapi3gen.Generator
	names map[string]reflect.Type // component name → its type
}

func buildDocument(routes []route) (*openapi3.T, error) {
	b := &docBuilder{doc: baseDocument(), names: map[string]reflect.Type{}}
	b.out = openapi3gen.NewGenerator(openapi3gen.CreateTypeNameGenerator(b.typeName),
		openapi3gen.CreateComponentSchemas(openapi3gen.ExportComponentSchemasOptions{ExportComponentSchemas: true, ExportTopLevelSchema: true}),
		openapi3gen.SchemaCustomizer(customizer(true)))
	b.in = openapi3gen.NewGenerator(openapi3gen.SchemaCustomizer(customizer(false)))
	for i := range routes {
		r := &routes[i]
		op, err := b.operation(r)
		if err != nil {
			return nil, fmt.Errorf("OpenAPI document: route %s %s: %w", r.Method, r.Path, err)
		}
		b.doc.AddOperation(openapiPath(r.Path), r.Method, op)
	}
	if err := openapi3.NewLoader().ResolveRefsIn(b.doc, nil); err != nil {
		return nil, fmt.Errorf("OpenAPI document: %w", err)
	}
	if err := b.doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("OpenAPI document: %w", err)
	}
	return b.doc, nil
}

// baseDocument is the document without its paths and schemas.
func baseDocument() *openapi3.T {
	doc := &openapi3.T{
		OpenAPI: "3.0.3",
		Info: &openapi3.Info{Title: "Slipway control API", Version: "v1",
			Description: "Designs, nodes, tasks, events, audit, reconciliation, secrets and tokens of a Slipway orchestrator. " +
				"Bearer tokens with roles viewer ⊂ operator ⊂ admin (x-slipway-role names an operation's). " +
				"Every error is an RFC 9457 problem details body (application/problem+json). Generated from the route table: see docs/api.md."},
		Servers: openapi3.Servers{{URL: "https://{host}", Description: "orchestrator serve (TLS when given a certificate; else http)",
			Variables: map[string]*openapi3.ServerVariable{"host": {Default: "127.0.0.1:8700", Description: "serve's listen address"}}}},
		Paths: openapi3.NewPaths(),
		Components: &openapi3.Components{
			Schemas:         openapi3.Schemas{},
			Responses:       openapi3.ResponseBodies{},
			SecuritySchemes: openapi3.SecuritySchemes{"bearer": {Value: openapi3.NewJWTSecurityScheme().WithBearerFormat("slw_ token")}},
		},
	}
	for _, t := range tagDocs {
		doc.Tags = append(doc.Tags, &openapi3.Tag{Name: t[0], Description: t[1]})
	}
	problem, err := openapi3gen.NewSchemaRefForValue(httpx.Problem{}, nil, openapi3gen.SchemaCustomizer(customizer(true)))
	if err != nil {
		panic(err) // a fixed type: the tests build the document
	}
	doc.Components.Schemas["Problem"] = problem
	return doc
}

// tagDocs are the operations' tags (the first path segment after /api/v1).
var tagDocs = [][2]string{
	{"audit", "the audit log of mutating calls"},
	{"designs", "design uploads, revisions and their differences"},
	{"events", "the event log, listed or streamed"},
	{"nodes", "nodes, their workflow state and verbs"},
	{"probes", "health, readiness, metrics and this document (no token)"},
	{"reconciliation", "drift between the design and the provisioner"},
	{"secrets", "the encrypted secret store (values go in, never out)"},
	{"tasks", "tasks and their recovery verbs"},
	{"tokens", "API tokens"},
}

func tagOf(path string) string {
	rest, ok := strings.CutPrefix(path, v1+"/")
	if !ok {
		return "probes"
	}
	tag, _, _ := strings.Cut(rest, "/")
	return tag
}

func operationID(method, path string) string {
	return strings.ToLower(method) + strings.NewReplacer("/", "_", ":", "", "-", "_", ".", "_").Replace(path)
}

func (b *docBuilder) operation(r *route) (*openapi3.Operation, error) {
	op := &openapi3.Operation{Summary: r.Summary, OperationID: operationID(r.Method, r.Path), Tags: []string{tagOf(r.Path)},
		Responses: openapi3.NewResponsesWithCapacity(4), Extensions: map[string]any{}}
	op.Parameters = parameters(r)
	if r.Role != "" {
		op.Security = &openapi3.SecurityRequirements{{"bearer": []string{}}}
		op.Extensions["x-slipway-role"] = string(r.Role)
	} else {
		op.Security = &openapi3.SecurityRequirements{}
	}
	if r.Mutating || r.Audited {
		op.Extensions["x-slipway-audited"] = true
	}
	if r.Deprecated != "" { // a documented alias (routes.go)
		op.Deprecated = true
		op.Description = "Deprecated alias of " + r.Method + " " + openapiPath(r.Deprecated) + ", which answers the same."
	}
	body, err := b.requestBody(r)
	if err != nil {
		return nil, err
	}
	op.RequestBody = body
	if err := b.successes(r, op.Responses); err != nil {
		return nil, err
	}
	for _, st := range problemStatuses(r) {
		op.Responses.Set(strconv.Itoa(st), b.problemResponse(st))
	}
	return op, nil
}

// pathEnums are the path parameters with a fixed set of values.
var pathEnums = map[string][]string{"verb": enum(taskVerbs), "part": introspection.Parts}

func parameters(r *route) openapi3.Parameters {
	var ps openapi3.Parameters
	for _, m := range paramRE.FindAllStringSubmatch(r.Path, -1) {
		sc := openapi3.NewStringSchema()
		for _, v := range pathEnums[m[1]] {
			sc.Enum = append(sc.Enum, v)
		}
		ps = append(ps, &openapi3.ParameterRef{Value: openapi3.NewPathParameter(m[1]).WithSchema(sc)})
	}
	for _, q := range r.Query {
		ps = append(ps, &openapi3.ParameterRef{Value: q.parameter()})
	}
	if r.Mutating { // idempotency.go
		ps = append(ps, &openapi3.ParameterRef{Value: idempotencyParameter()})
	}
	return ps
}

func (q param) parameter() *openapi3.Parameter {
	sc := openapi3.NewStringSchema()
	if q.Type == "integer" {
		sc = openapi3.NewIntegerSchema()
	}
	sc.Min, sc.Max = q.Min, q.Max
	for _, v := range q.Enum {
		sc.Enum = append(sc.Enum, v)
	}
	if q.Many {
		sc = openapi3.NewArraySchema().WithItems(sc)
	}
	p := openapi3.NewQueryParameter(q.Name)
	if q.In == openapi3.ParameterInHeader {
		p = openapi3.NewHeaderParameter(q.Name)
	}
	p.Description = q.Doc
	return p.WithSchema(sc)
}

func (b *docBuilder) requestBody(r *route) (*openapi3.RequestBodyRef, error) {
	switch {
	case r.Upload:
		docs := openapi3.NewArraySchema().WithItems(openapi3.NewObjectSchema())
		rb := openapi3.NewRequestBody().WithRequired(true).
			WithDescription("a tar.gz whose top-level directories are the design's roots, or a JSON array of its documents").
			WithContent(openapi3.Content{"application/gzip": openapi3.NewMediaType().WithSchema(openapi3.NewStringSchema().WithFormat("binary")),
				"application/json": openapi3.NewMediaType().WithSchema(docs)})
		return &openapi3.RequestBodyRef{Value: rb}, nil
	case r.Request != nil:
		sc, err := b.in.NewSchemaRefForValue(r.Request, nil)
		if err != nil {
			return nil, fmt.Errorf("request body %T: %w", r.Request, err)
		}
		// An optional body may be left out, or be null: the handler
		// takes both as no body.
		sc.Value.Nullable = r.OptionalBody
		rb := openapi3.NewRequestBody().WithRequired(!r.OptionalBody).WithJSONSchemaRef(sc)
		return &openapi3.RequestBodyRef{Value: rb}, nil
	}
	return nil, nil
}

func (b *docBuilder) successes(r *route, rs *openapi3.Responses) error {
	ok := r.OK
	if len(ok) == 0 {
		ok = []int{http.StatusOK}
	}
	content := openapi3.Content{}
	if r.Response != nil {
		sc, err := b.out.NewSchemaRefForValue(r.Response, b.doc.Components.Schemas)
		if err != nil {
			return fmt.Errorf("answer %T: %w", r.Response, err)
		}
		content["application/json"] = openapi3.NewMediaType().WithSchemaRef(sc)
	}
	if r.Produces != "" {
		content[r.Produces] = openapi3.NewMediaType().WithSchema(openapi3.NewStringSchema())
	}
	for _, st := range ok {
		resp := openapi3.NewResponse().WithDescription(http.StatusText(st))
		if st != http.StatusNoContent {
			resp.Content = content
		}
		rs.Set(strconv.Itoa(st), &openapi3.ResponseRef{Value: resp})
	}
	return nil
}

// problemStatuses are the problem statuses r answers: its own, plus 401
// and 403 when it needs a token, 400 when it takes parameters or a body,
// 404 when its path names something, 413 when it reads a body, 500.
func problemStatuses(r *route) []int {
	st := append([]int{http.StatusInternalServerError}, r.Problems...)
	if r.Role != "" {
		st = append(st, http.StatusUnauthorized, http.StatusForbidden)
	}
	named := strings.Contains(r.Path, ":")
	if named || len(r.Query) > 0 || r.Request != nil || r.Upload {
		st = append(st, http.StatusBadRequest)
	}
	if named {
		st = append(st, http.StatusNotFound)
	}
	if r.Request != nil || r.Upload {
		st = append(st, http.StatusRequestEntityTooLarge)
	}
	if r.Mutating || r.Leader { // a standby forwards it (cluster.go)
		st = append(st, http.StatusBadGateway, http.StatusServiceUnavailable)
	}
	if r.Mutating { // an Idempotency-Key malformed, in use, or given to another call (idempotency.go)
		st = append(st, http.StatusBadRequest, http.StatusConflict, http.StatusUnprocessableEntity)
	}
	slices.Sort(st)
	return slices.Compact(st)
}

// problemResponse is a shared response component per problem status.
func (b *docBuilder) problemResponse(status int) *openapi3.ResponseRef {
	name := strings.ReplaceAll(http.StatusText(status), " ", "")
	if _, ok := b.doc.Components.Responses[name]; !ok {
		mt := openapi3.NewMediaType().WithSchemaRef(openapi3.NewSchemaRef("#/components/schemas/Problem", nil))
		resp := openapi3.NewResponse().WithDescription(http.StatusText(status) + ": problem details").
			WithContent(openapi3.Content{"application/problem+json": mt})
		b.doc.Components.Responses[name] = &openapi3.ResponseRef{Value: resp}
	}
	return &openapi3.ResponseRef{Ref: "#/components/responses/" + name}
}

// typeName names a struct's component schema: its Go name, qualified by
// its package when another package's type took the name. "" (inline) for
// a type with its own JSON encoding.
func (b *docBuilder) typeName(t reflect.Type) string {
	if marshals(t) || t.Name() == "" {
		return ""
	}
	n := t.Name()
	if prev, ok := b.names[n]; ok && prev != t {
		pkg := t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:]
		n = strings.ToUpper(pkg[:1]) + pkg[1:] + n
	}
	b.names[n] = t
	return n
}

var marshaler = reflect.TypeFor[json.Marshaler]()

// marshals reports whether t has its own JSON encoding (time.Time's is
// the generator's date-time and does not count).
func marshals(t reflect.Type) bool {
	if t.PkgPath() == "time" {
		return false
	}
	return t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler)
}

// ownEncodings are the schemas of the types with their own JSON encoding.
var ownEncodings = map[reflect.Type]func() *openapi3.Schema{
	reflect.TypeFor[drivers.Secret](): func() *openapi3.Schema {
		sc := openapi3.NewStringSchema()
		sc.Description = "always redacted: a secret's value is never written out"
		return sc
	},
}

// typeEnums are the string types whose values the engine lists.
var typeEnums = map[reflect.Type][]string{
	reflect.TypeFor[record.Action]():     enum(record.Actions),
	reflect.TypeFor[record.DriftKind]():  enum(record.DriftKinds),
	reflect.TypeFor[record.Resolution](): enum(record.Resolutions),
	reflect.TypeFor[record.Verb]():       enum(taskVerbs),
	reflect.TypeFor[auth.Role]():         enum(auth.Roles),
}

// RouteInfo describes a route of the table.
type RouteInfo struct {
	Method   string
	Path     string    // OpenAPI form: /api/v1/tasks/{id}
	Role     auth.Role // "" for the open probes
	Mutating bool
	Audited  bool // audited although it changes nothing
}

// Routes lists the route table.
func (s *Server) Routes() []RouteInfo {
	out := make([]RouteInfo, len(s.routes))
	for i, r := range s.routes {
		out[i] = RouteInfo{Method: r.Method, Path: openapiPath(r.Path), Role: r.Role, Mutating: r.Mutating, Audited: r.Audited}
	}
	return out
}

// Served lists what the router actually serves, as "METHOD /path" in
// OpenAPI form.
func (s *Server) Served() []string {
	var out []string
	for _, r := range s.e.Routes() {
		out = append(out, r.Method+" "+openapiPath(r.Path))
	}
	return out
}
