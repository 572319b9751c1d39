package noop_test

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/drivers/network/noop"
)

func TestConformance(t *testing.T) {
	driverstest.RunNetwork(t, func(t *testing.T) drivers.Network {
		d, err := noop.New(drivers.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
}

func TestSaysWhatItLeftAlone(t *testing.T) {
	d, _ := noop.New(drivers.Config{})
	r, err := d.ConfigurePorts(t.Context(), driverstest.NetworkNode(), drivers.PhaseProduction)
	if err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("%+v, %v", r, err)
	}
	for _, want := range []string{"noop", "production", "conformance-node", "conformance-sw:p1, conformance-sw:p2, conformance-sw:p3", "unconfigured"} {
		if !strings.Contains(r.Message, want) {
			t.Errorf("message %q lacks %q", r.Message, want)
		}
	}
}
