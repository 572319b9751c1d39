package labrun

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/slipway-dev/slipway/sim/maas"
)

// maxMAASAnswer bounds an answer MAASCall reads.
const maxMAASAnswer = 16 << 20

// MAASCall sends a request to the lab's MAAS, signed with the lab's API
// key, as an operator's client would behind the orchestrator's back
// (tests change the lab's state with it and read it back without the
// driver under test). op is MAAS's ?op= ("" for none), as written into
// the URL, so it may carry further query parameters
// ("query&hostname=h"); form, when not
// nil, is the url-encoded body. A status other than 200 is an error
// naming the request and MAAS's answer.
func (e *Env) MAASCall(ctx context.Context, method, path, op string, form url.Values) ([]byte, error) {
	info := e.Lab.Info()
	creds, err := maas.ParseAPIKey(info.APIKey)
	if err != nil {
		return nil, err
	}
	u := info.MAASURL + "/api/2.0" + path
	if op != "" {
		u += "?op=" + op
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	creds.Sign(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxMAASAnswer))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return raw, fmt.Errorf("%s %s op=%s: %d %s", method, path, op, resp.StatusCode, raw)
	}
	return raw, nil
}
