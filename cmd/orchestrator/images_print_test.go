package main

import (
	"bytes"
	"strings"
	"testing"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
)

// TestPrintImagesProvisionerError: a Site whose provisioner could not be
// read is named once under the list (its rows are the engine's records
// alone), and in show's detail of each row.
func TestPrintImagesProvisionerError(t *testing.T) {
	t.Parallel()
	why := "site r1: the provisioner's images could not be read (timeout)"
	ims := []apitypes.ImageSite{
		{Site: "r1", Image: "a", Name: "custom/a", State: "absent", ProvisionerError: why},
		{Site: "r1", Image: "b", Name: "ubuntu/noble", State: "absent", ProvisionerError: why},
		{Site: "r2", Image: "a", Name: "custom/a", State: "synced", Progress: 100},
	}
	var b bytes.Buffer
	if err := printImages(&b, ims); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), why); n != 1 {
		t.Fatalf("the list names the unreadable Site %d time(s), want once:\n%s", n, b.String())
	}
	b.Reset()
	if err := printImageDetail(&b, ims[:1]); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "provisioner: "+why) {
		t.Fatalf("show does not say it:\n%s", b.String())
	}
}
