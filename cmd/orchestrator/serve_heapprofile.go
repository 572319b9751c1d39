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
	// heapSeriesMax bounds path.series: an hour of samples.
	heapSeriesMax = 1800
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

// startHeapPeakProfile samples the process every heapPeakInterval: each
// sample (the runtime's memory classes and the resident set's parts,
// VmRSS, RssAnon, RssFile, RssShmem) is a JSON line of path.series; when
// the resident set reaches a new high it writes its parts to
// path.rss.json and, when that high is heapPeakGrowth above the last
// profile's, an in-use heap profile to path, that sample to path.json and
// the goroutines' stacks (counted) to path.goroutines (each replaced
// whole, through a temporary file). stop ends the sampling and takes a
// last sample.
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
	rss    map[string]uint64 // VmRSS, RssAnon, RssFile (and its state database and binary parts), RssShmem (KiB) at the highest VmRSS
	series int               // lines written to path.series
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

// mappedRSS splits RssFile by what is mapped (KiB, from
// /proc/self/smaps): RssStateDB the state database's map (a *.db file),
// RssBinary the executable's own pages.
func mappedRSS() map[string]uint64 {
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil
	}
	exe, _ := os.Executable()
	parts := map[string]uint64{}
	key := ""
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			key = ""
			switch path := f[len(f)-1]; {
			case len(f) == 6 && strings.HasSuffix(path, ".db"):
				key = "RssStateDB_kib"
			case len(f) == 6 && path == exe:
				key = "RssBinary_kib"
			}
			continue
		}
		if v, ok := strings.CutPrefix(line, "Rss:"); ok && key != "" {
			if n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
				parts[key] += n
			}
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
	r := rssParts()
	if r == nil {
		r = map[string]uint64{}
	}
	for k, v := range mappedRSS() {
		r[k] = v
	}
	summary := map[string]uint64{"unix_ms": uint64(time.Now().UnixMilli())}
	for _, m := range s {
		summary[m.Name] = m.Value.Uint64()
	}
	for k, v := range r {
		summary[k] = v
	}
	p.appendSeries(summary)
	if r["VmRSS_kib"] <= p.rss["VmRSS_kib"] {
		return
	}
	p.rss = r
	_ = replaceFile(p.path+".rss.json", func(f *os.File) error { return json.NewEncoder(f).Encode(p.rss) })
	// The profile follows the resident set's highs (by heapPeakGrowth).
	if float64(r["VmRSS_kib"]) < float64(p.high)*heapPeakGrowth || p.writes >= heapPeakMaxWrites {
		return
	}
	p.high = r["VmRSS_kib"]
	p.writes++
	_ = replaceFile(p.path, func(f *os.File) error { return rpprof.Lookup("heap").WriteTo(f, 0) })
	// Where the goroutines wait then, with their counts (their stacks are
	// part of the peak).
	_ = replaceFile(p.path+".goroutines", func(f *os.File) error { return rpprof.Lookup("goroutine").WriteTo(f, 1) })
	_ = replaceFile(p.path+".json", func(f *os.File) error { return json.NewEncoder(f).Encode(summary) })
}

// appendSeries adds one sample (the memory classes and the resident
// set's parts) as a JSON line to path.series, at most heapSeriesMax
// lines a run.
func (p *heapPeak) appendSeries(sample map[string]uint64) {
	if p.series >= heapSeriesMax {
		return
	}
	p.series++
	f, err := os.OpenFile(p.path+".series", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	_ = json.NewEncoder(f).Encode(sample)
	_ = f.Close()
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
