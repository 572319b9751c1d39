package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/orchestrator"
)

// TestConfigBootstrapDeadline: the configuration file's bootstrapDeadline
// becomes the engine's; a value that is not a duration is refused by name.
func TestConfigBootstrapDeadline(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]time.Duration{"bootstrapDeadline: 45m\n": 45 * time.Minute, "pollInterval: 5s\n": 0} {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := decode(p)
		var cfg orchestrator.Config
		if err == nil {
			err = c.durations(&cfg)
		}
		if err != nil || cfg.BootstrapDeadline != want {
			t.Errorf("%q: deadline %s, %v; want %s", body, cfg.BootstrapDeadline, err, want)
		}
	}
	p := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(p, []byte("bootstrapDeadline: soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := decode(p)
	if err == nil {
		err = c.durations(&orchestrator.Config{})
	}
	if err == nil || !strings.Contains(err.Error(), "bootstrapDeadline") {
		t.Errorf("a bad bootstrapDeadline: %v", err)
	}
}

// TestServeDesignConfig: serve's config file sets the upload limits,
// parses at once and the upload directory (default: uploads/ next to
// the state database).
func TestServeDesignConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "serve.yaml")
	write := func(body string) {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("state: /var/lib/slipway/slipway.db\ndesignMaxFileBytes: 1MiB\ndesignMaxBytes: 4194304\ndesignMaxFiles: 50\ndesignParses: 3\n")
	c, err := decode(p)
	if err != nil {
		t.Fatal(err)
	}
	var cfg api.Config
	if err := c.designLimits(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.DesignLimits.FileBytes != 1<<20 || cfg.DesignLimits.DesignBytes != 4<<20 || cfg.DesignLimits.Files != 50 ||
		cfg.DesignParses != 3 || cfg.UploadDir != "/var/lib/slipway/uploads" {
		t.Errorf("config: %+v", cfg)
	}
	for body, want := range map[string]string{
		"designMaxFileBytes: lots\n": `line 1: size "lots"`,
		"designParses: -1\n":         "designParses",
	} {
		write(body)
		c, err := decode(p)
		if err == nil {
			err = c.designLimits(&cfg)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want one naming %s", body, err, want)
		}
	}
}
