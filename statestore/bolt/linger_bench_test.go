package bolt_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// BenchmarkWriteThinking is the engine's pattern of writes: writers (the
// nodes in stage handlers) each write a checkpoint (a 1.5 KiB node
// record, a task result and an event), then spend 0-4 ms on a driver
// call, and again. It reports the Writes a commit carried and the
// process's CPU per Write, with and without the commit linger.
func BenchmarkWriteThinking(b *testing.B) {
	for _, linger := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond, bolt.CommitLinger} {
		for _, writers := range []int{8, 64} {
			b.Run(fmt.Sprintf("linger=%s/writers=%d", linger, writers), func(b *testing.B) {
				benchThinking(b, linger, writers)
			})
		}
	}
}

func benchThinking(b *testing.B, linger time.Duration, writers int) {
	s := open(b, filepath.Join(b.TempDir(), "state.db"), bolt.Options{})
	defer s.Close()
	bolt.SetCommitLinger(s, linger)
	node, result := bytes.Repeat([]byte("n"), 1536), bytes.Repeat([]byte("r"), 300)
	event := bytes.Repeat([]byte("e"), 250)
	perWriter := max(1, b.N/writers)
	cpu0 := processCPU()
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				key := fmt.Sprintf("node-%05d", w)
				if _, err := s.Write(b.Context(), statestore.Put("nodes", key, node),
					statestore.Put("results", fmt.Sprintf("t1/%s", key), result), statestore.Append("events", event)); err != nil {
					b.Error(err)
					return
				}
				if i < perWriter-1 {
					time.Sleep(time.Duration(rand.Int64N(int64(4 * time.Millisecond))))
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	writes, commits := s.WriteCounts()
	b.ReportMetric(float64(writes)/float64(commits), "writes/commit")
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(writes), "cpu-us/write")
	b.ReportMetric(0, "ns/op")
}

// processCPU is the process's user and system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
