package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/internal/hostileyaml"
)

// TestValidateLimits: validate and apply read the roots within
// --max-file-bytes and --max-design-bytes, naming the file and the flag.
func TestValidateLimits(t *testing.T) {
	code, _, stderr := cli(t, "validate", "--max-file-bytes", "1KiB", exampleSite)
	if code != exitUsage || !strings.Contains(stderr, "the limit for one file") || !strings.Contains(stderr, "--max-file-bytes") {
		t.Errorf("file limit: exit %d, %s", code, stderr)
	}
	code, _, stderr = cli(t, "apply", "--state", filepath.Join(t.TempDir(), "s.db"), "--max-design-bytes", "20000", exampleSite)
	if code != exitUsage || !strings.Contains(stderr, "all its files together") || !strings.Contains(stderr, "--max-design-bytes") {
		t.Errorf("design limit: exit %d, %s", code, stderr)
	}
	if code, _, stderr := cli(t, "validate", "--max-file-bytes", "lots", exampleSite); code != exitUsage || !strings.Contains(stderr, "8MiB") {
		t.Errorf("a bad size: exit %d, %s", code, stderr)
	}
	if code, _, stderr := cli(t, "validate", "--max-file-bytes", "64KiB", "--max-design-bytes", "1MiB", exampleSite); code != exitOK {
		t.Errorf("the example within its limits: exit %d, %s", code, stderr)
	}
}

// TestValidateHostileFile: the CLI refuses a 16 MiB flow list at once
// (over the file limit) and a 4 MiB one (under it) as a finding at its
// line, where it used to build a yaml.v3 tree of 2.6 GB.
func TestValidateHostileFile(t *testing.T) {
	dir := t.TempDir()
	for name, size := range map[string]int{"big.yaml": 16 << 20, "dense.yaml": 4 << 20} {
		b, err := hostileyaml.Generate("flow-list", size)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, name[:len(name)-5]), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name[:len(name)-5], name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, _, stderr := cli(t, "validate", filepath.Join(dir, "big"))
	if code != exitUsage || !strings.Contains(stderr, "big.yaml is larger than 8388608 bytes") {
		t.Errorf("16 MiB: exit %d, %s", code, stderr)
	}
	code, stdout, _ := cli(t, "validate", filepath.Join(dir, "dense"))
	if code != exitInvalid || !strings.Contains(stdout, "dense.yaml:1: error schema") {
		t.Errorf("4 MiB: exit %d, %s", code, stdout)
	}
}
