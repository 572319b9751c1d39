package maas

import (
	"net/http"
	"strings"
)

// APIPrefix is where the API lives, as on a MAAS region.
const APIPrefix = "/MAAS/api/2.0"

// request is what a handler gets: the path parameters, the form (query and
// body), the authenticated user.
type request struct {
	r      *http.Request
	params map[string]string
	form   formValues
	user   string
	op     string
}

// formValues are the request's parameters: query string and body merged.
type formValues map[string][]string

func (f formValues) get(k string) string {
	if v := f[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func (f formValues) has(k string) bool { _, ok := f[k]; return ok }

// handler answers one (method, path, op).
type handler func(s *Server, req *request) (any, *apiError)

type route struct {
	method   string
	segments []string // "{name}" matches one segment
	op       string   // "" for plain requests
	fn       handler
}

// handle registers a handler. pattern is relative to APIPrefix and ends in
// "/", e.g. "/machines/{system_id}/".
func (s *Server) handle(method, pattern, op string, fn handler) {
	s.routes = append(s.routes, route{method: method, segments: split(pattern), op: op, fn: fn})
}

func split(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r == '/' })
}

// match finds the handler for a request. It tells a path MAAS doesn't have
// (404) from an op the path doesn't have (400, "Unrecognised signature").
func (s *Server) match(method, path, op string) (handler, map[string]string, *apiError) {
	segs := split(path)
	pathKnown := false
	for _, rt := range s.routes {
		if !segmentsMatch(rt.segments, segs) {
			continue
		}
		pathKnown = true
		if rt.method == method && rt.op == op {
			return rt.fn, pathParams(rt.segments, segs), nil
		}
	}
	if !pathKnown {
		return nil, nil, errorf(http.StatusNotFound, "Not Found")
	}
	if op == "" {
		return nil, nil, errorf(http.StatusMethodNotAllowed, "Method Not Allowed")
	}
	return nil, nil, errorf(http.StatusBadRequest, "Unrecognised signature: method=%s op=%s", method, op)
}

// segmentsMatch says whether segs fit the route's pattern: its literal
// segments equal, a {name} segment anything. It allocates nothing: a
// path fits every route of its shape (each method and op), and making
// the parameters for each was a map per route tried.
func segmentsMatch(pattern, segs []string) bool {
	if len(pattern) != len(segs) {
		return false
	}
	for i, p := range pattern {
		if !strings.HasPrefix(p, "{") && p != segs[i] {
			return false
		}
	}
	return true
}

// pathParams are the {name} segments of pattern with their values in segs
// (nil when it has none); segs fit pattern (segmentsMatch).
func pathParams(pattern, segs []string) map[string]string {
	var params map[string]string
	for i, p := range pattern {
		if strings.HasPrefix(p, "{") {
			if params == nil {
				params = make(map[string]string, 2)
			}
			params[strings.Trim(p, "{}")] = segs[i]
		}
	}
	return params
}
