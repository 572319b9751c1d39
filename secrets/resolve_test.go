package secrets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	if err := os.WriteFile(file, []byte("from-file\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("RESOLVE_TEST_PW", "from-env")
	t.Setenv("SLIPWAY_SECRET_BMC_ADMIN_V2", "from-store")
	for ref, want := range map[string]string{
		"env:RESOLVE_TEST_PW": "from-env",
		"file:" + file:        "from-file",
		"secret:bmc-admin.v2": "from-store",
		"secret:BMC_admin-v2": "from-store",
	} {
		got, err := Resolve(ref)
		if err != nil || got.Reveal() != want {
			t.Errorf("%s: %q, %v; want %q", ref, got.Reveal(), err, want)
		}
	}
	for ref, want := range map[string]string{
		"secret:missing":         "SLIPWAY_SECRET_MISSING",
		"env:RESOLVE_TEST_UNSET": "RESOLVE_TEST_UNSET is not set",
		"file:" + dir + "/none":  "read secret file",
		"hunter2":                "not a secret reference",
		"vault:x":                "unknown scheme",
		"file:relative":          "absolute path",
	} {
		_, err := Resolve(ref)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", ref, err, want)
		}
	}
	if _, err := Resolve("hunter2"); err != nil && strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error repeats a clear-text input: %v", err)
	}
	if got := EnvName("bmc-admin.v2"); got != "SLIPWAY_SECRET_BMC_ADMIN_V2" {
		t.Errorf("EnvName: %s", got)
	}
}
