package introspection_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/introspection"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// deployExample deploys the example site into the lab and returns the env
// and the names of its nodes.
func deployExample(t *testing.T) (*labrun.Env, []string) {
	t.Helper()
	d := designtest.Example(t)
	env, err := labrun.Start(t.Context(), labrun.Options{Design: d, Store: memory.New(), TimeScale: 0.001, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	e, err := env.Engine(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for _, a := range []record.Action{record.ActionPrepareSite, record.ActionDeployNodes} {
		task, err := e.Submit(ctx, record.Request{Action: a, Revision: env.Revision, Requester: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if task, err = e.Wait(ctx, task.ID); err != nil || task.Status != record.TaskSucceeded {
			t.Fatalf("%s: %s %s %v", a, task.Status, task.Message, err)
		}
	}
	return env, d.NodeNames()
}

// The tools that consume the seed accept what every node of the example
// site is served after a deployment in the lab: netplan generate (netplan
// 0.106) the network-config, and cloud-init's schema check (22.4) the
// user-data and vendor-data. The parts come from BootData, the code path
// of the seed routes and of `orchestrator bootdata`.
func TestSeedPassesNetplanAndCloudInit(t *testing.T) {
	netplan := testtool.Need(t, "netplan", "netplan.io")
	cloudInit := testtool.Need(t, "cloud-init", "cloud-init")
	env, nodes := deployExample(t)
	for _, node := range nodes {
		t.Run(node, func(t *testing.T) {
			root := t.TempDir()
			np := filepath.Join(root, "etc", "netplan", "50-slipway.yaml")
			write(t, np, part(t, env, node, introspection.PartNetworkConfig), 0o600)
			out, err := exec.CommandContext(t.Context(), netplan, "generate", "--root-dir", root).CombinedOutput()
			if err != nil {
				t.Fatalf("netplan generate: %v\n%s\n%s", err, out, part(t, env, node, introspection.PartNetworkConfig))
			}
			checkGenerated(t, root)
			for _, p := range []string{introspection.PartUserData, introspection.PartVendorData} {
				f := filepath.Join(root, p)
				write(t, f, part(t, env, node, p), 0o600)
				out, err := exec.CommandContext(t.Context(), cloudInit, "schema", "--config-file", f).CombinedOutput()
				if err != nil || !strings.Contains(string(out), "Valid cloud-config") {
					t.Errorf("cloud-init schema %s: %v\n%s", p, err, out)
				}
			}
		})
	}
}

// checkGenerated checks that netplan wrote systemd-networkd files that
// match the NICs by MAC and name them (.link files with MACAddress= and
// Name=).
func checkGenerated(t *testing.T, root string) {
	t.Helper()
	links, _ := filepath.Glob(filepath.Join(root, "run", "systemd", "network", "*.link"))
	if len(links) == 0 {
		t.Fatal("netplan generated no .link files: NICs are not renamed")
	}
	for _, l := range links {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "MACAddress=") || !strings.Contains(string(b), "Name=") {
			t.Errorf("%s matches no MAC or sets no name:\n%s", filepath.Base(l), b)
		}
	}
}

func part(t *testing.T, env *labrun.Env, node, name string) []byte {
	t.Helper()
	b, _, err := env.Introspection.BootData(t.Context(), node, name)
	if err != nil {
		t.Fatalf("%s of %s: %v", name, node, err)
	}
	return b
}

func write(t *testing.T, path string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, mode); err != nil {
		t.Fatal(err)
	}
}
