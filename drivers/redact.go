package drivers

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html"
	"net/url"
	"slices"
	"strconv"
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
	var first [256][]string // the values by the byte they start with, longest first
	for _, v := range values {
		first[v[0]] = append(first[v[0]], v)
	}
	var b strings.Builder
	for i := 0; i < len(text); {
		v := ""
		if vs := first[text[i]]; vs != nil {
			v = matchAt(text, i, vs)
		}
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

// Redacted is what RedactSecrets puts in place of a secret.
const Redacted = redacted

// SecretForms returns secret and the forms in which it travels to a peer,
// and so may come back in the peer's answer (a server or a proxy that
// echoes the request): percent-encoded (query and path escaping, upper
// and lower case hex, and twice), as an OAuth PLAINTEXT signature
// ("&secret", which MAAS keys send, and its encodings), JSON- and
// Go-quoted, HTML-escaped, and base64 (standard and URL alphabets): the
// whole secret encoded, and, for a secret encoded inside a longer value
// (HTTP Basic "user:pass"), the part of its encoding that does not depend
// on what comes before or after it, at each of the three alignments;
// and the base64 forms percent-encoded; and each of these forms in hex,
// lower and upper case (a peer that dumps what it was sent in hex).
// Forms equal to others are listed once; "" has no forms.
func SecretForms(secret string) []string {
	if secret == "" {
		return nil
	}
	qe, pe := url.QueryEscape(secret), url.PathEscape(secret)
	forms := []string{secret, qe, pe, lowerHex(qe), lowerHex(pe), url.QueryEscape(qe), url.PathEscape(pe),
		"&" + secret, url.QueryEscape("&" + secret), url.QueryEscape(url.QueryEscape("&" + secret)),
		html.EscapeString(secret), quoted(strconv.Quote(secret))}
	if j, err := json.Marshal(secret); err == nil {
		forms = append(forms, quoted(string(j)))
	}
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	if enc.Encode(secret) == nil {
		forms = append(forms, quoted(strings.TrimSuffix(plain.String(), "\n")))
	}
	for _, b := range base64Forms(secret) {
		forms = append(forms, b, url.QueryEscape(b), url.PathEscape(b), lowerHex(url.QueryEscape(b)))
	}
	for _, f := range forms {
		h := hex.EncodeToString([]byte(f))
		forms = append(forms, h, strings.ToUpper(h))
	}
	slices.Sort(forms)
	return slices.Compact(forms)
}

// base64Forms are secret's encodings in base64: whole (padded and not),
// and from each alignment the groups that only its bytes make.
func base64Forms(secret string) []string {
	var forms []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		forms = append(forms, enc.EncodeToString([]byte(secret)), enc.WithPadding(base64.NoPadding).EncodeToString([]byte(secret)))
		for skip := range 3 {
			part := secret[min(skip, len(secret)):]
			if n := len(part) / 3 * 3; n > 0 {
				forms = append(forms, enc.EncodeToString([]byte(part[:n])))
			}
		}
	}
	return forms
}

// quoted strips a quoted string's quotes.
func quoted(q string) string {
	if len(q) >= 2 {
		return q[1 : len(q)-1]
	}
	return q
}

// lowerHex is a percent-encoded text with its hex digits in lower case.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerASCII(b[i+1]), lowerASCII(b[i+2])
		}
	}
	return string(b)
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// RedactSecrets returns text with every form of each secret
// (SecretForms) replaced by "[redacted]".
func RedactSecrets(text string, secrets ...string) string {
	repl := map[string]string{}
	for _, s := range secrets {
		for _, f := range SecretForms(s) {
			repl[f] = redacted
		}
	}
	return Redact(text, repl)
}

// MaxQuoted bounds, in bytes, what an error quotes of a peer's answer.
const MaxQuoted = 512

// PeerText is what an error may quote of a peer's answer (its body, or
// an error that quotes it): every form of the secrets redacted first,
// then runs of white space and control characters made one space, and
// the text cut at MaxQuoted bytes, saying how much was left out.
func PeerText(answer string, secrets ...string) string {
	text := strings.Join(strings.FieldsFunc(RedactSecrets(answer, secrets...), func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
	if len(text) <= MaxQuoted {
		return text
	}
	cut := MaxQuoted
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "… (" + strconv.Itoa(len(text)-cut) + " more bytes)"
}
