package client

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"time"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/internal/backoff"
)

// IdempotencyHeader is the header naming a mutating call's key (the
// server's api.IdempotencyHeader).
const IdempotencyHeader = "Idempotency-Key"

// maxTries bounds the tries of one mutating call.
const maxTries = 6

// sendOnce sends a call. A mutating one (not GET or HEAD) gets an
// Idempotency-Key of its own, the same on each try, and is tried again
// while its answer is not known (the connection failed, or a 502, 503 or
// 504 came, as while the state store's leader changes) or the server
// says its first try is still running: the server applies it once and
// answers each retry with the first answer. At most maxTries tries, within
// the call's deadline; the last answer or error is the caller's.
func (c *Client) sendOnce(ctx context.Context, r request) (*http.Response, error) {
	if r.method == http.MethodGet || r.method == http.MethodHead {
		return c.sendUntilRun(ctx, r)
	}
	if r.header.Get(IdempotencyHeader) == "" {
		r.header = r.header.Clone()
		if r.header == nil {
			r.header = http.Header{}
		}
		r.header.Set(IdempotencyHeader, rand.Text())
	}
	wait := backoff.Doubling{Min: 250 * time.Millisecond, Max: 4 * time.Second}
	for try := 1; ; try++ {
		resp, err := c.sendUntilRun(ctx, r)
		if try == maxTries || ctx.Err() != nil || !unknownOutcome(resp, err) {
			return resp, err
		}
		pause := wait.Next()
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 2*pause {
			return resp, err // no time left to try again
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxProblemBody))
			resp.Body.Close()
		}
		if err := backoff.Sleep(ctx, pause); err != nil {
			return nil, err
		}
	}
}

// unknownOutcome: the answer does not say whether the call was applied,
// or says its first try still runs.
func unknownOutcome(resp *http.Response, err error) bool {
	if re := (*redirectError)(nil); errors.As(err, &re) {
		return false // the server answered: a redirect, not followed
	}
	if err != nil {
		return true
	}
	switch resp.StatusCode {
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	case http.StatusConflict:
		return resp.Header.Get(apitypes.NotRunHeader) != ""
	}
	return false
}
