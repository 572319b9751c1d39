package introspection

import (
	"bytes"
	"context"
	"errors"
	"strconv"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/statestore"
)

// collSelf keeps each issued token's /v1/self answer, rendered when the
// token is issued or reissued (UserData, Reissue), under the same key as
// the token's record in collTokens (the token's SHA-256, hex) and written
// in the same store write. Issue, reissue and revoke delete it with the
// record. A token's first request then reads the record, checks it
// against the key and writes these bytes: no design is looked up, decoded
// or rendered from. A few KB a node: about 25 MB of the state for a
// 10,000-node site (docs/bootstrap.md).
const collSelf = "node_self"

// selfRenderVersion is the version of appendSelf's output. Bump it with
// any change that makes appendSelf write other bytes for the same design,
// node and deployment: stored renderings of another version are not
// served (the answer is rendered from the design again), so a server
// upgraded with a changed renderer never serves what the previous one
// stored. TestSelfRenderVersion fails when the output changes.
const selfRenderVersion = 1

// storedSelfHead starts a stored rendering: "v<version> "; the design
// revision it was rendered from and a newline follow, then the answer
// exactly as served (its final newline included).
var storedSelfHead = "v" + strconv.Itoa(selfRenderVersion) + " "

// renderSelf is the node's /v1/self answer for the deployment, from d,
// as served (appendSelf and a newline).
func (s *Server) renderSelf(d *design.Design, n *design.Node, deployment string) []byte {
	scratch := scratchBufs.Get().(*[]byte)
	b := appendSelf((*scratch)[:0], s.designs.selfParts(d), n, deployment)
	b = append(b, '\n')
	out := bytes.Clone(b)
	*scratch = b
	scratchBufs.Put(scratch)
	return out
}

// encodeStoredSelf is the stored form of an answer rendered from
// revision rev.
func encodeStoredSelf(rev string, body []byte) []byte {
	out := make([]byte, 0, len(storedSelfHead)+len(rev)+1+len(body))
	out = append(out, storedSelfHead...)
	out = append(out, rev...)
	out = append(out, '\n')
	return append(out, body...)
}

// decodeStoredSelf returns the answer of a stored rendering when it is of
// this selfRenderVersion and was rendered from revision rev; false
// otherwise (another version: the code was upgraded; another revision:
// read across a concurrent reissue; anything malformed).
func decodeStoredSelf(b []byte, rev string) ([]byte, bool) {
	n := len(storedSelfHead)
	if len(b) < n+len(rev)+2 || string(b[:n]) != storedSelfHead || string(b[n:n+len(rev)]) != rev || b[n+len(rev)] != '\n' {
		return nil, false
	}
	body := b[n+len(rev)+1:]
	if body[0] != '{' || body[len(body)-1] != '\n' {
		return nil, false
	}
	return body, true
}

// storedAnswer is the stored rendering of the token whose hash is h, for
// revision rev; nil when there is none that may be served (absent, of
// another version or revision, or the store did not answer: the caller
// renders from the design instead).
func (s *Server) storedAnswer(ctx context.Context, h tokenHash, rev string) *selfAnswer {
	b, err := s.store.Get(ctx, collSelf, h.String())
	if err != nil {
		if !errors.Is(err, statestore.ErrNoRecord) {
			s.log.Warn().Err(err).Msg("a stored /v1/self answer could not be read: rendered from the design")
		}
		return nil
	}
	body, ok := decodeStoredSelf(b, rev)
	if !ok {
		return nil
	}
	return newSelfAnswer(body)
}

// hasStoredSelf reports whether the token whose hash (hex) is h has a
// rendering of this version for revision rev. The caller holds the
// node's lock.
func (s *Server) hasStoredSelf(ctx context.Context, h, rev string) (bool, error) {
	b, err := s.store.Get(ctx, collSelf, h)
	switch {
	case errors.Is(err, statestore.ErrNoRecord):
		return false, nil
	case err != nil:
		return false, err
	}
	_, ok := decodeStoredSelf(b, rev)
	return ok, nil
}

// newSelfAnswer is the answer body (kept, not copied) with its
// Content-Length.
func newSelfAnswer(body []byte) *selfAnswer {
	a := &selfAnswer{body: body, lengthArr: [1]string{strconv.Itoa(len(body))}}
	a.length = a.lengthArr[:]
	return a
}
