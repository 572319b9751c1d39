package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/client"
)

// TestDesignsRawUploadSaysNone: an apply uploaded raw (curl's way, no
// provenance) shows "none" in the GIT column of 'orchestrator designs'
// instead of a blank "-".
func TestDesignsRawUploadSaysNone(t *testing.T) {
	t.Parallel()
	s := remoteServer(t)
	site := copyExample(t)
	p := filepath.Join(site, "nodes-r01.yaml")
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(orig), "address: 10.13.0.101", "address: 10.13.0.150", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	ar, err := client.Archive([]string{site})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/api/v1/designs", bytes.NewReader(ar.Data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Token[api.RoleOperator])
	req.Header.Set("Content-Type", "application/gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("raw upload: %d", resp.StatusCode)
	}
	code, out, errs := cli(t, "--server", s.URL, "--token", s.Token[api.RoleViewer], "designs")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := strings.Fields(lines[len(lines)-1])
	if code != 0 || len(last) < 5 || !strings.HasPrefix(last[0], "*") || last[4] != "none" || !strings.Contains(out, "(api upload by operator)") {
		t.Fatalf("designs: exit %d\n%s%s\nwant the current row's GIT column to say none", code, out, errs)
	}
}
