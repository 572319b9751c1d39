package ipmi

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/ipmisim"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/sim/bmc"
)

// scanArgv reads the command line of every process in /proc and returns
// those that contain secret, as "pid: argv".
func scanArgv(secret []byte) (hits []string, scanned int) {
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process ended meanwhile
		}
		scanned++
		if bytes.Contains(b, secret) {
			hits = append(hits, filepath.Base(filepath.Dir(p))+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return hits, scanned
}

// watchArgv scans all processes' argv for secret until stop is closed and
// returns what it found and how many scans it made.
func watchArgv(secret string, stop <-chan struct{}) (found func() ([]string, int)) {
	var (
		mu    sync.Mutex
		hits  []string
		scans atomic.Int32
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			h, _ := scanArgv([]byte(secret))
			scans.Add(1)
			if len(h) > 0 {
				mu.Lock()
				hits = append(hits, h...)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	return func() ([]string, int) {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return hits, int(scans.Load())
	}
}

// TestScannerSeesOtherProcesses is the positive control of the argv
// checks: a child process with a canary on its command line is found.
func TestScannerSeesOtherProcesses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("procfs")
	}
	const canary = "argv-canary-6b1f0e"  // not a password anywhere
	sh := testtool.Need(t, "sh", "dash") // fails instead when CI is set
	cmd := exec.Command(sh, "-c", "sleep 5", "sh", canary)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", sh, err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Second)
	for {
		hits, n := scanArgv([]byte(canary))
		if len(hits) > 0 {
			t.Logf("found %v among %d processes", hits, n)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the canary on a child's command line was not found among %d processes", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPasswordNeverInArgv runs every operation over lanplus and lan, on
// sim/bmc and (when available) ipmi_sim BMCs, while another goroutine
// scans /proc/*/cmdline of all processes for the password.
func TestPasswordNeverInArgv(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("procfs")
	}
	const password = "argv-pw-Kd93x" // shared by the sim/bmc and ipmi_sim BMCs here
	var targets []drivers.BMC
	for range 2 {
		b, _ := startSim(t, bmc.Options{Username: simUser, Password: password})
		for _, proto := range []string{"lanplus", "lan"} {
			tg := simTarget(b, proto, 3)
			tg.Password = drivers.NewSecret(password)
			targets = append(targets, tg)
		}
	}
	if err := ipmisim.Available(); err == nil || os.Getenv("CI") != "" {
		c := startIPMISimWith(t, 2, password)
		for i, b := range c.BMCs {
			targets = append(targets, realTarget(b, []string{"lanplus", "lan"}[i], 3))
		}
	} else {
		t.Logf("ipmi_sim part skipped: %v", err)
	}

	stop := make(chan struct{})
	found := watchArgv(password, stop)
	d := newTestDriver(t, nil)
	var wg sync.WaitGroup
	for _, tg := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				calls := []func() error{
					func() error { _, err := d.Probe(ctx, tg); return err },
					func() error { _, err := d.PowerStatus(ctx, tg); return err },
					func() error { _, err := d.PowerOn(ctx, tg); return err },
					func() error { _, err := d.PowerCycle(ctx, tg); return err },
					func() error {
						r, err := d.SetBootDevice(ctx, tg, drivers.BootDevice{Device: "pxe", Persistent: true, EFI: true})
						if bootSet(r, err) {
							return nil // ipmi_sim keeps no boot flags: reported, not a failure
						}
						return err
					},
					func() error { _, err := d.PowerOff(ctx, tg); return err },
				}
				for _, call := range calls {
					if err := call(); err != nil {
						t.Errorf("%s:%d %s: %v", tg.Address, tg.Port, tg.Protocol, err)
					}
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	close(stop)
	hits, scans := found()
	if len(hits) > 0 {
		t.Fatalf("the password appeared on a command line: %q", hits)
	}
	if scans < 2 {
		t.Errorf("only %d scans of /proc while the calls ran", scans)
	}
	t.Logf("%d targets, %d scans of every process's argv: password never seen", len(targets), scans)
}
