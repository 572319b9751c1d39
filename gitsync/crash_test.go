package gitsync

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/gitsync/gittest"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// blockingApplier signals that the apply started, then waits to be
// killed.
type blockingApplier struct{ ready string }

func (b blockingApplier) ApplyDir(ctx context.Context, _ ApplyRequest) (ApplyResult, error) {
	_ = os.WriteFile(b.ready, []byte("x"), 0o600)
	<-ctx.Done()
	return ApplyResult{}, ctx.Err()
}

// TestCrashMidRound: a process killed with SIGKILL in the middle of an
// apply (its design extracted, its private directory holding the
// credentials' helpers) leaves nothing applied and no status change; the
// next follower on the same state removes what it left and applies the
// commit.
func TestCrashMidRound(t *testing.T) {
	if dir := os.Getenv("GITSYNC_CRASH_CHILD"); dir != "" {
		crashChild(t, dir)
		return
	}
	up := gittest.NewUpstream(t)
	c1 := up.Commit("one", map[string]string{"site/site.yaml": siteYAML})
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashMidRound$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GITSYNC_CRASH_CHILD="+dir, "GITSYNC_CRASH_URL=file://"+up.Bare)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ready := filepath.Join(dir, "ready")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child's apply did not start within 20 s")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	rounds, _ := filepath.Glob(filepath.Join(dir, "gitsync", "round-*"))
	designs, _ := filepath.Glob(filepath.Join(dir, "gitsync", "design-*"))
	left := append(rounds, designs...)
	if len(rounds) != 1 || len(designs) != 1 { // the round's private directory and the extracted design
		t.Fatalf("the killed round left %v; want its directories (the test would prove nothing)", left)
	}
	st, err := bolt.Open(filepath.Join(dir, "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := &storeApplier{st: st}
	f := follow(t, a, "file://"+up.Bare, func(c *Config) { c.Dir = filepath.Join(dir, "gitsync") })
	if s, _ := f.Status(t.Context()); s.Applied != nil || s.Handled != "" {
		t.Fatalf("the killed round changed the status: %+v", s)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	waitCommit(t, a, c1, hangGuard)
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
	for _, p := range left {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s was left after the next start: %v", p, err)
		}
	}
}

// crashChild runs a follower whose apply blocks until the parent kills
// the process.
func crashChild(t *testing.T, dir string) {
	st, err := bolt.Open(filepath.Join(dir, "state.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(Config{URL: os.Getenv("GITSYNC_CRASH_URL"), Path: "site", Dir: filepath.Join(dir, "gitsync")},
		Options{Applier: blockingApplier{ready: filepath.Join(dir, "ready")}, Store: st, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f.Round(ctx, "test")
}
