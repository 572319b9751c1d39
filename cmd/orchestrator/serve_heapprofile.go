package main

// serve --heap-profile FILE: an in-use heap profile taken at the run's
// peak, to find what the engine holds when its RSS is highest (#39).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	rpprof "runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// heapPeakInterval is how often the heap is sampled; heapPeakGrowth is
// how much the heap in use must exceed the last profile's before the
// profile is taken again (so that a run writes the file O(log peak)
// times, not every sample).
const (
	heapPeakInterval = 2 * time.Second
	heapPeakGrowth   = 1.05
	// heapPeakMaxWrites bounds the profiles one process writes.
	heapPeakMaxWrites = 200
)

// heapPeakMetrics are the runtime's memory classes the peak summary
// (FILE.json) records beside the profile.
var heapPeakMetrics = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/memory/classes/total:bytes",
	"/gc/heap/live:bytes",
	"/gc/heap/goal:bytes",
	"/sched/goroutines:goroutines",
}

// startHeapPeakProfile samples the heap every heapPeakInterval and, when
// the live heap (marked by the last GC; the in-use profile shows the same
// objects) and the goroutine stacks together reach a new high, writes an in-use heap profile to path and the memory classes
// at that moment to path.json and the goroutines' stacks (counted) to
// path.goroutines; and the parts of the highest resident set seen
// (VmRSS, RssAnon, RssFile, RssShmem) to path.rss.json (each replaced whole, through a temporary
// file). stop ends the sampling and takes a last sample.
func startHeapPeakProfile(path string) (stop func(), err error) {
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		return nil, fmt.Errorf("heap profile: %w", err)
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		p := heapPeak{path: path}
		t := time.NewTicker(heapPeakInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				p.sample()
				return
			case <-t.C:
				p.sample()
			}
		}
	}()
	return func() { close(done); <-finished }, nil
}

// heapPeak is the sampler's state: the highest live heap and stacks
// profiled, and the process's highest resident set seen, in parts.
type heapPeak struct {
	path   string
	high   uint64
	writes int
	rss    map[string]uint64 // VmRSS, RssAnon, RssFile, RssShmem (KiB) at the highest VmRSS
}

// rssParts reads the resident set's parts from /proc/self/status (KiB;
// nil where there is none): RssFile counts the pages of the state
// database's memory map the process touched, RssAnon the heap, stacks
// and the runtime's own.
func rssParts() map[string]uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil
	}
	parts := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && !strings.HasPrefix(k, "Rss")) {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
			parts[k+"_kib"] = n
		}
	}
	return parts
}

func (p *heapPeak) sample() {
	s := make([]metrics.Sample, len(heapPeakMetrics))
	for i, name := range heapPeakMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	rssNew := false
	if r := rssParts(); r["VmRSS_kib"] > p.rss["VmRSS_kib"] {
		p.rss, rssNew = r, true
	}
	inuse := s[6].Value.Uint64() + s[4].Value.Uint64()
	if float64(inuse) < float64(p.high)*heapPeakGrowth || p.writes >= heapPeakMaxWrites {
		if rssNew && p.writes > 0 && p.writes < heapPeakMaxWrites { // the summary's resident set only
			p.writes++
			_ = replaceFile(p.path+".rss.json", func(f *os.File) error { return json.NewEncoder(f).Encode(p.rss) })
		}
		return
	}
	p.high = inuse
	p.writes++
	summary := map[string]uint64{"live_and_stacks_bytes": inuse}
	for _, m := range s {
		summary[m.Name] = m.Value.Uint64()
	}
	for k, v := range p.rss {
		summary["max_"+k] = v
	}
	_ = replaceFile(p.path+".rss.json", func(f *os.File) error { return json.NewEncoder(f).Encode(p.rss) })
	_ = replaceFile(p.path, func(f *os.File) error { return rpprof.Lookup("heap").WriteTo(f, 0) })
	// Where the goroutines wait then, with their counts (their stacks are
	// part of the peak).
	_ = replaceFile(p.path+".goroutines", func(f *os.File) error { return rpprof.Lookup("goroutine").WriteTo(f, 1) })
	_ = replaceFile(p.path+".json", func(f *os.File) error { return json.NewEncoder(f).Encode(summary) })
}

// replaceFile writes path whole through a temporary file beside it.
func replaceFile(path string, write func(*os.File) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".heap-*")
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}
