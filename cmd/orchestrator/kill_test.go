package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/labrun"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
)

// TestKill9Resume deploys a generated site with the real binary against
// the lab, kills the process with SIGKILL three times at random instants,
// and lets `orchestrator wait` resume the task each time: every node must
// end deployed, no machine allocated or deployed twice, none leaked.
func TestKill9Resume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and deploys 40 nodes: skipped with -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "orchestrator")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	t.Setenv("SLIPWAY_SECRET_BMC_ADMIN", lab.DefaultBMCPassword)
	d, err := labrun.Generated(t.Context(), filepath.Join(dir, "site"), 40)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := lab.Start(t.Context(), lab.Config{Design: d, TimeScale: 0.01, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	info := lb.Info()
	t.Setenv("SLIPWAY_TEST_MAAS_KEY", info.APIKey)
	layer := filepath.Join(dir, "layer")
	site := fmt.Sprintf("apiVersion: slipway/v1\nkind: Site\nmetadata: {name: %s}\nspec:\n  maas: {url: %q, apiKey: \"env:SLIPWAY_TEST_MAAS_KEY\"}\n",
		d.Site.Metadata.Name, info.MAASURL)
	var cfg strings.Builder
	cfg.WriteString("pollInterval: 100ms\nretryBase: 100ms\nretryMax: 1s\nbmcEndpoints:\n")
	for _, b := range info.BMCs {
		fmt.Fprintf(&cfg, "  %s: 127.0.0.1:%d\n", b.Node, b.Port)
	}
	for name, body := range map[string]string{filepath.Join(layer, "site.yaml"): site, filepath.Join(dir, "engine.yaml"): cfg.String()} {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	state := filepath.Join(dir, "state.db")
	common := []string{"--state", state, "--config", filepath.Join(dir, "engine.yaml"), "--plugin-dir", dir}
	if code, out, errs := cli(t, "apply", "--state", state, filepath.Join(dir, "site"), layer); code != 0 {
		t.Fatalf("apply: %d %s %s", code, out, errs)
	}
	if code, out, errs := cli(t, append([]string{"prepare-site"}, common...)...); code != 0 {
		t.Fatalf("prepare-site: %d %s %s", code, out, errs)
	}
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	args := append([]string{"deploy", "-o", "json"}, common...)
	taskID := ""
	for kill := 0; ; kill++ {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, bin, args...)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		if kill < 3 {
			time.Sleep(time.Duration(300+rnd.IntN(2500)) * time.Millisecond)
			_ = cmd.Process.Signal(syscall.SIGKILL)
			err := cmd.Wait()
			cancel()
			t.Logf("kill %d: %v", kill+1, err)
		} else {
			err := cmd.Wait()
			cancel()
			if err != nil {
				t.Fatalf("final wait: %v\n%s", err, out.String())
			}
			break
		}
		if taskID == "" {
			code, o, errs := cli(t, "tasks", "--state", state, "-o", "json")
			var tasks []struct{ ID, Action string }
			if code != 0 || json.Unmarshal([]byte(o), &tasks) != nil {
				t.Fatalf("tasks: %d %s %s", code, o, errs)
			}
			for _, tk := range tasks {
				if tk.Action == "deploy_nodes" {
					taskID = tk.ID
				}
			}
			if taskID == "" {
				t.Fatal("the killed deploy left no task")
			}
		}
		args = append([]string{"wait", taskID, "-o", "json"}, common...)
	}
	code, o, errs := cli(t, "tasks", taskID, "--state", state, "-o", "json")
	if code != 0 {
		t.Fatalf("tasks %s: %d %s", taskID, code, errs)
	}
	var task struct {
		Status  string
		Results []struct{ Node, Stage, Outcome, Reason string }
	}
	if err := json.Unmarshal([]byte(o), &task); err != nil {
		t.Fatal(err)
	}
	if task.Status != "succeeded" || len(task.Results) != 40 {
		t.Fatalf("task %s after 3 kills: %s, %d results: %s", taskID, task.Status, len(task.Results), o)
	}
	deployed := 0
	for _, m := range lb.Machines() {
		if m.OS() != "" {
			deployed++
		}
	}
	if dup := maas.DuplicateAllocations(lb.MAAS.Lifecycle()); deployed != 40 || dup != 0 {
		t.Fatalf("%d machines deployed (want 40), %d duplicate allocations", deployed, dup)
	}
	code, o, _ = cli(t, append([]string{"sweep"}, common...)...)
	var rep struct {
		Owned int
		Leaks []any
	}
	if code != 0 || json.Unmarshal([]byte(o), &rep) != nil || rep.Owned != 40 || len(rep.Leaks) != 0 {
		t.Fatalf("sweep: %d %s", code, o)
	}
}
