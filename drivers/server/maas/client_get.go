package maas

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/juju/gomaasapi/v2"
)

// getPooled is one attempt of a GET, signed as gomaasapi signs it, whose
// answer is read into a buffer kept between calls: gomaasapi reads every
// answer with io.ReadAll, which builds it in growing pieces and copies
// them into a new slice, zeroed first; at 10,000 nodes the status
// listings' reads so were 12% of the engine's CPU, most of it zeroing
// and faulting in fresh memory. release gives the buffer back: the body
// must not be used after it. A non-2xx answer is a *statusError.
func (c *client) getPooled(ctx context.Context, uri *url.URL, op string, params url.Values, limit int64) (body []byte, release func(), err error) {
	q := cloneValues(params)
	if op != "" {
		q.Set("op", op)
	}
	u := c.base.GetURL(uri)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	if err := c.base.Signer.OAuthSign(req); err != nil {
		return nil, nil, err
	}
	resp, err := c.bound(ctx, limit).HTTPClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	buf, err := readAnswer(resp.Body, resp.ContentLength)
	release = func() { putAnswerBuf(buf) }
	if err != nil {
		release()
		return nil, nil, err
	}
	if resp.StatusCode/100 != 2 {
		se := &statusError{status: resp.StatusCode, header: resp.Header, body: buf.String()}
		release()
		return nil, nil, se
	}
	return buf.Bytes(), release, nil
}

// The buffers GET answers are read into, kept until used again (a
// sync.Pool drops its items at random under the race detector and at
// every other collection, which is when they are needed): a few small
// ones for single machines and lists, and two large ones for the status
// poll's listings (500 machines, about 5 MB in the lab), which the
// poller reads one or two at a time. A buffer grown past maxLargeAnswer
// (a site-wide listing) is left to the garbage collector. At most
// keptSmall*2*maxSmallAnswer + keptLarge*maxLargeAnswer (20 MiB) is kept.
var (
	smallAnswers = make(chan *bytes.Buffer, keptSmall)
	largeAnswers = make(chan *bytes.Buffer, keptLarge)
)

const (
	keptSmall      = 8
	maxSmallAnswer = 256 << 10
	keptLarge      = 2
	maxLargeAnswer = 8 << 20
)

// getAnswerBuf is a buffer for an answer of size bytes (-1: unknown).
func getAnswerBuf(size int64) *bytes.Buffer {
	pool := smallAnswers
	if size > maxSmallAnswer {
		pool = largeAnswers
	}
	var b *bytes.Buffer
	select {
	case b = <-pool:
		b.Reset()
	default:
		b = new(bytes.Buffer)
	}
	if size > 0 && size <= maxLargeAnswer {
		b.Grow(int(size))
	}
	return b
}

// readAnswer reads an answer of size bytes (-1: unknown) into a kept
// buffer: one of unknown size starts in a small buffer and moves to a
// large one when it outgrows it.
func readAnswer(r io.Reader, size int64) (*bytes.Buffer, error) {
	buf := getAnswerBuf(size)
	if size < 0 {
		n, err := io.CopyN(buf, r, maxSmallAnswer+1)
		if err != nil || n <= maxSmallAnswer {
			if err == io.EOF {
				err = nil
			}
			return buf, err
		}
		large := getAnswerBuf(maxSmallAnswer + 1)
		large.Write(buf.Bytes())
		putAnswerBuf(buf)
		buf = large
	}
	_, err := buf.ReadFrom(r)
	return buf, err
}

func putAnswerBuf(b *bytes.Buffer) {
	pool := smallAnswers
	switch {
	case b.Cap() > maxLargeAnswer:
		return
	case b.Cap() > 2*maxSmallAnswer: // a small one grows to twice its most
		pool = largeAnswers
	}
	select {
	case pool <- b:
	default:
	}
}

// statusError is MAAS's non-2xx answer to a request the driver sent
// itself (getPooled): the status, the headers (Retry-After, moved by
// ctxTransport) and the answer, bounded by ctxTransport.
type statusError struct {
	status int
	header http.Header
	body   string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("ServerError: %d %s (%s)", e.status, http.StatusText(e.status), e.body)
}

// serverAnswer is the status, headers and answer of a non-2xx answer,
// from gomaasapi's error or getPooled's.
func serverAnswer(err error) (status int, header http.Header, body string, ok bool) {
	if se, ok := gomaasapi.GetServerError(err); ok {
		return se.StatusCode, se.Header, se.BodyMessage, true
	}
	if se, ok := err.(*statusError); ok {
		return se.status, se.header, se.body, true
	}
	return 0, nil, "", false
}
