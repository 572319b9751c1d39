package maas

import (
	"context"
	"fmt"
	"testing"
	"time"

	segjson "github.com/segmentio/encoding/json"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/sim/lab"
	simmaas "github.com/slipway-dev/slipway/sim/maas"
)

// BenchmarkStatus1000 polls the status of 1,000 in-flight machines: one
// machines read per poll, whatever the number of nodes.
func BenchmarkStatus1000(b *testing.B) {
	l, err := lab.Start(context.Background(), lab.Config{TimeScale: testTimeScale})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	refs := make([]drivers.NodeRef, 0, 1000)
	for i := 0; i < 1000; i++ {
		hw := &simmaas.Hardware{Arch: "amd64/generic", NICs: []simmaas.NIC{{MAC: fmt.Sprintf("02:10:00:00:%02x:%02x", i>>8, i&0xff)}}}
		id := l.MAAS.Enlist(hw, "ipmi", simmaas.PowerParams{"power_address": fmt.Sprintf("127.0.0.%d", i%250+1)})
		refs = append(refs, drivers.NodeRef{Name: fmt.Sprintf("n%04d", i), MachineID: id})
	}
	info := l.Info()
	d, err := NewDriver(drivers.Config{Settings: map[string]string{SettingURL: info.MAASURL},
		Secrets: map[string]drivers.Secret{SecretAPIKey: drivers.NewSecret(info.APIKey)}})
	if err != nil {
		b.Fatal(err)
	}
	before := l.MAAS.Stats().Snapshot().Total
	b.ResetTimer()
	for b.Loop() {
		ms, err := d.Status(context.Background(), refs)
		if err != nil || len(ms) != len(refs) {
			b.Fatalf("%d machines, %v", len(ms), err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(l.MAAS.Stats().Snapshot().Total-before)/float64(b.N), "requests/poll")
}

// BenchmarkMachineDecode decodes a commissioned generated machine as the
// lab's MAAS answers GET machines/{id}/: whole (mMachine), its state
// alone (the looks Commission and Deploy start with: fetchState), and as
// Inventory takes it (the machine and its hardware facts, in one pass;
// and in two, as it did before).
func BenchmarkMachineDecode(b *testing.B) {
	raw := commissionedMachineJSON(b)
	b.Logf("machine answer: %d bytes", len(raw))
	for _, c := range []struct {
		name   string
		decode func() error
	}{
		{"full", func() error { var m mMachine; return segjson.Unmarshal(raw, &m) }},
		{"state", func() error { var m mMachineState; return segjson.Unmarshal(raw, &m) }},
		{"inventory", func() error { _, _, err := decodeMachineRead(raw); return err }},
		{"inventory-two-passes", func() error { _, _, err := decodeTwice(raw); return err }}, // as before #39's second round
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(raw)))
			for b.Loop() {
				if err := c.decode(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// commissionedMachineJSON is the lab MAAS's answer for a commissioned
// generated machine (a bond's NICs, four disks).
func commissionedMachineJSON(b *testing.B) []byte {
	b.Helper()
	l, err := lab.Start(context.Background(), lab.Config{Design: genDesign(b, 1), TimeScale: 0.0005, Seed: 5})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	info := l.Info()
	d, err := NewDriver(drivers.Config{Settings: map[string]string{SettingURL: info.MAASURL},
		Secrets: map[string]drivers.Secret{SecretAPIKey: drivers.NewSecret(info.APIKey)}})
	if err != nil {
		b.Fatal(err)
	}
	m := l.Machines()[0]
	m.SetBootDevice("pxe", false, true)
	m.PowerOn()
	n := drivers.Node{NodeRef: drivers.NodeRef{Name: m.Name}, Hostname: m.Name, BootMAC: m.Hardware.NICs[0].MAC}
	ctx := context.Background()
	for range 2000 {
		got, r, err := d.IdentifyNode(ctx, n)
		if err != nil {
			b.Fatal(err)
		}
		if r.Status == drivers.StatusDone {
			n.MachineID = got.MachineID
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	for range 2000 {
		r, err := d.Commission(ctx, n.NodeRef)
		if err != nil {
			b.Fatal(err)
		}
		if r.Status == drivers.StatusDone {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	raw, err := d.c.getRaw(ctx, "machines/"+n.MachineID+"/", "")
	if err != nil || n.MachineID == "" {
		b.Fatalf("machine %q: %v", n.MachineID, err)
	}
	return raw
}
