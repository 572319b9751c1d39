package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDamagedState: every command given a state database cut short (a
// copy of a real one, after the demo) fails with exit 2 and says the file
// is damaged and to restore the backup; none panics.
func TestDamagedState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "demo.db")
	if code, out, errs := cli(t, "demo", "--site", exampleSite, "--no-fabric", "--state", state); code != 0 {
		t.Fatalf("demo: exit %d\n%s%s", code, out, errs)
	}
	full, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int{100, 8192, 32768, len(full) / 3, len(full) / 2} {
		cut := filepath.Join(dir, "cut-"+strconv.Itoa(off), "slipway.db")
		if err := os.MkdirAll(filepath.Dir(cut), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cut, full[:off], 0o600); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"nodes", "--state", cut}, {"designs", "--state", cut}, {"tasks", "--state", cut},
			{"events", "--state", cut}, {"sweep", "--state", cut}} {
			code, out, errs := cli(t, args...)
			checkDamaged(t, off, args[0], cut, code, out+errs)
		}
		code, errs := serveFor(t, 20*time.Second, "--state", cut, "--plugin-dir", dir)
		checkDamaged(t, off, "serve", cut, code, errs)
	}
}

func checkDamaged(t *testing.T, off int, cmd, path string, code int, out string) {
	t.Helper()
	if code != exitUsage || !strings.Contains(out, path+" is damaged") || !strings.Contains(out, "backup") || strings.Contains(out, "panic") {
		t.Errorf("%s on a state cut at %d: exit %d\n%s", cmd, off, code, out)
	}
}
