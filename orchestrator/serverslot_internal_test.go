package orchestrator

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// someServer is a server driver value for callServer's check (no method
// is called).
type someServer struct{ drivers.Server }

// TestServerSlotLentByConcurrentWaits: a driver call whose goroutines
// wait at once (the MAAS driver's tags, one coalescing window per tag)
// lends the call's slot once and takes it back once, and every slot is
// free after the call (the limits' own counts). Failed before: each
// resume took a slot and the call gave back one (and -race saw the
// slot's state written from several goroutines).
func TestServerSlotLentByConcurrentWaits(t *testing.T) {
	e := &Engine{cfg: Config{Drivers: Drivers{Server: someServer{}}}, glob: make(sem, 16), prov: make(sem, 16)}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	const waits = 8
	err := e.callServer(ctx, func(ctx context.Context) error {
		var lent, resumed sync.WaitGroup
		lent.Add(waits)
		resumed.Add(waits)
		release := make(chan struct{})
		for range waits {
			go func() {
				defer resumed.Done()
				resume := drivers.Waiting(ctx)
				lent.Done()
				<-release
				resume()
			}()
		}
		lent.Wait()
		if len(e.prov) != 0 || len(e.glob) != 0 {
			return fmt.Errorf("while its goroutines wait, the call holds %d provisioner and %d global slots, want 0", len(e.prov), len(e.glob))
		}
		close(release)
		resumed.Wait()
		if len(e.prov) != 1 || len(e.glob) != 1 {
			return fmt.Errorf("after the waits, the call holds %d provisioner and %d global slots, want 1", len(e.prov), len(e.glob))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.prov) != 0 || len(e.glob) != 0 {
		t.Fatalf("after the call, %d provisioner and %d global slots are held, want 0", len(e.prov), len(e.glob))
	}
}
