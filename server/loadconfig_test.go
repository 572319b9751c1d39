package server

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestLoadConfigFlags: a flag given on the command line wins over the
// file's key; a flag left at its default fills only a key the file leaves
// out (serve's rule since the first --config).
func TestLoadConfigFlags(t *testing.T) {
	p := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(p, []byte("state: /srv/file.db\nlisten: 127.0.0.1:9000\nleaseTTL: 20\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(p,
		Flag{Key: "state", Value: "/default.db"},                  // not given: the file's
		Flag{Key: "listen", Value: "127.0.0.1:9100", Given: true}, // given: the flag's
		Flag{Key: "introspectionListen", Value: ":8701"},          // not in the file: the flag's default
		Flag{Key: "leaseTTL", Value: "0"})                         // not given: the file's 20
	if err != nil {
		t.Fatal(err)
	}
	if c.State != "/srv/file.db" || c.Listen != "127.0.0.1:9100" || c.IntrospectionListen != ":8701" || c.LeaseTTL != 20 {
		t.Errorf("state %q listen %q introspectionListen %q leaseTTL %d", c.State, c.Listen, c.IntrospectionListen, c.LeaseTTL)
	}
	if c, err = LoadConfig(p, Flag{Key: "leaseTTL", Value: "5", Given: true}); err != nil || c.LeaseTTL != 5 {
		t.Errorf("--lease-ttl 5 given: %d %v", c.LeaseTTL, err)
	}
	if _, err := LoadConfig(p, Flag{Key: "nosuch", Value: "x", Given: true}); err == nil || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Errorf("a flag for no key: %v", err)
	}
}

// TestValidateNamesTheKey: LoadConfig refuses each bad key, and the error
// names it.
func TestValidateNamesTheKey(t *testing.T) {
	dir := t.TempDir()
	for body, key := range map[string]string{
		"connsPerSource: -2\n":                  "connsPerSource",
		"introspectionConnsPerSource: -3\n":     "introspectionConnsPerSource",
		"readyCheckTTL: 1ms\n":                  "readyCheckTTL",
		"eventStreamRecheck: soon\n":            "eventStreamRecheck",
		"auditRefusalsTotal: -1\n":              "auditRefusalsTotal",
		"designParses: -1\n":                    "designParses",
		"secretRefs: {env: [\"1X\"]}\n":         "secretRefs.env",
		"secretRefs: {files: [relative]}\n":     "secretRefs.files",
		"leaseTTL: 1\n":                         "leaseTTL",
		"tlsCert: /c.pem\n":                     "tlsKey",
		"store: http://127.0.0.1:2379\n":        "config store",
		"etcdMaxTxnOps: 5\n":                    "etcdMaxTxnOps",
		"bmcEndpoints: {n1: nohost}\n":          "bmcEndpoints.n1",
		"retryBase: often\n":                    "retryBase",
		"timeScale: 2\n":                        "timeScale",
		"erase: wipe\n":                         "config erase",
		"timeouts: {deploy: 10s}\n":             "timeouts.deploy",
		"memoryLimit: lots\n":                   "line 1",
		"nosuchKey: 1\n":                        "nosuchKey",
		"commissionRetries: 11\n":               "commissionRetries",
		"pollInterval: -1s\n":                   "pollInterval",
		"eventStreamMaxLifetime: forever\n":     "eventStreamMaxLifetime",
		"auditRefusalsPerAddress: -1\n":         "auditRefusalsPerAddress",
		"designMaxFiles: -1\n":                  "designMaxFiles",
		"etcdMaxRequestBytes: 1000\n":           "etcdMaxRequestBytes",
		"bootstrapDeadline: whenever\n":         "bootstrapDeadline",
		"sweepInterval: 5 minutes\n":            "sweepInterval",
		"retryMax: -2m\n":                       "retryMax",
		"timeouts: {deploi: 1h}\n":              "timeouts.deploi",
		"bmcEndpoints: {n1/redfish: h:99999}\n": "bmcEndpoints.n1/redfish",
	} {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v; want an error naming %s", body, err, key)
		}
	}
}

// TestRunValidatesFirst: Run refuses a bad key before it opens anything:
// no state file, no key file, no listener.
func TestRunValidatesFirst(t *testing.T) {
	dir := t.TempDir()
	c := Config{State: filepath.Join(dir, "slipway.db"), Listen: "127.0.0.1:0", ReadyCheckTTL: "1ms"}
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // a server that got past the check would stop at once
	err := Run(ctx, c, Options{Log: zerolog.Nop(), Stderr: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "readyCheckTTL") {
		t.Fatalf("Run: %v; want the readyCheckTTL error", err)
	}
	entries, rerr := os.ReadDir(dir)
	if rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		t.Fatal(rerr)
	}
	if len(entries) != 0 {
		t.Errorf("Run made %d files before refusing its configuration: %v", len(entries), entries)
	}
}
