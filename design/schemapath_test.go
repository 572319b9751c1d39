package design

import "testing"

// TestSchemaPath: a stored path in the schema's names, through inlined
// structs, pointers and maps, a map's keys (with dots too) kept as data.
func TestSchemaPath(t *testing.T) {
	for _, c := range []struct{ kind, path, want string }{
		{KindNode, "spec.boot_mac", "spec.bootMac"},
		{KindNode, "spec.host_profile", "spec.hostProfile"},
		{KindNode, "spec.hardware_profile", "spec.hardwareProfile"}, // HostSpec, inlined
		{KindNode, "spec.platform.kernel_params.modprobe.blacklist", "spec.platform.kernelParams.modprobe.blacklist"},
		{KindNode, "spec.owner_data.support_tier", "spec.ownerData.support_tier"},
		{KindNode, "spec.storage.volume_groups.vg_root.logical_volumes", "spec.storage.volumeGroups.vg_root.logicalVolumes"},
		{KindNode, "spec.hardware.device_aliases", "spec.hardware.deviceAliases"}, // behind a pointer
		{KindNode, "metadata.labels.rack_row", "metadata.labels.rack_row"},
		{KindHardwareProfile, "spec.oob.cipher_suite", "spec.oob.cipherSuite"},
		{KindNode, "spec.no_such_field.x_y", "spec.no_such_field.x_y"},
		{"Unknown", "spec.boot_mac", "spec.boot_mac"},
		{KindNode, "", ""},
	} {
		if got := SchemaPath(c.kind, c.path); got != c.want {
			t.Errorf("SchemaPath(%s, %q) = %q, want %q", c.kind, c.path, got, c.want)
		}
	}
}
