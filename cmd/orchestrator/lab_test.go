package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

func TestLabCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"lab", "--design", exampleSite, "--machines", "2", "--maas-listen", "127.0.0.1:0"}, pw, io.Discard)
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
	}
	if err := json.Unmarshal([]byte(line), &info); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	if len(info.BMCs) != 10 || info.BMCs[0].Address != "127.0.0.1" || info.BMCs[0].Port == 0 || info.APIKey == "" {
		t.Errorf("info: %+v", info)
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
	go io.Copy(io.Discard, pr)
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
