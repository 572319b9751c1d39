package api_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
)

// TestCommittedOpenAPIIsCurrent: docs/openapi.json is what the code
// generates.
func TestCommittedOpenAPIIsCurrent(t *testing.T) {
	t.Parallel()
	want, err := api.DocumentJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", api.OpenAPIPath))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what the code generates: run `go run ./cmd/gendocs` (or make contract) and commit it", api.OpenAPIPath)
	}
}

// redocly finds Redocly's CLI: $SLIPWAY_REDOCLY (the npm prefix .ci/run
// installs it in), else redocly on PATH. Under CI it must be there.
func redocly(t *testing.T) string {
	if dir := os.Getenv("SLIPWAY_REDOCLY"); dir != "" {
		p := filepath.Join(dir, "node_modules", ".bin", "redocly")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("redocly"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("Redocly's CLI is missing: .ci/run installs @redocly/cli and sets SLIPWAY_REDOCLY")
	}
	t.Skip("Redocly's CLI is not installed: npm install --prefix DIR @redocly/cli and set SLIPWAY_REDOCLY=DIR, as .ci/run does")
	return ""
}

// TestOpenAPILint: Redocly's recommended rules find no error in the
// committed document (redocly.yaml and .redocly.lint-ignore.yaml say
// what is configured and why).
func TestOpenAPILint(t *testing.T) {
	t.Parallel()
	bin := redocly(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "lint", "--config", "redocly.yaml", "--format", "stylish", api.OpenAPIPath)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("redocly lint %s: %v\n%s", api.OpenAPIPath, err, out)
	}
	if regexp.MustCompile(`You have \d+ warnings?`).Match(out) {
		t.Errorf("redocly lint warns (fix it, or configure it in redocly.yaml with a reason):\n%s", out)
	}
}
