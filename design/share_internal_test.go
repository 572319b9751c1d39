package design

import (
	"crypto/sha256"
	"runtime"
	"testing"
	"time"
)

// TestSharedRevisionForgottenWhenUnheld: DecodeShared's cache holds a
// revision only while a reader holds its design, so serve's memory does
// not grow with every revision applied.
func TestSharedRevisionForgottenWhenUnheld(t *testing.T) {
	body := []byte(`{"site":{"metadata":{"name":"forgotten"},"spec":{"drivers":{"server":"maas","oob":"ipmi","network":"noop"}}},"nodes":{}}`)
	sum := sha256.Sum256(body)
	decodeHeld(t, body)
	for range 200 { // the cleanup runs after a collection, on its own goroutine
		runtime.GC()
		if !sharedRevisions.has(sum) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the revision is still in the cache when no reader holds its design")
}

// decodeHeld decodes body with DecodeShared and checks that the cache
// holds its design then; the design is dropped on return.
func decodeHeld(t *testing.T, body []byte) {
	t.Helper()
	d, err := DecodeShared(body)
	if err != nil {
		t.Fatal(err)
	}
	if sharedRevisions.get(sha256.Sum256(body)) != d {
		t.Fatal("the cache does not hold the revision just decoded")
	}
	runtime.KeepAlive(d)
}
