package drivermetrics_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/internal/drivermetrics"
	"github.com/slipway-dev/slipway/orchestrator"
)

func TestCallsAreMeasured(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := drivermetrics.New(reg)
	srv := fake.NewServer(fake.Script{FailAt: "Commission", FailClass: drivers.Permanent})
	d := m.Wrap(orchestrator.Drivers{Server: srv})
	if _, err := d.Server.ProbeSite(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Server.Commission(t.Context(), drivers.NodeRef{Name: "n1", MachineID: "m1"}); err == nil {
		t.Fatal("the scripted failure did not happen")
	}
	want := `
# HELP slipway_driver_errors_total Driver call errors by driver kind, method and error class.
# TYPE slipway_driver_errors_total counter
slipway_driver_errors_total{class="permanent",kind="server",method="Commission"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "slipway_driver_errors_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "slipway_driver_call_duration_seconds"); n != 2 {
		t.Fatalf("%d latency series, want 2 (ProbeSite, Commission)", n)
	}
}
