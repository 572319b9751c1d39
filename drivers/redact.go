package drivers

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MinRedactLen is the length, in bytes, from which Redact replaces a
// value wherever it appears. A shorter value is replaced only where it
// stands alone (no letter or digit right before or after it): replacing
// every "x" would turn "expected" into "e[redacted]pected", which mangles
// the text and shows the value all the same. A value that short is
// guessable anyway; a text that must not hold one is best not passed on
// at all.
const MinRedactLen = 8

// Redact returns text with the values in repl (value → its replacement)
// replaced, in one pass: where two values overlap, the longer one is
// replaced. Empty values are ignored.
func Redact(text string, repl map[string]string) string {
	values := make([]string, 0, len(repl))
	for v := range repl {
		if v != "" {
			values = append(values, v)
		}
	}
	if len(values) == 0 {
		return text
	}
	slices.SortFunc(values, func(a, b string) int { return len(b) - len(a) })
	var b strings.Builder
	for i := 0; i < len(text); {
		v := matchAt(text, i, values)
		if v == "" {
			b.WriteByte(text[i])
			i++
			continue
		}
		b.WriteString(repl[v])
		i += len(v)
	}
	return b.String()
}

// matchAt returns the longest of values that text holds at i and that may
// be replaced there ("" for none).
func matchAt(text string, i int, values []string) string {
	for _, v := range values {
		if strings.HasPrefix(text[i:], v) && (len(v) >= MinRedactLen || standsAlone(text, i, i+len(v))) {
			return v
		}
	}
	return ""
}

// standsAlone reports whether text[start:end] has no letter or digit
// right before or after it.
func standsAlone(text string, start, end int) bool {
	before, _ := utf8.DecodeLastRuneInString(text[:start])
	after, _ := utf8.DecodeRuneInString(text[end:])
	word := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	return (start == 0 || !word(before)) && (end == len(text) || !word(after))
}
