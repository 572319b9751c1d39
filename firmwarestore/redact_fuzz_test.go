package firmwarestore

import (
	"errors"
	"strings"
	"testing"
)

// FuzzRedact: whatever URL an error names, in whatever text around it,
// the query's value never survives redactErr, and redact never shows a
// URL's user information or query.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"http://h/p", "https://u:p@h:1/a/b", "HTTP://h/x", "http://[::1]:8/x#frag", "https://h?"} {
		f.Add(s, "Get \"", "\": dial tcp")
	}
	f.Fuzz(func(t *testing.T, raw, before, after string) {
		const secret = "Zq7SECRETvalue"
		u := raw + "?token=" + secret
		msg := redactErr(errors.New(before+" "+u+" "+after), u)
		if strings.Contains(msg, secret) && !strings.Contains(before+after, secret) {
			t.Fatalf("redactErr kept the query's token: %q", msg)
		}
		if r := redact(u); strings.Contains(r, secret) || strings.Contains(r, "@") && !strings.Contains(raw, "@") {
			t.Fatalf("redact(%q) = %q", u, r)
		}
	})
}
