package client

import (
	"context"
	"net/http"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// GitStatus is what the server's git source did (404 when it follows
// none).
func (c *Client) GitStatus(ctx context.Context) (apitypes.GitStatus, error) {
	var out apitypes.GitStatus
	return out, c.get(ctx, v1+"/git/status", nil, &out)
}

// GitApprove applies the commit held for approval, naming it (its ID or
// a prefix of at least 7 hex digits).
func (c *Client) GitApprove(ctx context.Context, commit string) (apitypes.GitEvent, error) {
	var out apitypes.GitEvent
	return out, c.sendJSON(ctx, http.MethodPost, v1+"/git/approve", apitypes.GitApproval{Commit: commit}, &out)
}
