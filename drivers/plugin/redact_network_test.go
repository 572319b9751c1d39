package plugin

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/internal/leakcheck"
)

// quotingNetwork is a plugin's network driver whose errors and failed
// results quote the switch password it was configured with, as a switch
// that echoes a login might.
type quotingNetwork struct {
	*fake.Network
	pw string
}

func (q quotingNetwork) echo() string {
	return "switch said: bad login admin:" + q.pw + " (" + url.QueryEscape(q.pw) + ")"
}

func (q quotingNetwork) Probe(context.Context) (drivers.NetworkInfo, error) {
	return drivers.NetworkInfo{}, drivers.NewError(drivers.Transient, errors.New(q.echo()))
}

func (q quotingNetwork) ConfigurePorts(context.Context, drivers.Node, drivers.Phase) (drivers.Result, error) {
	return drivers.Result{Status: drivers.StatusFailed, Message: q.echo()}, nil
}

func (q quotingNetwork) ReadPorts(context.Context, []drivers.SwitchPort) ([]drivers.PortState, error) {
	return nil, drivers.NewError(drivers.Permanent, errors.New(q.echo()))
}

// TestNetworkPluginHidesSwitchPassword: the switch passwords go to a
// network plugin at Configure; whatever the plugin answers later (an
// error of Probe or ReadPorts, a failed ConfigurePorts' message) reaches
// the orchestrator with every form of them redacted, its class kept.
func TestNetworkPluginHidesSwitchPassword(t *testing.T) {
	cfg := drivers.Config{Settings: map[string]string{}, Secrets: map[string]drivers.Secret{}}
	drivers.SwitchSettings(drivers.SwitchEndpoint{Name: "leaf1", Address: "tcp:127.0.0.1:1", Username: "admin",
		Password: drivers.NewSecret(quotedPassword)}, cfg.Settings, cfg.Secrets)
	raw := dispenseGRPC(t, Drivers{Network: func(c drivers.Config) (drivers.Network, error) {
		return quotingNetwork{fake.NewNetwork(fake.Script{}), c.Secrets["switch.leaf1.password"].Reveal()}, nil
	}}, drivers.KindNetwork, cfg)
	net := raw.(drivers.Network)
	_, perr := net.Probe(t.Context())
	res, cerr := net.ConfigurePorts(t.Context(), drivers.Node{NodeRef: drivers.NodeRef{Name: "n1"}}, drivers.PhaseProduction)
	rd, ok := drivers.ReaderOf(net)
	if !ok {
		t.Fatal("the plugin's driver reads ports, the client is no reader")
	}
	_, rerr := rd.ReadPorts(t.Context(), []drivers.SwitchPort{{Switch: "leaf1", Port: "p1"}})
	if perr == nil || rerr == nil || cerr != nil || res.Status != drivers.StatusFailed {
		t.Fatalf("probe %v, read %v, configure %+v %v: want the plugin's errors and a failed result", perr, rerr, res, cerr)
	}
	if drivers.Classify(perr) != drivers.Transient || drivers.Classify(rerr) != drivers.Permanent {
		t.Errorf("classes lost: probe %v, read %v", drivers.Classify(perr), drivers.Classify(rerr))
	}
	for what, text := range map[string]string{"probe": perr.Error(), "read": rerr.Error(), "configure": res.Message} {
		if leaks := leakcheck.Find(text, quotedPassword, "admin:"+quotedPassword); len(leaks) > 0 {
			t.Errorf("the plugin's %s answer shows the switch password: %v: %s", what, leaks, text)
		}
	}
}
