package orchestrator

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// countingReader is a switch reader that counts the reads in flight at
// once, each taking a few milliseconds.
type countingReader struct {
	mu        sync.Mutex
	now, most int
	calls     int
}

func (r *countingReader) ReadPorts(ctx context.Context, ports []drivers.SwitchPort) ([]drivers.PortState, error) {
	r.mu.Lock()
	r.now++
	r.calls++
	r.most = max(r.most, r.now)
	r.mu.Unlock()
	defer func() { r.mu.Lock(); r.now--; r.mu.Unlock() }()
	select {
	case <-time.After(3 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out := make([]drivers.PortState, len(ports))
	for i, p := range ports {
		out[i] = drivers.PortState{PortConfig: drivers.PortConfig{SwitchPort: p}, Found: true}
	}
	return out, nil
}

// TestSwitchReadsBoundedAcrossViews: however many fabric views are asked
// for at once (GET /fabric is a viewer's), the switches are read at most
// fabricReadParallel at a time in all, counted at the switch; a view
// whose caller gives up while it waits says which switches it did not
// read.
func TestSwitchReadsBoundedAcrossViews(t *testing.T) {
	bySwitch := map[string][]drivers.SwitchPort{}
	for i := range 12 {
		sw := fmt.Sprintf("leaf%02d", i)
		bySwitch[sw] = []drivers.SwitchPort{{Switch: sw, Port: "p1"}, {Switch: sw, Port: "p2"}}
	}
	r := &countingReader{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			states, errs := readSwitches(t.Context(), r, bySwitch)
			if len(states) != 24 || len(errs) != 0 {
				t.Errorf("a view read %d ports with errors %v, want 24 and none", len(states), errs)
			}
		}()
	}
	wg.Wait()
	if r.calls != 8*12 || r.most > fabricReadParallel {
		t.Errorf("%d reads, at most %d at once; want %d, at most %d", r.calls, r.most, 8*12, fabricReadParallel)
	}

	hold := make(chan struct{})
	for range fabricReadParallel { // every slot busy
		switchReadSlots <- struct{}{}
	}
	go func() {
		<-hold
		for range fabricReadParallel {
			<-switchReadSlots
		}
	}()
	defer close(hold)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	states, errs := readSwitches(ctx, r, bySwitch)
	if len(states) != 0 || len(errs) != 12 {
		t.Errorf("given up while waiting: %d ports read, %d switches named, want 0 and 12", len(states), len(errs))
	}
}
