package introspection

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
)

// TestNetworkConfigRoCE: a node's RoCE address (its site profile enables
// RoCE) is on its interface in network-config, beside the interface's own
// address, with its /31 prefix; netplan generate accepts the document.
func TestNetworkConfigRoCE(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.RoCE = func(_ context.Context, _ *design.Design, n *design.Node) ([]driverspec.RoCEAddress, error) {
			if n.Metadata.Name != "r01-cmp01" {
				return nil, nil
			}
			return []driverspec.RoCEAddress{{Interface: "bond0", CIDR: "10.250.0.1/31"}}, nil
		}
	})
	tok := e.issue("r01-cmp01", "5")
	e.inventory("r01-cmp01", cmp01NICs)
	var nc struct {
		Network struct {
			Bonds map[string]struct {
				Addresses []string `yaml:"addresses"`
			}
		}
	}
	raw := getYAML(t, e, "/v1/nocloud/"+tok+"/network-config", &nc)
	if got := nc.Network.Bonds["bond0"].Addresses; !slices.Equal(got, []string{"10.12.0.101/24", "10.250.0.1/31"}) {
		t.Fatalf("bond0 addresses %v:\n%s", got, raw)
	}
	netplan := testtool.Need(t, "netplan", "netplan.io")
	root := t.TempDir()
	np := filepath.Join(root, "etc", "netplan", "50-slipway.yaml")
	if err := os.MkdirAll(filepath.Dir(np), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(np, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), netplan, "generate", "--root-dir", root).CombinedOutput(); err != nil {
		t.Fatalf("netplan generate: %v\n%s\n%s", err, out, raw)
	}
	nets, _ := filepath.Glob(filepath.Join(root, "run", "systemd", "network", "*bond0.network"))
	if len(nets) != 1 {
		t.Fatalf("no bond0 .network: %v", nets)
	}
	b, _ := os.ReadFile(nets[0])
	if !slices.Contains(strings.Split(string(b), "\n"), "Address=10.250.0.1/31") {
		t.Errorf("bond0's networkd file lacks the RoCE address:\n%s", b)
	}
}
