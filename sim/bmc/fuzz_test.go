package bmc

import "testing"

// FuzzParsePackets: the BMC's packet parsers never panic on any datagram.
func FuzzParsePackets(f *testing.F) {
	f.Add([]byte{0x06, 0x00, 0xff, 0x07, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0x09, 0x20, 0x18, 0xc8, 0x81, 0x00, 0x38, 0x8e, 0x04, 0xb5})
	f.Add([]byte{0x06, 0x00, 0xff, 0x07, 0x06, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0x00})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseV15(b)
		_, _ = parseV20(b)
		_, _ = parseIPMIRequest(b)
	})
}
