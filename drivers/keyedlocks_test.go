package drivers_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// One holder per key at a time, other keys free; a waiter whose context
// ends gives up.
func TestKeyedLocks(t *testing.T) {
	var k drivers.KeyedLocks
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := k.Lock(context.Background(), "bmc-1")
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			unlock()
		}()
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Fatalf("%d holders of one key at once", most.Load())
	}
	unlock, err := k.Lock(context.Background(), "bmc-1")
	if err != nil {
		t.Fatal(err)
	}
	other, err := k.Lock(context.Background(), "bmc-2")
	if err != nil {
		t.Fatalf("another key waited: %v", err)
	}
	other()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := k.Lock(ctx, "bmc-1"); err == nil {
		t.Fatal("a second holder of a held key")
	}
	unlock()
}
