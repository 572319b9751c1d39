//go:build linux

package main

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/sim/lab"
)

// TestPluginDiesWithServe: the built `serve` runs a network driver as an
// external plugin (the noop example installed as
// slipway-driver-network-ext); after a SIGKILL of serve the plugin process
// is gone within 5 s (counted from /proc, not from serve's bookkeeping),
// and a new serve on the same state starts and runs the plugin again,
// beside a plugin process of the same executable left running.
func TestPluginDiesWithServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and runs serve twice: skipped with -short")
	}
	t.Parallel()
	lb, err := lab.Start(t.Context(), lab.Config{Design: designtest.Example(t), TimeScale: 0.001, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	dir, state, cfg := pluginLabState(t, lb.Info())
	bin := buildBinary(t, dir)
	for run := 1; run <= 2; run++ {
		if run == 2 {
			// A plugin still running from elsewhere (an older build's
			// orphan) holds nothing the next serve needs.
			stale := exec.Command(filepath.Join(dir, "slipway-driver-network-ext"))
			stale.Env = append(os.Environ(), "SLIPWAY_DRIVER_PLUGIN=7d0e3c1b-slipway-driver", "SLIPWAY_PLUGIN_HOST_PID="+strconv.Itoa(os.Getpid()))
			if err := stale.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = stale.Process.Kill(); _ = stale.Wait() })
			defer func() {
				if !alive(stale.Process.Pid) {
					t.Errorf("the stand-in stale plugin (pid %d) ended during the run", stale.Process.Pid)
				}
			}()
		}
		serve, plug := startServeWithPlugin(t, bin, cfg, state, dir, append(os.Environ(), "SLIPWAY_TEST_MAAS_KEY="+lb.Info().APIKey))
		if err := serve.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = serve.Wait() // killed: the exit status says so
		killed := time.Now()
		for alive(plug) && time.Since(killed) < 5*time.Second {
			time.Sleep(20 * time.Millisecond)
		}
		if alive(plug) {
			t.Fatalf("run %d: plugin pid %d still runs %s after serve (pid %d) was killed; its parent is now %d",
				run, plug, time.Since(killed).Round(time.Millisecond), serve.Process.Pid, parentOf(plug))
		}
		t.Logf("run %d: plugin pid %d gone %s after the SIGKILL of serve", run, plug, time.Since(killed).Round(time.Millisecond))
	}
}

// pluginLabState applies the example design with a Site layer that
// points at the lab's MAAS (its key from env:SLIPWAY_TEST_MAAS_KEY, which
// the test puts in serve's environment) and names the network driver
// "ext", installed as a plugin in dir.
func pluginLabState(t *testing.T, info lab.Info) (dir, state, cfg string) {
	t.Helper()
	dir = t.TempDir()
	plug := filepath.Join(dir, "slipway-driver-network-ext")
	if out, err := exec.Command("go", "build", "-o", plug, "github.com/slipway-dev/slipway/cmd/slipway-driver-network-noop").CombinedOutput(); err != nil {
		t.Fatalf("build plugin: %v\n%s", err, out)
	}
	layer := filepath.Join(dir, "layer")
	if err := os.MkdirAll(layer, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "apiVersion: slipway/v1\nkind: Site\nmetadata: {name: lab}\nspec:\n  maas: {url: \"" + info.MAASURL +
		"\", apiKey: \"env:SLIPWAY_TEST_MAAS_KEY\"}\n  drivers: {network: ext}\n"
	if err := os.WriteFile(filepath.Join(layer, "site.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	state = filepath.Join(dir, "state", "slipway.db")
	if code, out, errs := cli(t, "apply", "--state", state, exampleSite, layer); code != 0 {
		t.Fatalf("apply: %d %s %s", code, out, errs)
	}
	cfg = filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte("secretRefs: {env: [SLIPWAY_TEST_MAAS_KEY]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, state, cfg
}

// startServeWithPlugin starts the built serve, asks /readyz (which probes
// the network driver, so the plugin starts) and returns serve's process
// and the plugin's PID, found among serve's children in /proc. The
// control API's port is picked free and then given to serve, so another
// process may take it in between: serve then fails to bind, and is
// started again on another port (at most 3 times).
func startServeWithPlugin(t *testing.T, bin, cfg, state, dir string, env []string) (*exec.Cmd, int) {
	t.Helper()
	for try := 1; ; try++ {
		cmd, addr, out, ok := startPluginServe(t, bin, cfg, state, dir, env)
		if ok {
			plugs := childrenNamed(cmd.Process.Pid, "slipway-driver-")
			if len(plugs) != 1 {
				t.Fatalf("serve (pid %d) runs %d plugin processes %v, want 1", cmd.Process.Pid, len(plugs), plugs)
			}
			t.Cleanup(func() { _ = syscall.Kill(plugs[0], syscall.SIGKILL) }) // only if the test failed and left it
			return cmd, plugs[0]
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // its output is complete once it has ended
		if try == 3 || !strings.Contains(out.String(), "address already in use") {
			t.Fatalf("serve (pid %d) on %s not ready within 20 s: %s", cmd.Process.Pid, addr, out.String())
		}
		t.Logf("serve could not bind %s, taken since it was picked: again on another port", addr)
	}
}

// startPluginServe starts serve on a free port, env its environment, and
// waits for its /readyz.
func startPluginServe(t *testing.T, bin, cfg, state, dir string, env []string) (*exec.Cmd, string, *strings.Builder, bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	out := &strings.Builder{}
	cmd := exec.Command(bin, "serve", "--config", cfg, "--state", state, "--listen", addr,
		"--introspection-listen", "127.0.0.1:0", "--plugin-dir", dir)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cmd, addr, out, true
			}
		}
	}
	return cmd, addr, out, false
}

// procStat reads a process's state and parent PID from /proc/PID/stat.
func procStat(pid int) (state string, ppid int, comm string, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, "", false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return "", 0, "", false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 2 {
		return "", 0, "", false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0], ppid, s[open+1 : end], true
}

// alive: the process exists and is not a zombie (an orphan reaped late by
// an init that does not reap counts as gone).
func alive(pid int) bool {
	st, _, _, ok := procStat(pid)
	return ok && st != "Z" && st != "X"
}

func parentOf(pid int) int {
	_, ppid, _, _ := procStat(pid)
	return ppid
}

// childrenNamed lists the live children of parent whose command name
// starts with prefix (the kernel keeps the first 15 bytes of it).
func childrenNamed(parent int, prefix string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, comm, ok := procStat(pid); ok && ppid == parent && alive(pid) && strings.HasPrefix(comm, prefix[:min(len(prefix), 15)]) {
			out = append(out, pid)
		}
	}
	return out
}
