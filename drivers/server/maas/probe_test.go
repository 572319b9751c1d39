package maas

import (
	"encoding/json"
	"net/url"
	"reflect"
	"slices"
	"testing"

	"github.com/slipway-dev/slipway/sim/lab"
)

// TestProbeSiteKernelsAndDefaults: the kernels of each image are the
// ga-/hwe- subarchitectures of its boot resources, and the defaults are
// the region's default_osystem and default_distro_series.
func TestProbeSiteKernelsAndDefaults(t *testing.T) {
	l := startLab(t, lab.Config{Machines: 1})
	d := newTestDriver(t, l, nil)
	info, err := d.ProbeSite(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Kernels["ubuntu/jammy"]; !slices.Equal(got, []string{"ga-22.04", "hwe-22.04"}) {
		t.Errorf("ubuntu/jammy kernels %v, want ga-22.04 and hwe-22.04 (kernels %v)", got, info.Kernels)
	}
	if info.DefaultOS != "ubuntu" || info.DefaultImage != "ubuntu/jammy" {
		t.Errorf("defaults %q %q, want ubuntu and ubuntu/jammy", info.DefaultOS, info.DefaultImage)
	}
	if err := d.c.call(testCtx(t), "POST", "maas/", "set_config", url.Values{"name": {"default_distro_series"}, "value": {"noble"}}, nil); err != nil {
		t.Fatal(err)
	}
	if info, err = d.ProbeSite(testCtx(t)); err != nil || info.DefaultImage != "ubuntu/noble" {
		t.Errorf("after set_config default_distro_series=noble: %q, %v", info.DefaultImage, err)
	}
}

// TestImagesAndKernels reads a boot-resources/ answer shaped like a MAAS
// 3.x region's: bootloaders and custom images have no kernels; the
// lowlatency flavour is a kernel of its own.
func TestImagesAndKernels(t *testing.T) {
	const answer = `[
	 {"id": 1, "type": "Synced", "name": "grub-efi-signed/uefi", "architecture": "amd64/generic", "resource_uri": "/MAAS/api/2.0/boot-resources/1/"},
	 {"id": 7, "type": "Synced", "name": "ubuntu/jammy", "architecture": "amd64/hwe-22.04", "subarches": "generic,hwe-p,ga-22.04,hwe-22.04", "kflavor": "generic", "resource_uri": "/MAAS/api/2.0/boot-resources/7/"},
	 {"id": 5, "type": "Synced", "name": "ubuntu/jammy", "architecture": "amd64/ga-22.04", "subarches": "generic,hwe-p,ga-22.04", "kflavor": "generic", "resource_uri": "/MAAS/api/2.0/boot-resources/5/"},
	 {"id": 8, "type": "Synced", "name": "ubuntu/jammy", "architecture": "amd64/hwe-22.04-lowlatency", "subarches": "generic,hwe-22.04-lowlatency", "kflavor": "lowlatency", "resource_uri": "/MAAS/api/2.0/boot-resources/8/"},
	 {"id": 9, "type": "Synced", "name": "ubuntu/jammy", "architecture": "arm64/ga-22.04", "subarches": "generic,ga-22.04", "kflavor": "generic", "resource_uri": "/MAAS/api/2.0/boot-resources/9/"},
	 {"id": 12, "type": "Uploaded", "name": "custom/rocky9", "architecture": "amd64/generic", "base_image": "rhel/9", "resource_uri": "/MAAS/api/2.0/boot-resources/12/"},
	 {"id": 14, "type": "Uploaded", "name": "gpu-golden", "architecture": "amd64/generic", "base_image": "ubuntu/jammy", "resource_uri": "/MAAS/api/2.0/boot-resources/14/"}
	]`
	var res []bootResource
	if err := json.Unmarshal([]byte(answer), &res); err != nil {
		t.Fatal(err)
	}
	images, kernels := imagesAndKernels(res)
	// MAAS keeps an upload's name bare (BootResourceForm.clean_name):
	// a deploy and the design name it custom/<name>.
	if want := []string{"custom/gpu-golden", "custom/rocky9", "grub-efi-signed/uefi", "ubuntu/jammy"}; !slices.Equal(images, want) {
		t.Errorf("images %v, want %v", images, want)
	}
	want := map[string][]string{"ubuntu/jammy": {"ga-22.04", "hwe-22.04", "hwe-22.04-lowlatency"}}
	if !reflect.DeepEqual(kernels, want) {
		t.Errorf("kernels %v, want %v", kernels, want)
	}
}
