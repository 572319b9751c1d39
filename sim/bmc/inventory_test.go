package bmc

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/sim/serial"
)

// TestOperatorCommands: what operators' tools and MAAS's checks ask a
// BMC besides power and boot answers as ipmitool expects, over both
// protocols: the GUID, channel, LAN parameters, users, FRU, sensors, the
// SEL (with the power events the BMC logged) and SOL's parameters.
func TestOperatorCommands(t *testing.T) {
	needIpmitool(t)
	b, ch := startBMC(t, func(o *Options) {
		o.FRU = FRU{Manufacturer: "Acme", Product: "R650", Serial: "SN-4711", PartNumber: "PN-1"}
		o.Serial = serial.New()
	})
	for _, iface := range []string{"lanplus", "lan"} {
		mustTool(t, b, iface, "sel", "clear")
		mustTool(t, b, iface, "chassis", "power", "on")
		mustTool(t, b, iface, "chassis", "power", "cycle")
		for _, c := range []struct {
			args []string
			want []string
		}{
			{[]string{"mc", "guid"}, []string{"GUID Encoding : IPMI"}},
			{[]string{"channel", "info"}, []string{"802.3 LAN", "multi-session", "always available"}},
			{[]string{"lan", "print", "1"}, []string{"IP Address              : 127.0.0.1", "MAC Address", "Static Address"}},
			{[]string{"user", "list", "1"}, []string{"admin", "ADMINISTRATOR"}},
			{[]string{"fru", "print"}, []string{"Board Mfg             : Acme", "Product Serial        : SN-4711", "Board Serial          : BSN-4711"}},
			{[]string{"sdr", "list"}, []string{"CPU Temp", "45 degrees C", "FAN1", "6200 RPM", "PSU1 Input", "320 Watts"}},
			{[]string{"sensor", "list"}, []string{"Inlet Temp", "degrees C"}},
			{[]string{"sel", "info"}, []string{"Entries          : 3", "'Reserve'"}},
			{[]string{"sel", "list"}, []string{"Power Unit", "Power off/down | Deasserted", "Power off/down | Asserted"}},
			{[]string{"sol", "info"}, []string{"Enabled                         : true", "Payload Channel                 : 1"}},
		} {
			out := mustTool(t, b, iface, c.args...)
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("ipmitool -I %s %s: no %q in\n%s", iface, strings.Join(c.args, " "), w, out)
				}
			}
		}
	}
	if !ch.IsPoweredOn() {
		t.Error("the machine is off after power on and cycle")
	}
	var zero [16]byte
	if g := mustTool(t, b, "lanplus", "mc", "guid"); strings.Contains(g, "00000000") || b.opts.GUID == zero {
		t.Errorf("mc guid is zero:\n%s", g)
	}
}

// The FRU image's areas each sum to zero and say their length.
func TestFRUImage(t *testing.T) {
	img := fruImage(FRU{Manufacturer: "Acme", Product: "R650", Serial: strings.Repeat("9", 80)})
	if checksum(img[:8]) != 0 || img[7] != checksum(img[:7]) {
		t.Fatalf("header % x", img[:8])
	}
	for _, off := range []int{int(img[3]) * 8, int(img[4]) * 8} {
		n := int(img[off+1]) * 8
		if off+n > len(img) || checksum(img[off:off+n]) != 0 {
			t.Fatalf("area at %d (%d bytes) does not sum to zero", off, n)
		}
	}
}

// FuzzInventoryCommands: every command of inventory.go answers arbitrary
// request data with a completion code, never a panic, and a response that
// fits an IPMI message.
func FuzzInventoryCommands(f *testing.F) {
	f.Add(byte(0), []byte{0x01, 0x03, 0x00, 0x00})
	f.Add(byte(5), []byte{0x01, 0x00, 0x00, 0x00, 0x00, 0xff})
	f.Add(byte(9), []byte{0x00, 0x00, 'C', 'L', 'R', 0xaa})
	keys := make([][2]byte, 0, len(inventoryCommands))
	for k := range inventoryCommands {
		keys = append(keys, k)
	}
	b, _ := startBMC(f, nil)
	s := &session{priv: privAdmin}
	f.Fuzz(func(t *testing.T, which byte, d []byte) {
		c := inventoryCommands[keys[int(which)%len(keys)]]
		cc, resp := c.run(b, s, d)
		if cc == ccOK && len(resp) > 255 {
			t.Fatalf("%s: %d response bytes", c.info.name, len(resp))
		}
	})
}
