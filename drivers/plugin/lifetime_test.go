//go:build linux

package plugin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slipway-dev/slipway/drivers"
)

// envTestHost makes the test binary a plugin host (runTestHost) instead
// of running the tests: it starts the plugin at that path through the
// real go-plugin path, prints the plugin's PID and waits to be killed.
const envTestHost = "SLIPWAY_TEST_PLUGIN_HOST"

func init() {
	if path := os.Getenv(envTestHost); path != "" {
		os.Exit(runTestHost(path))
	}
}

func runTestHost(path string) int {
	e := NewExternal(drivers.KindNetwork, "test", path, drivers.Config{}, zerolog.Nop())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.Start(ctx); err != nil {
		fmt.Println("start:", err)
		return 1
	}
	fmt.Println("plugin", e.PID())
	<-ctx.Done() // the test kills this process long before
	e.Close()
	return 2
}

// procState is the process's state letter from /proc/PID/stat, "" when
// there is no such process.
func procState(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2 : i+3]
	}
	return ""
}

// running: the process exists and is not a zombie (an orphan left for an
// init that reaps late has ended all the same).
func running(pid int) bool {
	st := procState(pid)
	return st != "" && st != "Z" && st != "X"
}

// TestPluginDiesWithKilledHost: a host process (this test binary) starts
// the noop plugin through go-plugin and is killed with SIGKILL; the
// plugin, as /proc shows it, has ended within 5 s.
func TestPluginDiesWithKilledHost(t *testing.T) {
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), envTestHost+"="+pluginBin(t, "slipway-driver-network-noop"))
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = host.Process.Kill(); _ = host.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	var pid int
	if _, serr := fmt.Sscanf(line, "plugin %d", &pid); err != nil || serr != nil || pid <= 0 {
		t.Fatalf("the host said %q (%v)", line, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // only when the test failed
	if !running(pid) {
		t.Fatalf("plugin pid %d not running before the kill", pid)
	}
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait() // killed: the error says so
	killed := time.Now()
	for running(pid) && time.Since(killed) < 5*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	if running(pid) {
		t.Fatalf("plugin pid %d still runs (state %s) 5 s after its host was killed", pid, procState(pid))
	}
	t.Logf("plugin ended %s after its host's SIGKILL", time.Since(killed).Round(time.Millisecond))
}

// TestPluginStartedForADeadHostExits: a plugin whose parent is not the
// host it was started for (the host died before the plugin asked for the
// parent-death signal, and it was re-parented) exits at once, code 3.
func TestPluginStartedForADeadHostExits(t *testing.T) {
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	p := exec.CommandContext(ctx, pluginBin(t, "slipway-driver-network-noop"))
	p.Env = append(os.Environ(), Handshake.MagicCookieKey+"="+Handshake.MagicCookieValue, envHostPID+"="+strconv.Itoa(gone.Process.Pid))
	start := time.Now()
	err := p.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("plugin for a dead host: %v after %s, want exit code 3 at once", err, time.Since(start).Round(time.Millisecond))
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the plugin took %s to exit", took)
	}
}

// TestPluginOutlivesTheThreadThatStartedIt: the parent-death signal is
// tied to the thread that forks the plugin; a caller whose goroutine is
// locked to its thread and returns (Go then ends the thread) must not
// take a healthy host's plugin with it.
func TestPluginOutlivesTheThreadThatStartedIt(t *testing.T) {
	e := external(t, drivers.KindNetwork, "slipway-driver-network-noop", nil, zerolog.Nop())
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread ends with the goroutine
		_, err := e.Start(t.Context())
		errc <- err
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	pid := e.PID()
	time.Sleep(time.Second)
	if !running(pid) {
		t.Fatalf("plugin pid %d ended with the thread that started it", pid)
	}
	if _, err := (Network{e}).Probe(t.Context()); err != nil || e.Restarts() != 0 || e.PID() != pid {
		t.Fatalf("probe after the starting thread ended: %v, restarts %d, pid %d -> %d", err, e.Restarts(), pid, e.PID())
	}
}

// spawnerThreads counts the goroutines that hold a plugin start thread.
func spawnerThreads() int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), "(*spawner).do.func")
}

// TestHandshakeEndsItsStartThread: a listing's handshake, whether the
// plugin starts or not, leaves no start thread behind; Close ends the
// thread of a started plugin.
func TestHandshakeEndsItsStartThread(t *testing.T) {
	bogus := filepath.Join(t.TempDir(), "slipway-driver-network-bogus")
	if err := os.WriteFile(bogus, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{pluginBin(t, "slipway-driver-network-noop"), bogus} {
		e := NewExternal(drivers.KindNetwork, "test", path, drivers.Config{}, zerolog.Nop())
		e.startTimeout = 2 * time.Second
		_, _ = e.Handshake() // the bogus one fails: that path is under test too
	}
	e := external(t, drivers.KindNetwork, "slipway-driver-network-noop", nil, zerolog.Nop())
	if _, err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := spawnerThreads(); n != 1 {
		t.Errorf("%d start threads while one plugin runs, want 1", n)
	}
	e.Close()
	deadline := time.Now().Add(2 * time.Second)
	for spawnerThreads() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := spawnerThreads(); n != 0 {
		t.Errorf("%d start threads left after the handshakes and Close", n)
	}
}
