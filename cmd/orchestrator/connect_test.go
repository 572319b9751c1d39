package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/server"
)

// TestConnectStaleSocket: a socket file beside the state database that
// nobody answers on (a serve killed with SIGKILL) does not stop the CLI:
// it runs the engine and the API in process, and leaves no temporary
// directory behind.
func TestConnectStaleSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "swc")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	state := filepath.Join(dir, "s.db")
	if code, _, errs := cli(t, "apply", "--state", state, exampleSite); code != 0 {
		t.Fatalf("apply: %s", errs)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: server.LocalSocket(state), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "slipway-cli-*"))
	code, out, errs := cli(t, "designs", "--state", state)
	if code != 0 || !strings.Contains(out, "REVISION") {
		t.Fatalf("designs beside a stale socket: exit %d: %s %s", code, out, errs)
	}
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "slipway-cli-*"))
	if len(after) > len(before) {
		t.Errorf("the in-process API left its directory: %v", after)
	}
}

// TestOutputFormats: every record-printing command takes -o text, table,
// json and yaml through the one formatter, and refuses anything else.
func TestOutputFormats(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s.db")
	if code, _, errs := cli(t, "apply", "--state", state, exampleSite); code != 0 {
		t.Fatalf("apply: %s", errs)
	}
	for _, cmd := range [][]string{{"designs"}, {"tasks"}, {"nodes"}, {"events"}, {"drift"}, {"audit"}} {
		for _, o := range []string{"text", "table", "json", "yaml"} {
			args := append(append([]string{}, cmd...), "--state", state, "-o", o)
			if code, _, errs := cli(t, args...); code != 0 {
				t.Errorf("%v: exit %d: %s", args, code, errs)
			}
		}
		args := append(append([]string{}, cmd...), "--state", state, "-o", "xml")
		if code, _, errs := cli(t, args...); code != exitUsage || !strings.Contains(errs, "use text (or table), json or yaml") {
			t.Errorf("%v: exit %d: %s", args, code, errs)
		}
	}
	_, out, _ := cli(t, "nodes", "--state", state, "-o", "json")
	if !strings.HasPrefix(strings.TrimSpace(out), "[") {
		t.Errorf("nodes -o json is not a list: %.200s", out)
	}
	// The API's names (snake_case), where designs -o json printed the
	// store's Go field names (ID, GitCommit).
	if _, out, _ = cli(t, "designs", "--state", state, "-o", "json"); !strings.Contains(out, `"id":`) || strings.Contains(out, `"ID"`) {
		t.Errorf("designs -o json: %.300s", out)
	}
}

// TestLocalRequester: a task made through the in-process API records the
// OS user as the CLI always did (cli:<user>), not an API token's name.
func TestLocalRequester(t *testing.T) {
	t.Setenv("SLIPWAY_SECRET_MAAS_API_KEY", "consumer:token:secret") // the engine's drivers; no MAAS call is made
	state := filepath.Join(t.TempDir(), "s.db")
	if code, _, errs := cli(t, "apply", "--state", state, exampleSite); code != 0 {
		t.Fatalf("apply: %s", errs)
	}
	node := designtest.Example(t).NodeNames()[0]
	if code, _, errs := cli(t, "mark-manual-intervention", node, "--state", state, "--reason", "r"); code != 0 {
		t.Fatalf("mark-manual-intervention: %s", errs)
	}
	_, out, _ := cli(t, "events", "--state", state, "--node", node, "-o", "json")
	if !strings.Contains(out, server.LocalRequester()) || strings.Contains(out, "api:cli:") {
		t.Errorf("the node verb's event does not name %s as before: %.400s", server.LocalRequester(), out)
	}
}
