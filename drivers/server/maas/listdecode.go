package maas

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	segjson "github.com/segmentio/encoding/json"
)

// A listing (GET machines/ and the like) is a JSON array of objects,
// megabytes for a few hundred machines. decodeList decodes it one
// element at a time as it is read, so that only a read window and the
// element at hand are in memory: read whole (gomaasapi's io.ReadAll), the
// status poll's 500-machine listings were 12% of the engine's CPU at
// 10,000 nodes, most of it zeroing and faulting in fresh memory, and the
// largest part of its live heap at its peak.

// maxListElement bounds one element of a listing (a machine object is
// tens of KB).
const maxListElement = 8 << 20

// listWindow is the read window's starting size; it grows to hold the
// largest element.
const listWindow = 64 << 10

// listDecodeError is an answer that is not a JSON array of objects:
// MAAS's fault, not the network's, so it is not retried.
type listDecodeError struct{ err error }

func (e *listDecodeError) Error() string { return e.err.Error() }
func (e *listDecodeError) Unwrap() error { return e.err }

// elementReader splits a JSON array of objects read from r into its
// elements. buf[off:] is read but not yet consumed; err is r's error
// once met (io.EOF at the end).
type elementReader struct {
	r   io.Reader
	buf []byte
	off int
	err error
}

// more reads into the window once (moving the unconsumed bytes to its
// start once the consumed ones are half of it or it is full, growing it
// when they fill it): false when r has nothing more.
func (e *elementReader) more() bool {
	if e.err != nil {
		return false
	}
	if e.off > 0 && (e.off >= cap(e.buf)/2 || len(e.buf) == cap(e.buf)) {
		n := copy(e.buf, e.buf[e.off:])
		e.buf, e.off = e.buf[:n], 0
	}
	if len(e.buf) == cap(e.buf) {
		e.buf = slices.Grow(e.buf, max(cap(e.buf), listWindow))
	}
	n, err := e.r.Read(e.buf[len(e.buf):cap(e.buf)])
	e.buf = e.buf[:len(e.buf)+n]
	e.err = err
	return n > 0 || err == nil
}

// ended is the error for an answer that stops short: r's own, or
// io.ErrUnexpectedEOF.
func (e *elementReader) ended() error {
	if e.err == nil || e.err == io.EOF {
		return &listDecodeError{io.ErrUnexpectedEOF}
	}
	return e.err
}

// peek skips white space and answers the next byte, not consumed; at
// the end of the answer its error is e.ended().
func (e *elementReader) peek() (byte, error) {
	for {
		for ; e.off < len(e.buf); e.off++ {
			switch c := e.buf[e.off]; c {
			case ' ', '\t', '\n', '\r':
			default:
				return c, nil
			}
		}
		if !e.more() {
			return 0, e.ended()
		}
	}
}

// object consumes the object that starts at the next byte and answers
// its bytes, valid until the next call. Its brackets are counted, its
// strings skipped (a quote after an odd run of backslashes is escaped);
// the decoder checks the rest.
func (e *elementReader) object() ([]byte, error) {
	depth, i, inString := 0, 0, false
	for {
		b := e.buf[e.off:]
		for i < len(b) {
			if inString {
				j := bytes.IndexByte(b[i:], '"')
				if j < 0 {
					i = len(b)
					break
				}
				i += j + 1
				inString = escapedQuote(b, i-1)
				continue
			}
			switch b[i] {
			case '"':
				inString = true
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					e.off += i + 1
					return b[:i+1], nil
				}
			}
			i++
		}
		if i > maxListElement {
			return nil, &listDecodeError{fmt.Errorf("an element of the listing is larger than %d bytes", maxListElement)}
		}
		if !e.more() {
			return nil, e.ended()
		}
	}
}

// escapedQuote: the quote at b[q] follows an odd run of backslashes.
func escapedQuote(b []byte, q int) bool {
	n := 0
	for q-n-1 >= 0 && b[q-n-1] == '\\' {
		n++
	}
	return n%2 == 1
}

// decodeList decodes the JSON array of objects read from r, appending
// each element to out, and answers the window for the next call to
// reuse. An answer that is not such an array is a *listDecodeError; a
// failed read is r's error.
func decodeList[T any](r io.Reader, window []byte, out []T) ([]T, []byte, error) {
	e := &elementReader{r: r, buf: window[:0]}
	c, err := e.peek()
	if err != nil {
		return out, e.buf, err
	}
	if c != '[' {
		return out, e.buf, &listDecodeError{fmt.Errorf("the answer is not a list: it starts with %q", c)}
	}
	e.off++
	if c, err = e.peek(); err != nil {
		return out, e.buf, err
	}
	if c == ']' {
		e.off++
		return out, e.buf, e.rest()
	}
	for {
		if c != '{' {
			return out, e.buf, &listDecodeError{fmt.Errorf("an element of the listing is not an object: it starts with %q", c)}
		}
		b, err := e.object()
		if err != nil {
			return out, e.buf, err
		}
		out = append(out, *new(T))
		if err := segjson.Unmarshal(b, &out[len(out)-1]); err != nil {
			return out, e.buf, &listDecodeError{err}
		}
		if c, err = e.peek(); err != nil {
			return out, e.buf, err
		}
		e.off++
		switch c {
		case ']':
			return out, e.buf, e.rest()
		case ',':
			if c, err = e.peek(); err != nil {
				return out, e.buf, err
			}
		default:
			return out, e.buf, &listDecodeError{fmt.Errorf("after an element of the listing: %q, want ',' or ']'", c)}
		}
	}
}

// rest checks that nothing but white space follows the array.
func (e *elementReader) rest() error {
	c, err := e.peek()
	var de *listDecodeError
	switch {
	case err == nil:
		return &listDecodeError{fmt.Errorf("%q after the listing", c)}
	case errors.As(err, &de) && errors.Is(err, io.ErrUnexpectedEOF):
		return nil // the end of the answer
	}
	return err
}
