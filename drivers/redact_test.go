package drivers

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slipway-dev/slipway/internal/leakcheck"
)

func TestRedact(t *testing.T) {
	const r = "[redacted]"
	long := "s3cr3t-long-value"
	for _, c := range []struct {
		text string
		repl map[string]string
		want string
	}{
		// Short values: alone, quoted, after '=' or ':'; never inside a word.
		{`invalid API key "x"; expected x`, map[string]string{"x": r}, `invalid API key "[redacted]"; expected [redacted]`},
		{"password=ab, tab ab1 abab", map[string]string{"ab": r}, "password=[redacted], tab ab1 abab"},
		{"é x é", map[string]string{"x": r}, "é [redacted] é"},
		{"éxé", map[string]string{"x": r}, "éxé"},
		// Long values: everywhere, even inside a word.
		{"token" + long + "tail and " + long, map[string]string{long: r}, "token[redacted]tail and [redacted]"},
		// One pass, the longer of overlapping values first; a replacement
		// is not searched again.
		{"ab-" + long, map[string]string{"ab": "(secret ab)", long: "(secret long)", "secret": "(secret s)"}, "(secret ab)-(secret long)"},
		{"nothing here", map[string]string{"": r}, "nothing here"},
	} {
		if got := Redact(c.text, c.repl); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.text, got, c.want)
		}
	}
	// A short value standing alone never survives.
	for _, text := range []string{"x", " x ", `"x"`, "(x)", "k=x;"} {
		if got := Redact(text, map[string]string{"x": r}); strings.Contains(got, "x") {
			t.Errorf("Redact(%q) = %q", text, got)
		}
	}
}

// TestRedactSecretsEveryForm: a secret sent in any of the forms a client
// sends it in (inside a longer value, at any base64 alignment) and
// echoed back in any encoding is not found in the redacted text by a
// search that decodes the text every way (leakcheck, which shares no
// code with the redaction); the text around it is kept.
func TestRedactSecretsEveryForm(t *testing.T) {
	for _, secret := range []string{"Zx9+q/Lm&w=Rt%4Kp Yb7", "plainalnumsecret0123", "s<é>\"q'\\ü\x01end", "abcdefgh"} {
		var sent []string
		for _, pre := range []string{"", "u:", "us:", "usr:", "admin:", "&"} {
			v := pre + secret
			sent = append(sent, v, base64.StdEncoding.EncodeToString([]byte(v)), base64.URLEncoding.EncodeToString([]byte(v+"tail")),
				base64.RawStdEncoding.EncodeToString([]byte(v+"x")))
		}
		var echoed []string
		for _, v := range sent {
			j, _ := json.Marshal(v)
			echoed = append(echoed, v, url.QueryEscape(v), url.PathEscape(v), url.QueryEscape(url.QueryEscape(v)),
				string(j), strconv.Quote(v), html.EscapeString(v), strings.ToLower(url.QueryEscape(v)),
				hex.EncodeToString([]byte(v)), strings.ToUpper(hex.EncodeToString([]byte(v))),
				hex.EncodeToString([]byte(url.QueryEscape(v))), strings.ToUpper(hex.EncodeToString([]byte(url.QueryEscape(v)))))
		}
		for _, e := range echoed {
			text := "MAAS said: <" + e + "> and more"
			got := RedactSecrets(text, secret)
			if leaks := leakcheck.Find(got, secret); len(leaks) > 0 {
				t.Errorf("%q in %q: redacted to %q, still %v", secret, e, got, leaks)
			}
			if !strings.HasPrefix(got, "MAAS said: <") || !strings.HasSuffix(got, "> and more") {
				t.Errorf("%q: the text around it is changed: %q", secret, got)
			}
		}
	}
	if got := RedactSecrets("nothing secret", ""); got != "nothing secret" {
		t.Errorf("an empty secret changes the text: %q", got)
	}
}

// TestPeerText: a peer's answer is quoted redacted, on one line, and
// bounded (on a rune boundary), saying how much was left out; the
// redaction comes before the cut, so a secret across the cut is gone.
func TestPeerText(t *testing.T) {
	const secret = "plainalnumsecret0123"
	if got := PeerText("  a\r\n\tb \x00 " + secret + "\n"); got != "a b "+secret {
		t.Errorf("PeerText without secrets = %q", got)
	}
	if got := PeerText("key="+secret, secret); got != "key=[redacted]" {
		t.Errorf("PeerText = %q", got)
	}
	long := strings.Repeat("é", MaxQuoted) + secret
	got := PeerText(strings.Repeat("x", MaxQuoted-5)+secret+long, secret)
	if !utf8.ValidString(got) || len(got) > MaxQuoted+40 || !strings.Contains(got, " more bytes)") || strings.Contains(got, secret[:5]) {
		t.Errorf("PeerText of a long answer = %q (%d bytes)", got, len(got))
	}
}
