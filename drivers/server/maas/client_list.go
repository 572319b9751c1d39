package maas

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/slipway-dev/slipway/drivers"
)

// list GETs a listing at path (a JSON array of objects) with the retry
// rules, decoding it an element at a time as it arrives (decodeList):
// its answer is never held whole. The request is signed as gomaasapi
// signs it; a non-2xx answer is classified and retried as call's are.
func list[T any](ctx context.Context, c *client, path string, params url.Values) ([]T, error) {
	var out []T
	err := c.retrying(ctx, http.MethodGet, path, "", func(rctx context.Context) error {
		body, err := c.getStream(rctx, path, params)
		if err != nil {
			return err
		}
		defer body.Close()
		window := getListWindow()
		out, window, err = decodeList(body, window, out[:0])
		putListWindow(window)
		if de, ok := errors.AsType[*listDecodeError](err); ok {
			// The decoder's error may quote the answer.
			return finalError{drivers.Errorf(drivers.Permanent, "maas GET %s: decode the answer: %s", path, drivers.PeerText(de.Error(), c.secrets...))}
		}
		return err
	})
	return out, err
}

// getStream sends one GET of path, signed, and answers its body when
// MAAS answered 2xx; otherwise a *statusError with the (bounded) answer.
func (c *client) getStream(ctx context.Context, path string, params url.Values) (io.ReadCloser, error) {
	req, err := c.request(ctx, http.MethodGet, path, "", params)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// The read windows of listings, kept between calls (a few: the poller
// reads one or two listings at a time). A window grown past
// maxKeptWindow (an element that large) is left to the collector.
var listWindows = make(chan []byte, 4)

const maxKeptWindow = 1 << 20

func getListWindow() []byte {
	select {
	case w := <-listWindows:
		return w
	default:
		return make([]byte, 0, listWindow)
	}
}

func putListWindow(w []byte) {
	if cap(w) > maxKeptWindow {
		return
	}
	select {
	case listWindows <- w[:0]:
	default:
	}
}

// statusError is a non-2xx answer to a request the driver sent itself
// (do): the status, the headers and the answer, bounded by maxFailedAnswer.
type statusError struct {
	status int
	header http.Header
	body   string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("ServerError: %d %s (%s)", e.status, http.StatusText(e.status), e.body)
}

// serverAnswer is the status, headers and answer of a non-2xx answer.
func serverAnswer(err error) (status int, header http.Header, body string, ok bool) {
	if se, ok := errors.AsType[*statusError](err); ok {
		return se.status, se.header, se.body, true
	}
	return 0, nil, "", false
}
