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
		params, ok := matchSegments(rt.segments, segs)
		if !ok {
			continue
		}
		pathKnown = true
		if rt.method == method && rt.op == op {
			return rt.fn, params, nil
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

func matchSegments(pattern, segs []string) (map[string]string, bool) {
	if len(pattern) != len(segs) {
		return nil, false
	}
	var params map[string]string
	for i, p := range pattern {
		if strings.HasPrefix(p, "{") {
			if params == nil {
				params = map[string]string{}
			}
			params[strings.Trim(p, "{}")] = segs[i]
			continue
		}
		if p != segs[i] {
			return nil, false
		}
	}
	return params, true
}
