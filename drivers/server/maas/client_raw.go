package maas

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// rawStatusError is a non-2xx answer to a raw request (putRaw): its
// status and MAAS's message, redacted and bounded.
type rawStatusError struct {
	status int
	msg    string
}

func (e *rawStatusError) Error() string { return fmt.Sprintf("%d %s", e.status, e.msg) }

// putRaw sends body as the whole content of a PUT to path (relative to
// /api/2.0/), signed as every call is, with Content-Type
// application/octet-stream and Content-Length len(body): what MAAS's
// boot-resource upload handler reads (gomaasapi's Put sends only forms).
// One attempt, bounded by timeout (the per-request timeout when 0); it is
// not retried here because MAAS appends what it gets, so whether to send
// it again is the caller's decision after reading what MAAS holds. The
// answer is read up to maxFailedAnswer bytes.
func (c *client) putRaw(ctx context.Context, path string, body []byte, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = c.timeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := c.base.GetURL(&url.URL{Path: strings.TrimPrefix(path, "/")})
	req, err := http.NewRequestWithContext(rctx, http.MethodPut, u.String(), bytes.NewReader(body))
	if err != nil {
		return drivers.Errorf(drivers.Permanent, "maas PUT %s: %s", path, drivers.RedactSecrets(err.Error(), c.secrets...))
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Content-Length", strconv.Itoa(len(body)))
	c.signer.sign(req)
	resp, err := c.httpc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("maas PUT %s: %w", path, ctx.Err())
		}
		return drivers.Errorf(drivers.Transient, "maas PUT %s: %s", path, drivers.RedactSecrets(err.Error(), c.secrets...))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxFailedAnswer))
	if err != nil {
		return drivers.Errorf(drivers.Transient, "maas PUT %s: read the answer: %s", path, drivers.RedactSecrets(err.Error(), c.secrets...))
	}
	if resp.StatusCode/100 == 2 {
		return nil
	}
	return &rawStatusError{status: resp.StatusCode, msg: drivers.PeerText(string(answer), c.secrets...)}
}
