package bmc

import "testing"

// TestFirmwareRevision: Get Device ID's firmware revision bytes: the
// major in bits 6:0, the minor as two BCD digits; what does not parse
// reports 1.00.
func TestFirmwareRevision(t *testing.T) {
	for _, tc := range []struct {
		v            string
		major, minor byte
	}{
		{"", 0x01, 0x00}, {"5.10", 5, 0x10}, {"7.1", 7, 0x10}, {"3.01", 3, 0x01}, {"2.99", 2, 0x99},
		{"200.1", 0x01, 0x00}, {"x.y", 0x01, 0x00}, {"4.123", 4, 0x00}, {"6", 6, 0x00},
	} {
		if ma, mi := fwMajor(tc.v), fwMinor(tc.v); ma != tc.major || mi != tc.minor {
			t.Errorf("%q: %#x %#x, want %#x %#x", tc.v, ma, mi, tc.major, tc.minor)
		}
	}
}
