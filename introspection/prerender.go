package introspection

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/slipway-dev/slipway/design"
)

// A token's record (collTokens) carries its node's /v1/self answer,
// rendered when the token is issued or reissued (UserData, Reissue) from
// the design revision the record names, in the same record and so the
// same write: a token's first request reads its record, checks it against
// the key and writes the answer, with no design looked up, decoded or
// rendered from, and nothing else read. The stored form is JSON, the
// record's fields then the answer and where it is:
//
//	{"node":…,"deployment":…,"revision":…,"issued":…[,"issue":N],"self":<answer>,"selfAt":"v01.0000000123.0000003456"}
//
// "selfAt" (fixed width, last) gives the render version, the offset of
// the answer and its length, so the answer is found without reading it
// and served as stored, final newline included (JSON whitespace). A
// version that only knows the record's fields reads it with
// json.Unmarshal, which ignores the two, and writes records without
// them; a record without an answer, or with one of another render
// version, is served by rendering from the design as before. The answer
// cannot disagree with the record it is served for (another revision or
// deployment): both are one value, which every write replaces or deletes
// whole. A few KB a node: about 2 KB for a generated node, which
// with bbolt's 4 KB pages grows the state by about 4 KB a deployed node
// (docs/bootstrap.md).

// selfRenderVersion is the version of appendSelf's output (1..99). Bump
// it with any change that makes appendSelf write other bytes for the same
// design, node and deployment: stored answers of another version are not
// served (the answer is rendered from the design again), so a server
// upgraded with a changed renderer never serves what the previous one
// stored. TestSelfRenderVersion fails when the output changes.
const selfRenderVersion = 3 // 2: a cabled NIC of a Site with a fabric carries its switch port; 3: an Image document's provisioner name

const (
	selfKey        = `,"self":`
	selfAtPrefix   = `,"selfAt":"v`
	selfTrailerFmt = `,"selfAt":"v%02d.%010d.%010d"}`
	selfTrailerLen = len(selfAtPrefix) + len(`00.0000000000.0000000000"}`)
)

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

// withSelf is a record as json.Marshal wrote it (raw) carrying the answer
// self (an object and a newline, as renderSelf returns it).
func withSelf(raw, self []byte) []byte {
	out := make([]byte, 0, len(raw)+len(selfKey)+len(self)+selfTrailerLen)
	out = append(out, raw[:len(raw)-1]...)
	out = append(out, selfKey...)
	off := len(out)
	out = append(out, self...)
	return fmt.Appendf(out, selfTrailerFmt, selfRenderVersion, off, len(self))
}

// splitSelf separates a stored record from the answer it carries: the
// record's own JSON (a copy, when there was an answer) and the answer
// when it is of this selfRenderVersion (nil otherwise: none, another
// version, or anything malformed, which leaves the whole to the record's
// decoder).
func splitSelf(b []byte) (rec, self []byte) {
	cut, self, ok := cutSelf(b)
	if !ok {
		return b, nil
	}
	return append(b[:cut:cut], '}'), self // a copy: b's bytes stay the answer's
}

// cutSelf finds the answer a stored record carries: b[:cut] is the
// record's own JSON up to its last field (its closing brace not
// included), and self the answer when it is of this selfRenderVersion
// (nil otherwise); ok is false when b carries no answer in the stored
// form (none, or anything malformed: b is the record's whole JSON).
func cutSelf(b []byte) (cut int, self []byte, ok bool) {
	n := len(b)
	if n < selfTrailerLen+len(selfKey)+3 || b[n-1] != '}' {
		return 0, nil, false
	}
	version, off, length, ok := selfTrailer(b[n-selfTrailerLen:])
	if !ok || off < 1+len(selfKey) || off+length != n-selfTrailerLen || length < 2 ||
		string(b[off-len(selfKey):off]) != selfKey || b[off] != '{' || b[off+length-1] != '\n' {
		return 0, nil, false
	}
	cut = off - len(selfKey)
	if version != selfRenderVersion {
		return cut, nil, true
	}
	return cut, b[off : off+length], true
}

// selfTrailer reads the trailer t that ends a record carrying an answer:
// the answer's render version, offset and length.
func selfTrailer(t []byte) (version, off, length int, ok bool) {
	if string(t[:len(selfAtPrefix)]) != selfAtPrefix {
		return 0, 0, 0, false
	}
	d := t[len(selfAtPrefix):]
	version, ok1 := digits(d[0:2])
	off, ok2 := digits(d[3:13])
	length, ok3 := digits(d[14:24])
	ok = ok1 && ok2 && ok3 && d[2] == '.' && d[13] == '.' && string(d[24:]) == `"}`
	return version, off, length, ok
}

// digits is the value of a string of ASCII digits.
func digits(b []byte) (int, bool) {
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// newSelfAnswer is an answer (kept, not copied) with its Content-Length.
func newSelfAnswer(body []byte) *selfAnswer {
	a := &selfAnswer{}
	a.init(body)
	return a
}

// init sets a to the answer body (kept, not copied) with its
// Content-Length.
func (a *selfAnswer) init(body []byte) {
	a.body, a.lengthArr = body, [1]string{strconv.Itoa(len(body))}
	a.length = a.lengthArr[:]
}
