package maas

import (
	"reflect"
	"testing"

	segjson "github.com/segmentio/encoding/json"
)

// decodeTwice is the machine read decoded as two views, one pass each
// (what inventoryReads did): the oracle of decodeMachineRead.
func decodeTwice(raw []byte) (*mMachine, mHardware, error) {
	var m mMachine
	var hw mHardware
	if err := segjson.Unmarshal(raw, &m); err != nil {
		return nil, hw, err
	}
	err := segjson.Unmarshal(raw, &hw)
	return &m, hw, err
}

// devicesTwice is decodeDevicesRead's oracle.
func devicesTwice(raw []byte) ([]nodeDevice, []hwDevice, error) {
	var nds []nodeDevice
	var devs []hwDevice
	if err := segjson.Unmarshal(raw, &nds); err != nil {
		return nil, nil, err
	}
	err := segjson.Unmarshal(raw, &devs)
	return nds, devs, err
}

// sameMachine says the one-pass decode of a machine read equals the
// two-pass one ("" when it does), failing when one decodes and the other
// does not.
func sameMachine(raw []byte) string {
	m, hw, err := decodeMachineRead(raw)
	wm, whw, werr := decodeTwice(raw)
	switch {
	case (err == nil) != (werr == nil):
		return "machine: once " + errText(err) + ", twice " + errText(werr)
	case err == nil && (!reflect.DeepEqual(m, wm) || !reflect.DeepEqual(hw, whw)):
		return "machine: the one-pass decode differs"
	}
	return ""
}

// sameDevices is sameMachine for a node devices read.
func sameDevices(raw []byte) string {
	nds, devs, err := decodeDevicesRead(raw)
	wnds, wdevs, werr := devicesTwice(raw)
	switch {
	case (err == nil) != (werr == nil):
		return "devices: once " + errText(err) + ", twice " + errText(werr)
	case err == nil && (!reflect.DeepEqual(nds, wnds) || !reflect.DeepEqual(devs, wdevs)):
		return "devices: the one-pass decode differs"
	}
	return ""
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// FuzzMachineRead: inventory's one-pass decodes of a machine read and of
// node devices equal the two views decoded apart, for any input.
func FuzzMachineRead(f *testing.F) {
	f.Add([]byte(`{"system_id":"abc","status":4,"cpu_count":8,"memory":4096,"hardware_info":{"system_vendor":"X"},` +
		`"interface_set":[{"id":1,"name":"eth0","type":"physical","mac_address":"02:00:00:00:00:01","vendor":"Intel","link_connected":true,"link_speed":25000,"params":{"bond_mode":"802.3ad"}},null],` +
		`"physicalblockdevice_set":[{"name":"sda","size":1000,"tags":["ssd"]}],"blockdevice_set":[{"id":3,"name":"sda"}]}`))
	f.Add([]byte(`[{"pci_address":"0000:01:00.0","hardware_type":5,"vendor_id":"10de","physical_interface":{"id":1,"name":"eth0"},"physical_blockdevice":null}]`))
	f.Add([]byte(`{"interface_set":[],"cpu_count":"8"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, diff := range []string{sameMachine(raw), sameDevices(raw)} {
			if diff != "" {
				t.Errorf("%s: %q", diff, raw)
			}
		}
	})
}
