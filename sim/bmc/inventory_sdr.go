package bmc

// sensor is a threshold sensor the BMC reports: a reading while the
// machine is on and one while it is off, in the sensor's unit after its
// linear conversion (value = m * raw).
type sensor struct {
	number, sensorType, entity, unit, m byte
	on, off                             byte // raw readings
	upperCritical, upperNonCritical     byte // raw thresholds
	name                                string
}

// sensors are the machine's: temperatures (°C), a fan (RPM) and the
// power supply's input (W).
var sensors = []sensor{
	{number: 0x01, sensorType: 0x01, entity: 0x03, unit: 1, m: 1, on: 45, off: 24, upperCritical: 95, upperNonCritical: 85, name: "CPU Temp"},
	{number: 0x02, sensorType: 0x01, entity: 0x07, unit: 1, m: 1, on: 24, off: 22, upperCritical: 45, upperNonCritical: 40, name: "Inlet Temp"},
	{number: 0x03, sensorType: 0x04, entity: 0x1d, unit: 18, m: 100, on: 62, off: 0, upperCritical: 0xff, upperNonCritical: 0xfe, name: "FAN1"},
	{number: 0x04, sensorType: 0x08, entity: 0x0a, unit: 6, m: 4, on: 80, off: 3, upperCritical: 250, upperNonCritical: 225, name: "PSU1 Input"},
}

// sdrRecord is sensor i's Full Sensor Record (IPMI v2.0 table 43-1),
// record ID i+1.
func sdrRecord(i int) []byte {
	s := sensors[i]
	body := []byte{
		0x20, 0x00, s.number, // owner: the BMC, LUN 0; sensor number
		s.entity, 0x01, // entity, instance
		0x7f, 0x68, // initialization: scanning and events enabled; capabilities: auto re-arm, readable thresholds
		s.sensorType, 0x01, // threshold sensor
		0x00, 0x00, 0x00, 0x00, // assertion, deassertion event masks
		0x18, 0x18, // readable thresholds: upper non-critical and critical; settable: none
		0x00, s.unit, 0x00, // unsigned; base unit; no modifier
		0x00,      // linear
		s.m, 0x00, // M, tolerance
		0x00, 0x00, // B, accuracy
		0x00, 0x00, // accuracy, direction; R and B exponents
		0x00,                            // analog flags
		s.on, s.upperNonCritical, s.off, // nominal, normal maximum, normal minimum
		0xff, 0x00, // sensor maximum, minimum reading
		0xff, s.upperCritical, s.upperNonCritical, // upper non-recoverable, critical, non-critical
		0x00, 0x00, 0x00, // lower non-recoverable, critical, non-critical
		0x02, 0x02, // hysteresis
		0x00, 0x00, 0x00, // reserved, OEM
		0xc0 | byte(len(s.name)),
	}
	body = append(body, s.name...)
	head := append(le16(i+1), 0x51, 0x01, byte(len(body)))
	return append(head, body...)
}

// getSDRRepoInfo answers Get SDR Repository Info (section 33.9): the
// sensors' records, none to add.
func (b *BMC) getSDRRepoInfo(_ *session, _ []byte) (byte, []byte) {
	out := append([]byte{0x51}, le16(len(sensors))...)
	out = append(out, 0x00, 0x00) // no free space
	out = append(out, le32(b.started)...)
	out = append(out, le32(b.started)...)
	return ccOK, append(out, 0x00)
}

// getSDR answers Get SDR (section 33.12): part of a record, and the next
// record's ID (0xffff after the last).
func (b *BMC) getSDR(_ *session, d []byte) (byte, []byte) {
	if len(d) < 6 {
		return ccReqDataLen, nil
	}
	return readRecord(d, len(sensors), sdrRecord)
}

// readRecord answers a read of part of a record of a repository of n
// records (Get SDR, Get SEL Entry): d is [reservation (2), record ID (2),
// offset, count]; record ID 0 is the first, 0xffff the last.
func readRecord(d []byte, n int, record func(i int) []byte) (byte, []byte) {
	id := int(d[2]) | int(d[3])<<8
	switch {
	case n == 0:
		return ccNotPresent, nil
	case id == 0:
		id = 1
	case id == 0xffff:
		id = n
	case id > n:
		return ccNotPresent, nil
	}
	rec := record(id - 1)
	off := int(d[4])
	if off > len(rec) {
		return ccInvalidData, nil
	}
	end := len(rec)
	if d[5] != 0xff {
		end = min(end, off+int(d[5]))
	}
	next := id + 1
	if next > n {
		next = 0xffff
	}
	return ccOK, append(le16(next), rec[off:end]...)
}

// getSensorReading answers Get Sensor Reading (section 35.14): the
// reading for the machine's power state; scanning on, no threshold
// crossed.
func (b *BMC) getSensorReading(_ *session, d []byte) (byte, []byte) {
	if len(d) < 1 {
		return ccReqDataLen, nil
	}
	for _, s := range sensors {
		if s.number == d[0] {
			r := s.off
			if b.chassis.IsPoweredOn() {
				r = s.on
			}
			return ccOK, []byte{r, 0xc0, 0x00}
		}
	}
	return ccNotPresent, nil
}
