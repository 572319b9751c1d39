package lab

import (
	"regexp"
	"testing"
)

// FuzzSample: no pattern panics the generator; what it generates is
// short and matches the pattern whenever matching says it does.
func FuzzSample(f *testing.F) {
	for _, p := range []string{"H100", "^A[0-9]{3}$", "(foo|bar)+baz", `\d+GB`, "x{1000}", "[^\x00-\x7f]", `\bEPYC\b`, "a{2,5}?"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if len(p) > 256 {
			return
		}
		s, ok := sample(p)
		if len(s) > 1024+8 {
			t.Fatalf("sample(%q) is %d bytes", p, len(s))
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return
		}
		got := matching(p, cpuModels, "default")
		if got != "default" && !re.MatchString(got) {
			t.Fatalf("matching(%q) = %q, which it does not match", p, got)
		}
		_ = ok
	})
}
