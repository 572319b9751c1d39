package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
)

// benchOnceCmd sends each request of a list exactly once, over a fixed
// number of kept-alive connections, and prints the throughput (requests
// over the wall time from the first request sent to the last answer read)
// and the latency percentiles of all of them. It measures the cold
// requests of the introspection load test: the first request of every
// token, which wrk cannot do (wrk runs for a duration, not a count, and
// its requests/s divide by the duration). scripts/bench-introspection.sh
// drives it.
func (a *app) benchOnceCmd() *cobra.Command {
	var tokensFile, path string
	var count, conns, procs int
	cmd := &cobra.Command{
		Use:   "bench-once URL (--tokens FILE | --path FORMAT --count N) [--conns C] [--procs P]",
		Short: "Send each request of a list once and print throughput and latency, for load tests",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, err := url.Parse(args[0])
			if err != nil || u.Scheme != "http" || u.Host == "" {
				return usageErr(fmt.Errorf("URL %q: give http://HOST:PORT", args[0]))
			}
			reqs, err := benchRequests(u.Host, tokensFile, path, count)
			if err != nil {
				return err
			}
			if conns < 1 || procs < 1 {
				return usageErr(fmt.Errorf("--conns and --procs: at least 1"))
			}
			runtime.GOMAXPROCS(procs)
			all, bad, wall, err := sendOnce(u.Host, reqs, conns)
			if err != nil {
				return err
			}
			pct := func(p float64) string {
				i := int(p*float64(len(all))+0.999999) - 1
				return fmt.Sprintf("%.2fms", float64(all[max(i, 0)].Microseconds())/1000)
			}
			fmt.Fprintf(a.stdout, "requests %d, non-200 %d, wall %.3fs, %.0f requests/s, p50 %s, p90 %s, p99 %s, max %s\n",
				len(all), bad, wall.Seconds(), float64(len(all))/wall.Seconds(), pct(0.50), pct(0.90), pct(0.99), pct(1))
			return nil
		},
	}
	cmd.Flags().StringVar(&tokensFile, "tokens", "", "node tokens, one a line: GET /v1/self once with each")
	cmd.Flags().StringVar(&path, "path", "", "a path with one %d, e.g. /self/%d.json: GET it once for each of 0..N-1")
	cmd.Flags().IntVar(&count, "count", 0, "N for --path")
	cmd.Flags().IntVar(&conns, "conns", 16, "connections, each with one request at a time")
	cmd.Flags().IntVar(&procs, "procs", 1, "GOMAXPROCS of the generator (like wrk's threads)")
	return cmd
}

// benchRequests are the raw requests to send: GET /v1/self with each
// token of tokensFile, or GET path (with %d) for 0..count-1.
func benchRequests(host, tokensFile, path string, count int) ([][]byte, error) {
	var reqs [][]byte
	switch {
	case tokensFile != "" && path == "":
		b, err := os.ReadFile(tokensFile)
		if err != nil {
			return nil, usageErr(err)
		}
		for _, tok := range strings.Fields(string(b)) {
			reqs = append(reqs, []byte("GET /v1/self HTTP/1.1\r\nHost: "+host+"\r\nAuthorization: Bearer "+tok+"\r\n\r\n"))
		}
	case path != "" && tokensFile == "" && count > 0:
		for i := range count {
			reqs = append(reqs, []byte("GET "+fmt.Sprintf(path, i)+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n"))
		}
	default:
		return nil, usageErr(fmt.Errorf("give --tokens FILE, or --path FORMAT and --count N"))
	}
	return reqs, nil
}

// sendOnce sends each request once over conns connections, each with one
// request at a time, and returns the latencies (sorted), the non-200
// answers and the wall time.
func sendOnce(host string, reqs [][]byte, conns int) ([]time.Duration, int64, time.Duration, error) {
	cs := make([]net.Conn, conns)
	for i := range cs {
		var err error
		if cs[i], err = net.DialTimeout("tcp", host, 5*time.Second); err != nil {
			return nil, 0, 0, err
		}
		defer cs[i].Close()
	}
	lat := make([][]time.Duration, conns)
	var next, bad atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(5 * time.Minute)
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat[i] = sendOn(c, deadline, reqs, &next, &bad, &firstErr)
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if err, _ := firstErr.Load().(error); err != nil {
		return nil, 0, 0, fmt.Errorf("a connection failed: %w", err)
	}
	all := slices.Concat(lat...)
	if len(all) != len(reqs) {
		return nil, 0, 0, fmt.Errorf("%d answers to %d requests", len(all), len(reqs))
	}
	slices.Sort(all)
	return all, bad.Load(), wall, nil
}

// sendOn sends the next unsent request on c until none is left, and
// returns the latencies it saw.
func sendOn(c net.Conn, deadline time.Time, reqs [][]byte, next, bad *atomic.Int64, firstErr *atomic.Value) []time.Duration {
	var lat []time.Duration
	_ = c.SetDeadline(deadline)
	br := bufio.NewReaderSize(c, 64<<10)
	for {
		k := next.Add(1) - 1
		if k >= int64(len(reqs)) {
			return lat
		}
		t := time.Now()
		if _, err := c.Write(reqs[k]); err != nil {
			firstErr.CompareAndSwap(nil, err)
			return lat
		}
		code, err := readResponse(br)
		if err != nil {
			firstErr.CompareAndSwap(nil, err)
			return lat
		}
		lat = append(lat, time.Since(t))
		if code != http.StatusOK {
			bad.Add(1)
		}
	}
}

// readResponse reads an HTTP/1.1 response with a Content-Length (what
// both servers send) and returns its status code. It is leaner than
// http.ReadResponse, so that the generator takes less of the CPU it
// shares with the server measured.
func readResponse(br *bufio.Reader) (int, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, fmt.Errorf("not an HTTP/1.1 status line: %q", line)
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, fmt.Errorf("status line %q: %w", line, err)
	}
	n := -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		h := bytes.TrimRight(line, "\r\n")
		if len(h) == 0 {
			break
		}
		if k, v, ok := bytes.Cut(h, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			if n, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return 0, fmt.Errorf("Content-Length %q: %w", v, err)
			}
		}
	}
	if n < 0 {
		return 0, fmt.Errorf("a response without Content-Length")
	}
	_, err = br.Discard(n)
	return code, err
}
