package bmc

// FRU is what the BMC's FRU inventory (device 0) says of the machine:
// its board and product areas.
type FRU struct {
	Manufacturer string // board and product manufacturer
	Product      string // product name (the board's too)
	Serial       string // product serial; the board's is "B" + it
	PartNumber   string
	Version      string
	AssetTag     string
}

// fruImage is the FRU inventory of device 0 (Platform Management FRU
// Information Storage Definition v1.0): the common header, then the
// board area, then the product area, each padded to 8 bytes and closed
// by its checksum.
func fruImage(f FRU) []byte {
	board := fruArea([]byte{0x01, 0, 0x00, 0, 0, 0}, // version, length, English, manufacturing time unspecified
		f.Manufacturer, f.Product, "B"+f.Serial, f.PartNumber, "")
	product := fruArea([]byte{0x01, 0, 0x00}, // version, length, English
		f.Manufacturer, f.Product, f.PartNumber, f.Version, f.Serial, f.AssetTag, "")
	header := []byte{0x01, 0, 0, 1, byte(1 + len(board)/8), 0, 0, 0}
	header[7] = checksum(header[:7])
	out := append(header, board...)
	return append(out, product...)
}

// fruArea is an area: head (whose byte 1 becomes the length in 8-byte
// units), the fields as 8-bit ASCII type/length bytes, the end marker,
// padding and the checksum.
func fruArea(head []byte, fields ...string) []byte {
	a := append([]byte(nil), head...)
	for _, s := range fields {
		s = s[:min(len(s), 63)]
		a = append(a, 0xc0|byte(len(s)))
		a = append(a, s...)
	}
	a = append(a, 0xc1)
	for (len(a)+1)%8 != 0 {
		a = append(a, 0)
	}
	a[1] = byte((len(a) + 1) / 8)
	return append(a, checksum(a))
}

// checksum is the zero checksum: the byte that makes the sum 0.
func checksum(b []byte) byte {
	var s byte
	for _, c := range b {
		s += c
	}
	return -s
}

// getFRUAreaInfo answers Get FRU Inventory Area Info (section 34.1) for
// device 0: its size, accessed by bytes.
func (b *BMC) getFRUAreaInfo(_ *session, d []byte) (byte, []byte) {
	if len(d) < 1 {
		return ccReqDataLen, nil
	}
	if d[0] != 0 {
		return ccNotPresent, nil
	}
	return ccOK, append(le16(len(b.fru)), 0x00)
}

// readFRUData answers Read FRU Data (section 34.2): count bytes from an
// offset of device 0.
func (b *BMC) readFRUData(_ *session, d []byte) (byte, []byte) {
	if len(d) < 4 {
		return ccReqDataLen, nil
	}
	if d[0] != 0 {
		return ccNotPresent, nil
	}
	off := int(d[1]) | int(d[2])<<8
	if off >= len(b.fru) {
		return ccInvalidData, nil
	}
	n := min(int(d[3]), len(b.fru)-off, 32)
	return ccOK, append([]byte{byte(n)}, b.fru[off:off+n]...)
}
