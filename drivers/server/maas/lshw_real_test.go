package maas

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/testtool"
)

// TestParseLSHWRealOutput: the parser reads what the real lshw prints on
// this machine (`lshw -xml`, the document MAAS's commissioning stores):
// the CPU model, and every physical NIC the kernel has, by MAC. The lab's
// documents are written to lshw's schema by us; this checks the schema
// against the tool.
func TestParseLSHWRealOutput(t *testing.T) {
	tool := testtool.Need(t, "lshw", "lshw")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	doc, err := exec.CommandContext(ctx, tool, "-xml").Output()
	if err != nil {
		t.Fatalf("lshw -xml: %v", err)
	}
	hf, err := parseLSHW(doc)
	if err != nil {
		t.Fatalf("parse lshw's own output: %v", err)
	}
	// The fast reader reads it (plain ASCII without character
	// references, as lshw writes it for most machines) as encoding/xml.
	sameAsXML(t, doc, plainASCII(doc) && !bytes.Contains(doc, []byte("&#")))
	if hf.CPU.Model == "" {
		t.Errorf("no CPU model in lshw's output: %+v", hf.CPU)
	}
	macs := map[string]bool{}
	for _, n := range hf.NICs {
		macs[strings.ToLower(n.MAC)] = true
	}
	devs, _ := filepath.Glob("/sys/class/net/*/device") // physical (and virtio) NICs only
	for _, dev := range devs {
		dir := filepath.Dir(dev)
		raw, err := os.ReadFile(filepath.Join(dir, "address"))
		if err != nil {
			continue
		}
		if mac := strings.TrimSpace(string(raw)); !macs[mac] {
			t.Errorf("NIC %s (%s) is not among the parsed NICs %+v", filepath.Base(dir), mac, hf.NICs)
		}
	}
	t.Logf("lshw: CPU %+v, %d NICs, %d disks with a bus address, system %+v", hf.CPU, len(hf.NICs), len(hf.DiskBus), hf.System)
}
