// Package ovstest starts the Open vSwitch harness (sim/ovs) for a test
// and removes it when the test ends.
package ovstest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/sim/ovs"
)

// Require skips the test when the harness cannot run here, or fails it
// when the environment variable CI is non-empty (CI installs Open
// vSwitch, iproute2 and iputils-ping and runs as root).
func Require(t testing.TB) {
	t.Helper()
	err := ovs.Available()
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%v (CI is set: the harness must run, not skip)", err)
	}
	t.Skipf("skipping: %v", err)
}

// Start starts Open vSwitch in a new short temporary directory (a unix
// socket's path is bounded) and closes it, deleting its namespaces,
// veth pairs and files, when the test ends.
func Start(t testing.TB) *ovs.Switchd {
	t.Helper()
	Require(t)
	dir, err := os.MkdirTemp("", "ovs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := ovs.Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing the open vswitch harness: %v", err)
		}
	})
	return s
}
