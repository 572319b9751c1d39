package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	rpprof "runtime/pprof"
)

// startCPUProfile profiles the process's CPU into path until the
// returned stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := rpprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { rpprof.StopCPUProfile(); _ = f.Close() }, nil
}

// servePprof serves net/http/pprof on addr, which must be a loopback
// address (profiles name what the process holds).
func servePprof(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--pprof %s: give a loopback address, like 127.0.0.1:6060", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace) // an execution trace of ?seconds=N: where goroutines wait
	go func() { _ = http.Serve(l, mux) }()
	return nil
}

// startProfiling serves pprof on pprofAddr and writes a CPU profile to
// cpuProfile, each when given; stop ends the CPU profile.
func startProfiling(pprofAddr, cpuProfile string) (stop func(), err error) {
	if pprofAddr != "" {
		if err := servePprof(pprofAddr); err != nil {
			return nil, err
		}
	}
	if cpuProfile == "" {
		return func() {}, nil
	}
	return startCPUProfile(cpuProfile)
}
