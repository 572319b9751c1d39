package ipmi

import "testing"

// FuzzParseReplies: the driver's parsers of BMC answers never panic.
func FuzzParseReplies(f *testing.F) {
	f.Add([]byte{0x81, 0x1c, 0x63, 0x20, 0x04, 0x01, 0x00, 0x01, 0xda})
	f.Add([]byte{0x06, 0x00, 0xff, 0x07, 0x06, 0x11, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0x00})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseReply(b)
		_, _ = parseV2(b)
	})
}
