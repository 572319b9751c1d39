package client

import (
	"fmt"
	"net/http"
)

// redirectError is a redirect the server answered, not followed.
type redirectError struct {
	status int
	origin string // scheme://host[:port] only
}

func (e *redirectError) Error() string {
	return fmt.Sprintf("the server answered %d, a redirect to %s, which is not followed with the token: give the API's own URL (--server)", e.status, e.origin)
}

// refuseRedirect is the client's CheckRedirect: no redirect is followed.
// The API never redirects a call, and a redirect followed would carry the
// bearer token where it points (Go's client keeps the Authorization
// header on another port of the same host).
func refuseRedirect(req *http.Request, _ []*http.Request) error {
	e := &redirectError{origin: req.URL.Scheme + "://" + req.URL.Host}
	if req.Response != nil {
		e.status = req.Response.StatusCode
	}
	return e
}
