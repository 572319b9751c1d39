package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestClientDoesNotLinkTheServer: the API client is what the CLI and other
// programs import to talk to a server, so it must not pull in the server
// (package api), the engine (package orchestrator, its drivers and
// plugins), the server's HTTP framework, its metrics library or the
// embedded store. The record types it shares with the engine live in the
// leaf package orchestrator/record.
func TestClientDoesNotLinkTheServer(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command on PATH to list the package's dependencies: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || deps[len(deps)-1] != "github.com/slipway-dev/slipway/api/client" {
		t.Fatalf("go list -deps did not end with the client itself: %q", deps)
	}
	linksServer := func(p string) bool {
		return p == "github.com/slipway-dev/slipway/api" ||
			p == "github.com/slipway-dev/slipway/orchestrator" ||
			strings.HasPrefix(p, "github.com/slipway-dev/slipway/drivers/") ||
			strings.HasPrefix(p, "github.com/hashicorp/go-plugin") ||
			strings.HasPrefix(p, "github.com/labstack/echo") ||
			strings.HasPrefix(p, "github.com/prometheus/") ||
			strings.HasPrefix(p, "go.etcd.io/bbolt")
	}
	for _, p := range deps {
		if linksServer(p) {
			t.Errorf("api/client depends on %s (through what it imports): a client of the API must not link the server", p)
		}
	}
}
