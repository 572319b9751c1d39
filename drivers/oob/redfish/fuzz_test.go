package redfish

import "testing"

// FuzzValues: what the driver parses from designs and BMCs: a design's
// BIOS value against an attribute's type, and a Retry-After.
func FuzzValues(f *testing.F) {
	f.Add("12", "Enabled")
	f.Add("true", "5")
	f.Add(" 3 ", "Mon, 02 Jan 2006 15:04:05 GMT")
	f.Fuzz(func(t *testing.T, value, retry string) {
		for _, cur := range []any{float64(1), true, "x"} {
			v, err := typed(cur, value)
			if err == nil && v == nil {
				t.Fatalf("typed(%T, %q): nil and no error", cur, value)
			}
		}
		if w := retryAfter(retry); w < 0 || w > maxRetryAfter {
			t.Fatalf("retryAfter(%q) = %v", retry, w)
		}
	})
}
