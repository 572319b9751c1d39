package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/labrun"
)

func TestLabCommand(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	images := filepath.Join(t.TempDir(), "images")
	go func() {
		done <- run(ctx, []string{"lab", "--design", exampleSite, "--machines", "2", "--maas-listen", "127.0.0.1:0", "--gnmi", "--image-dir", images}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no JSON line: %v", err)
	}
	var info struct {
		MAASURL  string `json:"maas_url"`
		APIKey   string `json:"api_key"`
		StatsURL string `json:"stats_url"`
		BMCs     []struct {
			Node, Address string
			Port          int
		} `json:"bmcs"`
		GNMIAddress  string `json:"gnmi_address"`
		GNMIUsername string `json:"gnmi_username"`
	}
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	if len(info.BMCs) != 10 || info.BMCs[0].Address != "127.0.0.1" || info.BMCs[0].Port == 0 || info.APIKey == "" {
		t.Errorf("info: %+v", info)
	}
	// --image-dir: the example's custom image as serve --image-dir takes
	// it (the SHA-256 of images.yaml).
	if b, err := os.ReadFile(filepath.Join(images, "gpu-golden.ddraw")); err != nil || fmt.Sprintf("%x", sha256.Sum256(b)) != "daf26e2ff9e81e4fd39ff7668a0cfadd7339c5ab4c345019bce81580af67d155" {
		t.Errorf("--image-dir: %d bytes, %v", len(b), err)
	}
	if c, err := net.DialTimeout("tcp", info.GNMIAddress, 2*time.Second); err != nil || info.GNMIUsername != "admin" {
		t.Errorf("--gnmi: target at %q (user %q): %v", info.GNMIAddress, info.GNMIUsername, err)
	} else {
		c.Close()
	}
	resp, err := http.Get(info.StatsURL)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stats: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Get(info.MAASURL + "/api/2.0/machines/")
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unauthenticated read: %v %v", resp, err)
	}
	resp.Body.Close()
	cancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("lab exit %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("lab did not stop on cancel")
	}
	if code, _, errs := cli(t, "lab"); code != exitUsage || errs == "" {
		t.Errorf("lab without machines: exit %d", code)
	}
}

// TestLabGeneratedNodes: lab --nodes N runs demo --nodes N's generated
// site, writes it to --site-dir for the engine to apply, and answers POST
// /sim/audit from its own state (nothing deployed yet: every machine
// failed, none leaked, the floor zero).
func TestLabGeneratedNodes(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dir := filepath.Join(t.TempDir(), "site")
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"lab", "--nodes", "3", "--site-dir", dir, "--maas-listen", "127.0.0.1:0"}, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no JSON line: %v", err)
	}
	var info struct {
		StatsURL string                  `json:"stats_url"`
		BMCs     []struct{ Node string } `json:"bmcs"`
	}
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	if len(info.BMCs) != 3 {
		t.Errorf("%d BMCs, want 3: %s", len(info.BMCs), line)
	}
	if code, out, errs := cli(t, "validate", dir); code != 0 {
		t.Errorf("validate the site lab wrote: %d %s %s", code, out, errs)
	}
	auditURL := strings.TrimSuffix(info.StatsURL, "/stats") + "/audit"
	resp, err := http.Post(auditURL, "application/json", strings.NewReader(`{"claims": {}}`))
	if err != nil {
		t.Fatal(err)
	}
	var rep labrun.AuditReport
	err = json.NewDecoder(resp.Body).Decode(&rep)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("audit: %d %v", resp.StatusCode, err)
	}
	if rep.Machines != 3 || rep.Deployed != 0 || rep.Failed != 3 || rep.Leaked != 0 || rep.FloorSeconds != 0 {
		t.Errorf("audit of an idle lab: %+v", rep)
	}
	if resp, err := http.Get(auditURL); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET audit: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	cancel()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("lab exit %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("lab did not stop on cancel")
	}
	if code, _, errs := cli(t, "lab", "--nodes", "2", "--design", exampleSite); code != exitUsage || !strings.Contains(errs, "not both") {
		t.Errorf("--nodes with --design: exit %d %s", code, errs)
	}
}
