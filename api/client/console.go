package client

import (
	"context"
	"io"
	"net/http"
	"net/url"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// Console attaches to a node's serial console and returns its output
// stream, open until ctx is done, the server ends it or the caller closes
// it. readWrite lets ConsoleInput type at it. The answer comes once the
// BMC has accepted the console; a refusal is a *ProblemError (409 when it
// is attached already or the node has no console).
func (c *Client) Console(ctx context.Context, node string, readWrite bool) (io.ReadCloser, error) {
	mode := "read-only"
	if readWrite {
		mode = "read-write"
	}
	r := request{method: http.MethodGet, path: v1 + "/nodes/" + seg(node) + "/console", query: url.Values{"mode": {mode}}}
	resp, err := c.sendStream(ctx, r, "the console", "text/plain")
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// ConsoleInput types data at a node's console attached read-write.
func (c *Client) ConsoleInput(ctx context.Context, node, data string) error {
	return c.sendJSON(ctx, http.MethodPost, v1+"/nodes/"+seg(node)+"/console/input", apitypes.ConsoleInput{Data: data}, nil)
}
