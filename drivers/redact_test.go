package drivers

import (
	"strings"
	"testing"
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
