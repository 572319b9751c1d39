package api

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestListenMaskedRestoresUmaskUnderConcurrency: two sockets bound at once
// never hold the process's umask together, and leave it as it was. The
// fake umask holds the first bind between its set and its restore until
// the second bind has set its own (or a second has passed). Without the
// lock the second saves the first's 0177 and, when it restores last, the
// process keeps 0177: what made the copied test binaries in
// cmd/orchestrator lose their x bits ("fork/exec: permission denied").
func TestListenMaskedRestoresUmaskUnderConcurrency(t *testing.T) {
	var mu sync.Mutex
	current, calls, overlaps := 0o022, 0, 0
	secondSet := make(chan struct{})
	var once sync.Once
	setUmask = func(m int) int {
		mu.Lock()
		old := current
		if m == 0o177 && old == 0o177 {
			overlaps++ // a set while another bind holds the umask
		}
		current = m
		calls++
		n := calls
		mu.Unlock()
		if n == 1 { // the first bind's set: wait for the second's
			select {
			case <-secondSet:
			case <-time.After(time.Second):
			}
		} else if m == 0o177 {
			once.Do(func() { close(secondSet) })
		}
		return old
	}
	t.Cleanup(func() { setUmask = umask })
	dir := t.TempDir()
	var wg sync.WaitGroup
	for _, name := range []string{"a.sock", "b.sock"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ln, err := listenMasked(filepath.Join(dir, name))
			if err != nil {
				t.Error(err)
				return
			}
			ln.Close()
		}()
	}
	wg.Wait()
	if overlaps != 0 || calls != 4 {
		t.Fatalf("%d umask calls, %d of them a set while another bind held it; want 4 and 0", calls, overlaps)
	}
	if current != 0o022 {
		t.Fatalf("umask after two binds at once: %#o, want 0o22", current)
	}
}
