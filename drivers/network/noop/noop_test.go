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
	r, err := d.ConfigurePorts(t.Context(), drivers.Node{NodeRef: drivers.NodeRef{Name: "n1"},
		Interfaces: []drivers.Interface{{Name: "bond0"}, {Name: "pxe"}}}, drivers.PhaseProduction)
	if err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("%+v, %v", r, err)
	}
	for _, want := range []string{"noop", "production", "n1", "bond0, pxe", "unconfigured"} {
		if !strings.Contains(r.Message, want) {
			t.Errorf("message %q lacks %q", r.Message, want)
		}
	}
}
