package maas

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestUploadStall: the first chunk at UploadStall.AtBytes or past it is
// received but neither stored nor answered; its handler ends when its
// client goes away (well before For, so a handler that missed it fails the test), and the same chunk sent again goes
// through, as do the rest, to a complete file with the right SHA-256.
func TestUploadStall(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.ImageDir = t.TempDir()
		o.Faults = &Faults{UploadStall: &UploadStall{AtBytes: chunk4M, Times: 1, For: 3 * labWait}}
	})
	img, sha := imageBytes(3*chunk4M, 61)
	rid, fid, _ := createImage(l, "custom/stalled", sha, len(img))
	if r := putChunk(l, rid, fid, img[:chunk4M]); r.code != http.StatusOK {
		t.Fatalf("the first chunk, before AtBytes: %s", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "PUT", fmt.Sprintf("%s%s/boot-resources/%d/upload/%d/", l.hs.URL, APIPrefix, rid, fid),
		bytes.NewReader(img[chunk4M:2*chunk4M]))
	req.Header.Set("Authorization", oauthHeader(labCreds))
	answered := make(chan error, 1)
	go func() {
		resp, err := l.hs.Client().Do(req)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("answered %d", resp.StatusCode)
		}
		answered <- err
	}()
	for l.s.faults.held.Load() == 0 { // the lab holds the chunk: its client goes away
		select {
		case err := <-answered:
			t.Fatalf("the chunk at AtBytes ended before the lab held it (%v), want it stalled", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	if err := <-answered; err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("the stalled chunk's client after its cancel: %v, want its context's error", err)
	}
	deadline := time.Now().Add(labWait)
	for l.s.writesInFlight.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the stalled chunk's handler still runs %v after its client went away", labWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if v := viewOf(t, l.s, rid); v.Held != chunk4M || v.Complete {
		t.Fatalf("after the stall the lab holds %d (complete %v), want the first chunk only", v.Held, v.Complete)
	}
	if n := l.s.Stats().Snapshot().Statuses[0]; n != 1 {
		t.Errorf("/sim/stats counts %d answers of status 0, want 1: the stalled chunk's client went away unanswered", n)
	}
	for off := chunk4M; off < len(img); off += chunk4M {
		if r := putChunk(l, rid, fid, img[off:off+chunk4M]); r.code != http.StatusOK {
			t.Fatalf("chunk at %d after the stall: %s", off, r)
		}
	}
	if v := viewOf(t, l.s, rid); !v.Complete || v.SHA256 != sha {
		t.Fatalf("after the upload: %+v", v)
	}
}

// TestUploadStallTimesOut: without a client that goes away, the stalled
// chunk is answered 503 after For, with nothing of it kept.
func TestUploadStallTimesOut(t *testing.T) {
	l := newSimLab(t, func(o *Options) {
		o.ImageDir = t.TempDir()
		o.Faults = &Faults{UploadStall: &UploadStall{Times: 1, For: 50 * time.Millisecond}}
	})
	img, sha := imageBytes(chunk4M, 62)
	rid, fid, _ := createImage(l, "custom/stalled", sha, len(img))
	if r := putChunk(l, rid, fid, img); r.code != http.StatusServiceUnavailable {
		t.Fatalf("the stalled chunk: %s, want 503", r)
	}
	if v := viewOf(t, l.s, rid); v.Held != 0 {
		t.Fatalf("the stalled chunk was kept: %+v", v)
	}
	if r := putChunk(l, rid, fid, img); r.code != http.StatusOK {
		t.Fatalf("the chunk sent again: %s", r)
	}
}
