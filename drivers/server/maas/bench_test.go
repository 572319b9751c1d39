package maas

import (
	"context"
	"fmt"
	"testing"

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
