package ipmi

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// BenchmarkPowerStatus100 reads the power state of 100 ipmi_sim BMCs at
// once through one driver with the default settings (maxConcurrent 32,
// a session per call), over lanplus (cipher suite 3) and lan. One
// iteration is 100 calls; calls/s is the throughput.
func BenchmarkPowerStatus100(b *testing.B) { benchPowerStatus(b, 100) }

// BenchmarkPowerStatus20 is the same with 20 BMCs.
func BenchmarkPowerStatus20(b *testing.B) { benchPowerStatus(b, 20) }

func benchPowerStatus(b *testing.B, n int) {
	c := startIPMISim(b, n)
	for _, proto := range []string{"lanplus", "lan"} {
		b.Run(proto, func(b *testing.B) {
			d, err := NewDriver(drivers.Config{}) // the defaults
			if err != nil {
				b.Fatal(err)
			}
			targets := make([]drivers.BMC, n)
			for i, m := range c.BMCs {
				targets[i] = realTarget(m, proto, 3)
			}
			for b.Loop() {
				var wg sync.WaitGroup
				for _, tg := range targets {
					wg.Add(1)
					go func() {
						defer wg.Done()
						ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
						defer cancel()
						if p, err := d.PowerStatus(ctx, tg); err != nil || p != drivers.PowerOff {
							b.Errorf("%s:%d: %q %v", tg.Address, tg.Port, p, err)
						}
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
