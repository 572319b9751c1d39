// Package leakcheck is for tests of secret redaction: a peer that echoes
// each request back in a failed answer, in the forms a proxy or a
// server's error page might use, and a search that decodes a text every
// way a secret can be encoded (percent-encoding, HTML and JSON escapes,
// base64 at any alignment, hex in either case) before looking for the secret in it. The
// search does not share code with the redaction it checks.
package leakcheck

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// maxEcho bounds the request body an echo quotes.
const maxEcho = 64 << 10

// Echo answers status with the request (its line, headers and body)
// written out raw, percent-encoded, JSON-quoted, HTML-escaped and in
// base64: what a misbehaving MAAS, BMC or proxy in front of either might
// answer.
func Echo(status int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, maxEcho))
		r.Body = io.NopCloser(bytes.NewReader(body))
		dump, _ := httputil.DumpRequest(r, true)
		d := string(dump)
		q, _ := json.Marshal(d)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "request echoed:\n"+d+"\nencoded: "+url.QueryEscape(d)+"\njson: "+string(q)+
			"\nhtml: "+html.EscapeString(d)+"\nb64: "+base64.StdEncoding.EncodeToString(dump)+
			"\nb64 shifted: "+base64.URLEncoding.EncodeToString(append([]byte("x"), dump...))+
			"\nhex: "+hex.EncodeToString(dump)+"\nHEX: "+strings.ToUpper(hex.EncodeToString(dump))+"\n")
	}
}

// Find reports each secret (by its position in secrets) that text holds
// in any form: raw, percent-decoded (up to three times), HTML- or
// JSON-unescaped, in base64 (standard or URL alphabet, any alignment)
// or hex (either case, either alignment), and combinations of these two levels deep. Secrets shorter
// than 6 bytes are not looked for (they match by chance).
func Find(text string, secrets ...string) []string {
	views := decodings([]string{text}, 2)
	var out []string
	for i, s := range secrets {
		if len(s) < 6 {
			continue
		}
		for _, v := range views {
			if strings.Contains(v, s) {
				out = append(out, "secret #"+strconv.Itoa(i)+" in "+excerpt(v, s))
				break
			}
		}
	}
	return out
}

func excerpt(v, s string) string {
	i := strings.Index(v, s)
	lo, hi := max(0, i-40), min(len(v), i+len(s)+40)
	return strconv.Quote(v[lo:hi])
}

// decodings are texts and everything they decode to, depth levels deep.
func decodings(texts []string, depth int) []string {
	out := append([]string(nil), texts...)
	level := texts
	for range depth {
		var next []string
		for _, t := range level {
			next = append(next, decodeOnce(t)...)
		}
		out = append(out, next...)
		level = next
	}
	return out
}

func decodeOnce(t string) []string {
	out := []string{percentDecode(t, false), percentDecode(t, true), html.UnescapeString(t), jsonUnescape(t)}
	out = append(out, base64Runs(t)...)
	return append(out, hexRuns(t)...)
}

var pct = regexp.MustCompile(`%[0-9a-fA-F]{2}`)

// percentDecode decodes every valid %XX (and + as a space when plus),
// leniently: a stray % is kept.
func percentDecode(t string, plus bool) string {
	if plus {
		t = strings.ReplaceAll(t, "+", " ")
	}
	return pct.ReplaceAllStringFunc(t, func(m string) string {
		b, _ := strconv.ParseUint(m[1:], 16, 8)
		return string([]byte{byte(b)})
	})
}

var jsonEsc = regexp.MustCompile(`\\(u[0-9a-fA-F]{4}|["\\/bfnrt])`)

func jsonUnescape(t string) string {
	return jsonEsc.ReplaceAllStringFunc(t, func(m string) string {
		if m[1] == 'u' {
			n, _ := strconv.ParseUint(m[2:], 16, 32)
			return string(rune(n))
		}
		s, err := strconv.Unquote(`"` + m + `"`)
		if err != nil {
			return m
		}
		return s
	})
}

var b64Run = regexp.MustCompile(`[A-Za-z0-9+/_-]{8,}`)

// base64Runs decodes every run of base64 characters, from each of its
// first four offsets, in both alphabets.
func base64Runs(t string) []string {
	var out []string
	for _, run := range b64Run.FindAllString(t, -1) {
		for shift := 0; shift < 4 && shift < len(run); shift++ {
			r := run[shift:]
			r = r[:len(r)/4*4+min(len(r)%4, 3)]
			if len(r)%4 == 1 {
				r = r[:len(r)-1]
			}
			for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
				if b, err := enc.DecodeString(r); err == nil {
					out = append(out, string(b))
				}
			}
		}
	}
	return out
}

var hexRun = regexp.MustCompile(`[0-9a-fA-F]{12,}`)

// hexRuns decodes every run of hex digits (either case), from its first
// and its second digit.
func hexRuns(t string) []string {
	var out []string
	for _, run := range hexRun.FindAllString(t, -1) {
		for shift := range 2 {
			r := run[shift:]
			if b, err := hex.DecodeString(r[:len(r)/2*2]); err == nil {
				out = append(out, string(b))
			}
		}
	}
	return out
}
