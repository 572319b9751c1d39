package introspection

import (
	"encoding/json"
	"strconv"
)

// decodeRecord decodes a stored token record. Records are written by
// json.Marshal, in one form: an object of plain strings and an integer,
// without spaces; that form is read by hand (a quarter of the time
// json.Unmarshal takes, which was as much as the store read on a token's
// first request), anything else by json.Unmarshal. TestDecodeRecord and
// FuzzDecodeRecord hold the two to the same results.
func decodeRecord(b []byte, rec *tokenRecord) error {
	if decodeRecordFast(b, rec) {
		return nil
	}
	*rec = tokenRecord{}
	return json.Unmarshal(b, rec)
}

// decodeRecordFast decodes b when it is an object of the record's fields
// (each once at most, lower case as written) with plain ASCII string
// values (no escapes) and a plain decimal "issue"; false otherwise.
func decodeRecordFast(b []byte, rec *tokenRecord) bool {
	var r tokenRecord
	if len(b) < 2 || b[0] != '{' {
		return false
	}
	if len(b) == 2 && b[1] == '}' {
		*rec = r
		return true
	}
	var seen uint8
	i := 1
	for {
		k, j, ok := plainString(b, i)
		if !ok || j >= len(b) || b[j] != ':' {
			return false
		}
		i = j + 1
		var bit uint8
		switch string(k) {
		case "node", "deployment", "revision":
			v, j, ok := plainString(b, i)
			if !ok {
				return false
			}
			switch string(k) {
			case "node":
				r.Node, bit = string(v), 1
			case "deployment":
				r.Deployment, bit = string(v), 2
			default:
				r.Revision, bit = string(v), 4
			}
			i = j
		case "issued":
			_, j, ok := plainString(b, i)
			if !ok || r.Issued.UnmarshalJSON(b[i:j]) != nil {
				return false
			}
			i, bit = j, 8
		case "issue":
			j := i
			for j < len(b) && '0' <= b[j] && b[j] <= '9' {
				j++
			}
			if j == i || j-i > 9 || (b[i] == '0' && j-i > 1) {
				return false
			}
			n, err := strconv.Atoi(string(b[i:j]))
			if err != nil {
				return false
			}
			r.Issue, i, bit = n, j, 16
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			if i+1 != len(b) {
				return false
			}
			*rec = r
			return true
		default:
			return false
		}
	}
}

// plainString returns the contents of the JSON string starting at b[i]
// and the index after it, when it holds printable ASCII only, without
// escapes; false otherwise.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return b[i+1 : j], j + 1, true
		case c < 0x20 || c == '\\' || c >= 0x7f:
			return nil, 0, false
		}
	}
	return nil, 0, false
}
