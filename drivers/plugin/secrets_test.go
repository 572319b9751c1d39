package plugin

import (
	"context"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
)

// capture is a fake server driver that records the BMC password it got.
type capture struct {
	*fake.Server
	got *string
}

func (c capture) IdentifyNode(ctx context.Context, n drivers.Node) (drivers.Machine, drivers.Result, error) {
	if n.Power != nil {
		*c.got = n.Power.Password.Reveal()
	}
	return c.Server.IdentifyNode(ctx, n)
}

// TestNodePowerPasswordCrosses: the node's BMC password reaches the plugin
// through its own field (the JSON of the node carries "[redacted]").
func TestNodePowerPasswordCrosses(t *testing.T) {
	var got string
	raw := dispenseGRPC(t, Drivers{Server: func(drivers.Config) (drivers.Server, error) {
		return capture{Server: fake.NewServer(fake.Script{}), got: &got}, nil
	}}, drivers.KindServer, drivers.Config{})
	n := testNode()
	n.Power = &drivers.PowerSettings{Type: "ipmi", Address: "127.0.0.1", Username: "admin", Password: drivers.NewSecret("bmc-s3cret")}
	if _, _, err := raw.(drivers.Server).IdentifyNode(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	if got != "bmc-s3cret" {
		t.Errorf("plugin got password %q, want the real one", got)
	}
}
