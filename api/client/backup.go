package client

import (
	"context"
	"io"
	"net/http"
)

// StoreBackup asks the server for an online backup of its state store
// and returns the archive's stream (statestore/bolt's format: a manifest
// with the key files' fingerprints, then the database), open until it is
// read to its end, ctx ends or the caller closes it. A refusal is a
// *ProblemError (403 for a token that is not an admin's, 503 while
// another backup runs, 501 when the store has no online backup). A stream
// that breaks ends short: check the archive as it is read.
func (c *Client) StoreBackup(ctx context.Context) (io.ReadCloser, error) {
	r := request{method: http.MethodGet, path: v1 + "/admin/store/backup", header: http.Header{"Accept": {"application/octet-stream"}}}
	resp, err := c.sendStream(ctx, r, "the store backup", "application/octet-stream")
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
