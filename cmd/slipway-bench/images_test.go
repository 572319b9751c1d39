package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBenchImages: a small run uploads the image three ways into the lab
// region, each counted complete with the file's SHA-256 by the region
// (every byte received once: 3 x the size in all); a size out of bounds
// is a usage error.
func TestBenchImages(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl not installed: .ci/run installs it; bench-images compares with it")
		}
		t.Skip("curl not installed (apt-get install curl): bench-images compares with it")
	}
	code, out, errs := bench(t, "bench-images", "--size", "9")
	if code != 0 {
		t.Fatalf("bench-images: exit %d: %s", code, errs)
	}
	var r ImagesResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.CurlChunked == nil {
		t.Fatalf("no chunked curl run: %s", out)
	}
	const size = 9 << 20
	for _, u := range []UploadRun{r.Slipway, r.Curl, *r.CurlChunked} {
		if !u.Complete || !u.SHA256OK || u.Received != size || u.MiBps <= 0 {
			t.Errorf("%s: %+v", u.Way, u)
		}
	}
	if r.Slipway.Requests != 3 || r.Curl.Requests != 1 || r.CurlChunked.Requests != 3 {
		t.Errorf("requests: slipway %d, curl %d, chunked %d; want 3, 1, 3", r.Slipway.Requests, r.Curl.Requests, r.CurlChunked.Requests)
	}
	if r.Stats.Creates != 3 || r.Stats.BytesReceived != 3*size || r.Stats.ChecksumRefused != 0 || r.Ratio <= 0 || r.RatioChunked <= 0 {
		t.Errorf("region: %+v, ratios %g %g", r.Stats, r.Ratio, r.RatioChunked)
	}
	if code, _, errs := bench(t, "bench-images", "--size", "2048"); code != exitUsage || !strings.Contains(errs, "--size 2048") {
		t.Errorf("--size 2048: exit %d: %s", code, errs)
	}
}
