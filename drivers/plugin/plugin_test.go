package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"github.com/rs/zerolog"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/driverstest"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/drivers/network/noop"
	"github.com/slipway-dev/slipway/internal/testtool"
)

// Plugin binaries built once for the whole test binary.
var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func pluginBin(t testing.TB, name string) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "slipway-plugins-")
		if binErr != nil {
			return
		}
		for out, pkg := range map[string]string{
			"slipway-driver-network-noop": "github.com/slipway-dev/slipway/cmd/slipway-driver-network-noop",
			"slipway-driver-any-fake":     "github.com/slipway-dev/slipway/drivers/fake/cmd/slipway-driver-fake",
		} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, out), pkg)
			if b, err := cmd.CombinedOutput(); err != nil {
				binErr = fmt.Errorf("build %s: %v\n%s", pkg, err, b)
				return
			}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, name)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func external(t *testing.T, kind, bin string, settings map[string]string, log zerolog.Logger) *External {
	t.Helper()
	e := NewExternal(kind, "test", pluginBin(t, bin), drivers.Config{Settings: settings}, log)
	t.Cleanup(e.Close)
	return e
}

// dispenseGRPC runs a plugin over go-plugin's in-memory gRPC connection.
func dispenseGRPC(t *testing.T, d Drivers, kind string, cfg drivers.Config) any {
	t.Helper()
	client, _ := goplugin.TestPluginGRPCConn(t, false, d.pluginSet())
	t.Cleanup(func() { client.Close() })
	raw, err := client.Dispense(kind)
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.(configurer).configure(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestConformanceOverGRPCConn(t *testing.T) {
	t.Run("network/noop", func(t *testing.T) {
		driverstest.RunNetwork(t, func(t *testing.T) drivers.Network {
			return dispenseGRPC(t, Drivers{Network: noop.New}, drivers.KindNetwork, drivers.Config{}).(drivers.Network)
		})
	})
	t.Run("oob/fake", func(t *testing.T) {
		driverstest.RunOOB(t, func(t *testing.T) (drivers.OOB, drivers.BMC) {
			return dispenseGRPC(t, Drivers{OOB: fake.OOBFactory}, drivers.KindOOB, drivers.Config{}).(drivers.OOB), testBMC()
		})
	})
	t.Run("server/fake", func(t *testing.T) {
		driverstest.RunServer(t, func(t *testing.T) drivers.Server {
			return dispenseGRPC(t, Drivers{Server: fake.ServerFactory}, drivers.KindServer,
				drivers.Config{Settings: map[string]string{"polls": "2"}}).(drivers.Server)
		}, testNode())
	})
}

func TestConformanceSubprocess(t *testing.T) {
	log := zerolog.Nop()
	t.Run("network/noop", func(t *testing.T) {
		driverstest.RunNetwork(t, func(t *testing.T) drivers.Network {
			return Network{external(t, drivers.KindNetwork, "slipway-driver-network-noop", nil, log)}
		})
	})
	t.Run("oob/fake", func(t *testing.T) {
		driverstest.RunOOB(t, func(t *testing.T) (drivers.OOB, drivers.BMC) {
			return OOB{external(t, drivers.KindOOB, "slipway-driver-any-fake", nil, log)}, testBMC()
		})
	})
	t.Run("server/fake", func(t *testing.T) {
		driverstest.RunServer(t, func(t *testing.T) drivers.Server {
			return Server{external(t, drivers.KindServer, "slipway-driver-any-fake", map[string]string{"polls": "2"}, log)}
		}, testNode())
	})
}

func testBMC() drivers.BMC {
	return drivers.BMC{Node: "n1", Address: "127.0.0.1", Port: 623, Protocol: "lanplus", CipherSuite: 3,
		Privilege: "administrator", Username: "admin", Password: drivers.NewSecret("s3cr3t-pw")}
}

func testNode() drivers.Node {
	return drivers.Node{NodeRef: drivers.NodeRef{Name: "n1"}, Hostname: "n1", Platform: drivers.Platform{Image: "jammy"}}
}

func TestKilledPluginIsTransientAndRestarts(t *testing.T) {
	var logs testtool.SyncBuffer
	e := external(t, drivers.KindNetwork, "slipway-driver-any-fake",
		map[string]string{"failAt": "ConfigurePorts", "block": "true"}, zerolog.New(&logs))
	n := Network{e}
	if _, err := n.Probe(t.Context()); err != nil {
		t.Fatalf("first probe: %v", err)
	}
	pid := e.PID()
	if pid == 0 {
		t.Fatal("plugin not running after a call")
	}
	errc := make(chan error, 1)
	go func() {
		_, err := n.ConfigurePorts(t.Context(), testNode(), drivers.PhaseProvisioning)
		errc <- err
	}()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(logs.String(), "call blocked"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) { // a hang guard: the plugin logs the block as it starts
			t.Fatalf("the call never blocked inside the plugin:\n%s", logs.String())
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if c := drivers.Classify(err); c != drivers.Transient {
			t.Errorf("in-flight call: class %q (%v), want transient", c, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the in-flight call did not return after the plugin died")
	}
	info, err := n.Probe(t.Context())
	if err != nil || !info.Reachable {
		t.Fatalf("call after the crash: %+v, %v", info, err)
	}
	if e.PID() == pid || e.Restarts() != 1 {
		t.Errorf("plugin not restarted: pid %d -> %d, restarts %d", pid, e.PID(), e.Restarts())
	}
}

func TestCancelledContextEndsPluginCallWithinOneSecond(t *testing.T) {
	n := Network{external(t, drivers.KindNetwork, "slipway-driver-any-fake",
		map[string]string{"failAt": "ConfigurePorts", "block": "true"}, zerolog.Nop())}
	if _, err := n.Probe(t.Context()); err != nil { // start the process outside the measurement
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := n.ConfigurePorts(ctx, testNode(), drivers.PhaseProduction)
	took := time.Since(start) - 100*time.Millisecond
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if took > time.Second {
		t.Errorf("the call ended %v after the cancel, want < 1s", took)
	}
	dctx, dcancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer dcancel()
	_, err = n.ConfigurePorts(dctx, testNode(), drivers.PhaseProduction)
	if !errors.Is(err, context.DeadlineExceeded) || drivers.Classify(err) != drivers.Transient {
		t.Errorf("deadline: err = %v (class %q), want a transient deadline error", err, drivers.Classify(err))
	}
}

func TestErrorClassesCrossTheBoundary(t *testing.T) {
	for _, c := range []drivers.Class{drivers.Transient, drivers.Permanent, drivers.NeedsIntervention} {
		t.Run(string(c), func(t *testing.T) {
			n := Network{external(t, drivers.KindNetwork, "slipway-driver-any-fake",
				map[string]string{"failAt": "ConfigurePorts", "failClass": string(c)}, zerolog.Nop())}
			_, err := n.ConfigurePorts(t.Context(), testNode(), drivers.PhaseProduction)
			if got := drivers.Classify(err); got != c {
				t.Errorf("class %q (%v), want %q", got, err, c)
			}
			if _, err := n.Probe(t.Context()); err != nil {
				t.Errorf("a driver error must not break the plugin: %v", err)
			}
		})
	}
}

func TestPluginStderrReachesTheLog(t *testing.T) {
	var buf testtool.SyncBuffer
	log := zerolog.New(&buf).Level(zerolog.DebugLevel)
	n := Network{external(t, drivers.KindNetwork, "slipway-driver-network-noop", map[string]string{"site": "lab"}, log)}
	if _, err := n.Probe(t.Context()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for !strings.Contains(buf.String(), "noop network driver configured") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	out := buf.String()
	for _, want := range []string{`"message":"noop network driver configured"`, `"level":"info"`, `"source":"plugin"`, `"settings":1`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}

func TestSecretsCrossButNeverShow(t *testing.T) {
	var buf testtool.SyncBuffer
	log := zerolog.New(&buf).Level(zerolog.DebugLevel)
	o := OOB{external(t, drivers.KindOOB, "slipway-driver-any-fake", nil, log)}
	bmc := testBMC()
	info, err := o.Probe(t.Context(), bmc)
	if err != nil || !info.Authorized {
		t.Fatalf("good password: %+v, %v", info, err)
	}
	bmc.Password = drivers.NewSecret("wrong")
	if _, err := o.Probe(t.Context(), bmc); err == nil || drivers.Classify(err) != drivers.Permanent || strings.Contains(err.Error(), "wrong") {
		t.Errorf("wrong password: err = %v", err)
	}
	if strings.Contains(buf.String(), "s3cr3t-pw") {
		t.Errorf("the password reached the log")
	}
}

func TestNotAPlugin(t *testing.T) {
	dir := t.TempDir()
	bogus := filepath.Join(dir, "slipway-driver-network-bogus")
	if err := os.WriteFile(bogus, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := NewExternal(drivers.KindNetwork, "bogus", bogus, drivers.Config{}, zerolog.Nop())
	e.startTimeout = 2 * time.Second
	defer e.Close()
	_, err := Network{e}.Probe(t.Context())
	if err == nil || drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), bogus) {
		t.Errorf("err = %v, want a permanent error naming the file", err)
	}
}

// BenchmarkRoundTrip compares one Probe call in-process with the same call
// through a plugin subprocess (gRPC over a Unix socket).
func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	b.Run("in-process", func(b *testing.B) {
		d, _ := noop.New(drivers.Config{})
		for b.Loop() {
			if _, err := d.Probe(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plugin", func(b *testing.B) {
		e := NewExternal(drivers.KindNetwork, "noop", pluginBin(b, "slipway-driver-network-noop"), drivers.Config{}, zerolog.Nop())
		defer e.Close()
		d := Network{e}
		if _, err := d.Probe(ctx); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := d.Probe(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("plugin-configure-ports", func(b *testing.B) {
		e := NewExternal(drivers.KindNetwork, "noop", pluginBin(b, "slipway-driver-network-noop"), drivers.Config{}, zerolog.Nop())
		defer e.Close()
		d := Network{e}
		n := testNode()
		for b.Loop() {
			if _, err := d.ConfigurePorts(ctx, n, drivers.PhaseProduction); err != nil {
				b.Fatal(err)
			}
		}
	})
}
