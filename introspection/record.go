package introspection

import (
	"encoding/json"
	"strconv"
	"unsafe"
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
	if len(b) < 2 || b[len(b)-1] != '}' {
		return false
	}
	return decodeRecordOpen(string(b[:len(b)-1]), rec)
}

// decodeRecordOpen is decodeRecordFast of s and a closing brace (s is
// the record as stored up to its last field, its closing brace not
// included). The strings decoded are substrings of s: one allocation, s,
// for all of them.
func decodeRecordOpen(s string, rec *tokenRecord) bool {
	var r tokenRecord
	if len(s) < 1 || s[0] != '{' {
		return false
	}
	if len(s) == 1 {
		*rec = r
		return true
	}
	var seen uint8
	i := 1
	for {
		k, j, ok := plainString(s, i)
		if !ok || j >= len(s) || s[j] != ':' {
			return false
		}
		var bit uint8
		i, bit, ok = decodeField(s, j+1, k, &r)
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if i == len(s) { // the closing brace
			*rec = r
			return true
		}
		if s[i] != ',' {
			return false
		}
		i++
	}
}

// decodeField decodes the value of field k starting at s[i] into r; it
// returns the index after the value and the field's bit (each field is
// allowed once).
func decodeField(s string, i int, k string, r *tokenRecord) (int, uint8, bool) {
	switch k {
	case "node", "deployment", "revision":
		v, j, ok := plainString(s, i)
		switch k {
		case "node":
			r.Node = v
			return j, 1, ok
		case "deployment":
			r.Deployment = v
			return j, 2, ok
		}
		r.Revision = v
		return j, 4, ok
	case "issued":
		_, j, ok := plainString(s, i)
		// UnmarshalJSON only reads its argument: no copy of it.
		ok = ok && r.Issued.UnmarshalJSON(unsafe.Slice(unsafe.StringData(s[i:j]), j-i)) == nil
		return j, 8, ok
	case "issue":
		n, j, ok := plainInt(s, i)
		r.Issue = n
		return j, 16, ok
	}
	return 0, 0, false
}

// plainInt returns the non-negative decimal integer (at most 9 digits,
// no leading zero) starting at s[i] and the index after it.
func plainInt(s string, i int) (int, int, bool) {
	j := i
	for j < len(s) && '0' <= s[j] && s[j] <= '9' {
		j++
	}
	if j == i || j-i > 9 || (s[i] == '0' && j-i > 1) {
		return 0, 0, false
	}
	n, err := strconv.Atoi(s[i:j])
	return n, j, err == nil
}

// plainString returns the contents of the JSON string starting at s[i]
// and the index after it, when it holds printable ASCII only, without
// escapes; false otherwise.
func plainString(s string, i int) (string, int, bool) {
	if i >= len(s) || s[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case c == '"':
			return s[i+1 : j], j + 1, true
		case c < 0x20 || c == '\\' || c >= 0x7f:
			return "", 0, false
		}
	}
	return "", 0, false
}
