package redfish_test

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
)

const (
	managerCD = "/redfish/v1/Managers/BMC/VirtualMedia/CD1"
	systemCD  = "/redfish/v1/Systems/437XR1138R2/VirtualMedia/CD1"
)

// TestVirtualMediaManagerFirst: the driver inserts through the Manager's
// virtual CD (where the standard puts it) when the BMC has one, replaces
// another image, boots once from it with SetBootDevice(cd), and ejects;
// each step is read from the simulated BMC's own state.
func TestVirtualMediaManagerFirst(t *testing.T) {
	d, b, s, m := lab(t, simrf.Options{})
	ctx := t.Context()
	var _ drivers.OOBVirtualMedia = d
	if r, err := d.InsertMedia(ctx, b, "http://10.0.0.1/old.iso"); err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("InsertMedia: %+v %v", r, err)
	}
	if via := s.MediaVia(); via != managerCD {
		t.Fatalf("inserted through %q, want the Manager's %s", via, managerCD)
	}
	if r, err := d.InsertMedia(ctx, b, "http://10.0.0.1/boot.iso"); err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("InsertMedia over another image: %+v %v", r, err)
	}
	if r, err := d.InsertMedia(ctx, b, "http://10.0.0.1/boot.iso"); err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("InsertMedia again: %+v %v", r, err)
	}
	if img, in := s.Media(); img != "http://10.0.0.1/boot.iso" || !in || s.Stats().MediaInserted != 2 {
		t.Fatalf("media %q inserted %v after %d inserts, want boot.iso in after 2", img, in, s.Stats().MediaInserted)
	}
	if r, err := d.SetBootDevice(ctx, b, drivers.BootDevice{Device: drivers.BootCD, EFI: true}); err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("SetBootDevice(cd): %+v %v", r, err)
	}
	if dev, persistent, _ := m.BootDevice(); dev != "cdrom" || persistent {
		t.Fatalf("boot override %q persistent %v, want the CD once", dev, persistent)
	}
	if r, err := d.PowerOn(ctx, b); err != nil || r.Status == drivers.StatusFailed {
		t.Fatalf("PowerOn: %+v %v", r, err)
	}
	if last, boots := m.LastBoot(); last != "cdrom" || boots != 1 {
		t.Fatalf("booted %d times, last from %q, want once from the CD", boots, last)
	}
	if r, err := d.EjectMedia(ctx, b); err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("EjectMedia: %+v %v", r, err)
	}
	if r, err := d.EjectMedia(ctx, b); err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("EjectMedia when empty: %+v %v", r, err)
	}
	if _, in := s.Media(); in {
		t.Fatal("still inserted after EjectMedia")
	}
}

// TestVirtualMediaSystemFallback: a BMC with its virtual CD only under
// the System (older BMCs, DMTF's mockup) is served through that path.
func TestVirtualMediaSystemFallback(t *testing.T) {
	d, b, s, _ := lab(t, simrf.Options{SystemMediaOnly: true})
	if r, err := d.InsertMedia(t.Context(), b, "http://10.0.0.1/boot.iso"); err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("InsertMedia: %+v %v", r, err)
	}
	if img, in := s.Media(); img != "http://10.0.0.1/boot.iso" || !in || s.MediaVia() != systemCD {
		t.Fatalf("media %q inserted %v through %q, want through %s", img, in, s.MediaVia(), systemCD)
	}
}

// TestVirtualMediaMessagesHideCredentials: an image URL's user info and
// query (a presigned URL's token) reach the BMC but never the Result's
// message, which the engine records as events.
func TestVirtualMediaMessagesHideCredentials(t *testing.T) {
	d, b, s, _ := lab(t, simrf.Options{})
	const iso = "https://deploy:s3cr3t-pw@images.example/boot.iso?X-Amz-Signature=f00dfeed"
	r, err := d.InsertMedia(t.Context(), b, iso)
	if err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("InsertMedia: %+v %v", r, err)
	}
	if img, _ := s.Media(); img != iso {
		t.Fatalf("the BMC got %q, want the whole URL", img)
	}
	for _, secret := range []string{"s3cr3t-pw", "f00dfeed", "deploy"} {
		if strings.Contains(r.Message, secret) {
			t.Fatalf("InsertMedia's message %q shows %q", r.Message, secret)
		}
	}
	if !strings.Contains(r.Message, "images.example/boot.iso") {
		t.Fatalf("InsertMedia's message %q does not name the image", r.Message)
	}
}

// TestVirtualMediaConformance: the shared virtual-media suite against the
// lab's Redfish service, each outcome read from the service and machine.
// It runs against a BMC with its CD under the Manager and against one
// with it only under the System (the driver's fallback).
func TestVirtualMediaConformance(t *testing.T) {
	for name, o := range map[string]simrf.Options{"manager": {}, "system-only": {SystemMediaOnly: true}} {
		t.Run(name, func(t *testing.T) {
			driverstest.RunOOBVirtualMedia(t, func(t *testing.T) driverstest.MediaLab {
				d, b, s, m := lab(t, o)
				return driverstest.MediaLab{Driver: d, BMC: b, Media: s.Media, NextBootCD: func() bool {
					dev, persistent, _ := m.BootDevice()
					return dev == "cdrom" && !persistent
				}}
			})
		})
	}
}
