package record

import "fmt"

// MaxCorrelationLen bounds a Request's Correlation (the API's request IDs
// are 26 characters).
const MaxCorrelationLen = 64

// CheckCorrelation refuses a correlation ID that is too long or holds
// anything but [A-Za-z0-9._:-].
func CheckCorrelation(s string) error {
	if len(s) > MaxCorrelationLen {
		return fmt.Errorf("correlation ID is %d bytes long: at most %d", len(s), MaxCorrelationLen)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return fmt.Errorf("correlation ID holds %q: use letters, digits and . _ : -", c)
		}
	}
	return nil
}
