package drivermetrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/drivermetrics"
)

// The measured server driver leaves a Site's changes reachable
// (drivers.ChangesAt), each call measured as method Changes.
func TestWrappedServerKeepsChanges(t *testing.T) {
	reg := prometheus.NewRegistry()
	f := fake.NewServer(fake.Script{})
	d := drivermetrics.New(reg).Wrap(orchestrator.Drivers{Server: f})
	ch, ok := drivers.ChangesAt(t.Context(), d.Server, "site-1")
	if !ok {
		t.Fatal("no changes reader behind the measured driver")
	}
	if _, err := ch.Changes(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Calls()); n != 1 || f.Calls()[0].Method != "Changes" {
		t.Errorf("the driver behind saw %+v, want one Changes call", f.Calls())
	}
	if n := testutil.CollectAndCount(reg, "slipway_driver_call_duration_seconds"); n != 1 {
		t.Errorf("%d latency series, want the one of Changes", n)
	}
}
