package main

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
)

// TestAcceptHardwareCommand: accept-hardware through the API is an
// operator's; a node whose as-built check found no difference has
// nothing to accept (exit 2 with the server's 409 saying so).
func TestAcceptHardwareCommand(t *testing.T) {
	t.Parallel()
	s := remoteServer(t)
	as := func(tok string, args ...string) (int, string, string) {
		t.Helper()
		return cli(t, append([]string{"--server", s.URL, "--token", tok}, args...)...)
	}
	if code, out, errs := as(s.Token[api.RoleOperator], "prepare-site"); code != 0 {
		t.Fatalf("prepare-site: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := as(s.Token[api.RoleOperator], "deploy", "--node", s.Node)
	if code != 0 || !strings.Contains(out, "as-built") {
		t.Fatalf("deploy (its progress names the as-built stage): exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := as(s.Token[api.RoleViewer], "accept-hardware", s.Node); code != exitUsage || !strings.Contains(errs, "HTTP 403") {
		t.Errorf("viewer: exit %d: %s", code, errs)
	}
	code, _, errs = as(s.Token[api.RoleOperator], "accept-hardware", s.Node)
	if code != exitUsage || !strings.Contains(errs, "HTTP 409") || !strings.Contains(errs, "found no difference; nothing to accept") {
		t.Errorf("accept-hardware of a node as built: exit %d: %s", code, errs)
	}
}
