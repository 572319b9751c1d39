package introspection

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
)

// RedactedToken stands for the node's token in what BootData returns:
// an operator reading a node's user data never gets its credential.
const RedactedToken = "REDACTED-node-token"

// BootData renders one part of what the node is served in its current
// deployment (the one its token was last issued for), with the same code
// as the routes the node calls, and returns it with its media type. The
// node's token is replaced by RedactedToken. An error's HTTPStatus tells
// an API how to answer it.
func (s *Server) BootData(ctx context.Context, node, part string) ([]byte, string, error) {
	if !slices.Contains(Parts, part) {
		return nil, "", problem(http.StatusNotFound, fmt.Sprintf("no part %q: use one of %s", echoName(part), strings.Join(Parts, ", ")))
	}
	rec, err := s.current(ctx, node)
	if err != nil {
		return nil, "", err
	}
	d, err := s.designs.get(ctx, rec.Revision)
	if err != nil {
		return nil, "", internal(http.StatusServiceUnavailable, "the design revision of the node's deployment could not be loaded", err)
	}
	n := d.Nodes[node]
	if n == nil {
		return nil, "", problem(http.StatusConflict, fmt.Sprintf("node %s is not in design revision %s of its deployment", node, rec.Revision))
	}
	b, err := s.renderPart(ctx, &session{rec: rec, d: d, n: n}, part, RedactedToken)
	if err != nil {
		return nil, "", err
	}
	if part == PartSelf {
		return b, echo.MIMEApplicationJSON, nil
	}
	return b, yamlType, nil
}

// current is the token record of the node's current deployment.
func (s *Server) current(ctx context.Context, node string) (tokenRecord, error) {
	none := problem(http.StatusConflict, fmt.Sprintf("node %s has no current deployment: no token was issued to it (deploy it), or it was revoked when its machine was released", node))
	h, err := s.getString(ctx, collTokenOf, node)
	if err != nil {
		return tokenRecord{}, internal(http.StatusServiceUnavailable, "the node's token record could not be read", err)
	}
	if h == "" {
		return tokenRecord{}, none
	}
	rec, _, found, err := s.getRecord(ctx, h)
	if err != nil {
		return tokenRecord{}, internal(http.StatusServiceUnavailable, "the node's token record could not be read", err)
	}
	if !found || rec.Node != node {
		return tokenRecord{}, none
	}
	return rec, nil
}
