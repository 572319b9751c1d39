package bmc

// maxSEL bounds the System Event Log: when it is full, the oldest entry
// is overwritten (a circular SEL).
const maxSEL = 512

// logPower writes a Power Unit event to the SEL: "power off/down"
// asserted when the machine went off, deasserted when it came on.
// Called with b.mu held.
func (b *BMC) logPowerLocked(on bool) {
	dir := byte(0x6f) // assertion, sensor-specific
	if on {
		dir = 0xef // deassertion
	}
	rec := append(le16(0), 0x02) // record ID (its position, set when read), system event record
	rec = append(rec, le32(now())...)
	rec = append(rec, 0x20, 0x00, 0x04, 0x09, 0x05, dir, 0x00, 0xff, 0xff) // generator: the BMC; EvM 2.0; Power Unit #5; offset 0
	if len(b.sel) >= maxSEL {
		b.sel = b.sel[1:]
	}
	b.sel = append(b.sel, rec)
	b.selAdded = now()
}

// getSELInfo answers Get SEL Info (section 31.2).
func (b *BMC) getSELInfo(_ *session, _ []byte) (byte, []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := append([]byte{0x51}, le16(len(b.sel))...)
	out = append(out, le16((maxSEL-len(b.sel))*16)...)
	out = append(out, le32(b.selAdded)...)
	out = append(out, le32(b.selErased)...)
	return ccOK, append(out, 0x02) // Reserve SEL supported
}

// getSELEntry answers Get SEL Entry (section 31.5).
func (b *BMC) getSELEntry(_ *session, d []byte) (byte, []byte) {
	if len(d) < 6 {
		return ccReqDataLen, nil
	}
	b.mu.Lock()
	sel := b.sel
	b.mu.Unlock()
	return readRecord(d, len(sel), func(i int) []byte {
		rec := append([]byte(nil), sel[i]...)
		copy(rec, le16(i+1)) // record IDs are positions: 1..n
		return rec
	})
}

// clearSEL answers Clear SEL (section 31.9): erasure completes at once.
func (b *BMC) clearSEL(_ *session, d []byte) (byte, []byte) {
	if len(d) < 6 {
		return ccReqDataLen, nil
	}
	if string(d[2:5]) != "CLR" {
		return ccInvalidData, nil
	}
	if d[5] == 0xaa {
		b.mu.Lock()
		b.sel, b.selErased = nil, now()
		b.mu.Unlock()
	}
	return ccOK, []byte{0x01}
}

// getSELTime answers Get SEL Time (section 31.10).
func (b *BMC) getSELTime(_ *session, _ []byte) (byte, []byte) {
	return ccOK, le32(now())
}
