package registry

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/network/noop"
	"github.com/slipway-dev/slipway/drivers/plugin"
)

func buildNoop(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", path, "github.com/slipway-dev/slipway/cmd/slipway-driver-network-noop")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build plugin: %v\n%s", err, out)
	}
}

func TestRegistry(t *testing.T) {
	dir := t.TempDir()
	buildNoop(t, filepath.Join(dir, "slipway-driver-network-ext"))
	buildNoop(t, filepath.Join(dir, "slipway-driver-network-noop")) // shadowed by the built-in
	for name, mode := range map[string]os.FileMode{
		"slipway-driver-network-notexec": 0o644, // not executable
		"slipway-driver-switch-x":        0o755, // unknown kind
		"README":                         0o644, // not a plugin at all
		"slipway-driver-oob-broken":      0o755, // executable but not a plugin
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nexit 3\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New(Builtins{Network: map[string]NetworkFactory{noop.Name: noop.New}}, Options{PluginDir: dir, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	got := r.List(t.Context(), true)
	for i := range got {
		if got[i].Error != "" {
			got[i].Error = firstWords(got[i].Error)
		}
	}
	want := []Info{
		{Kind: "network", Name: "ext", Source: filepath.Join(dir, "slipway-driver-network-ext"), Protocol: plugin.ProtocolVersion},
		{Kind: "network", Name: "noop", Source: "builtin", Protocol: plugin.ProtocolVersion},
		{Kind: "network", Name: "noop", Source: filepath.Join(dir, "slipway-driver-network-noop"), Error: "ignored: a built-in"},
		{Kind: "oob", Name: "broken", Source: filepath.Join(dir, "slipway-driver-oob-broken"), Error: "permanent: start driver"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("List (-want +got):\n%s", d)
	}

	n, err := r.Network("ext", drivers.Config{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := n.ConfigurePorts(t.Context(), drivers.Node{NodeRef: drivers.NodeRef{Name: "n1"}}, drivers.PhaseProduction)
	if err != nil || res.Status != drivers.StatusDone || !strings.Contains(res.Message, "noop") {
		t.Errorf("external noop: %+v, %v", res, err)
	}
	if _, ok := n.(plugin.Network); !ok {
		t.Errorf("ext is %T, want an external plugin.Network", n)
	}
	b, err := r.Network("noop", drivers.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b.(noop.Driver); !ok {
		t.Errorf("noop is %T, want the built-in", b)
	}

	_, err = r.Server("maas", drivers.Config{})
	if err == nil || drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "slipway-driver-server-maas") {
		t.Errorf("unknown driver: %v", err)
	}
	r.Close()
	if _, err := r.Network("ext", drivers.Config{}); err == nil {
		t.Errorf("a closed registry still hands out plugins")
	}
}

func TestNoPluginDir(t *testing.T) {
	r, err := New(Builtins{}, Options{PluginDir: filepath.Join(t.TempDir(), "missing"), Log: zerolog.Nop()})
	if err != nil {
		t.Fatalf("a missing plugin directory is no error: %v", err)
	}
	if l := r.List(t.Context(), true); len(l) != 0 {
		t.Errorf("List = %v, want empty", l)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Builtins{}, Options{PluginDir: file}); err == nil {
		t.Errorf("a plugin directory that is a file must be an error")
	}
}

func firstWords(s string) string {
	f := strings.Fields(s)
	if len(f) > 3 {
		f = f[:3]
	}
	return strings.Join(f, " ")
}
