package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"syscall"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/introspection"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// benchIntrospectionCmd serves the introspection API for a generated
// site with a token issued for every node, and writes what a load
// generator needs: the tokens, one per line, and each node's /v1/self
// answer as a static file (for a static server to compare with). It
// serves until interrupted. scripts/bench-introspection.sh drives it.
func (a *app) benchIntrospectionCmd() *cobra.Command {
	var nodes int
	var listen, out, pprofAddr string
	cmd := &cobra.Command{
		Use:   "bench-introspection --nodes N --out DIR [--listen ADDR] [--pprof ADDR]",
		Short: "Serve the introspection API for a generated site, for load tests",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usageErr(fmt.Errorf("--out DIR is required"))
			}
			if pprofAddr != "" {
				if err := startBenchPprof(pprofAddr); err != nil {
					return usageErr(err)
				}
			}
			return a.benchIntrospection(cmd.Context(), nodes, listen, out)
		},
	}
	cmd.Flags().IntVar(&nodes, "nodes", 10000, "nodes in the generated site")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:18701", "address to serve on")
	cmd.Flags().StringVar(&pprofAddr, "pprof", "", "serve net/http/pprof on this address (e.g. 127.0.0.1:6060)")
	cmd.Flags().StringVar(&out, "out", "", "directory for the site, the state, tokens.txt and static/")
	return cmd
}

// startBenchPprof serves net/http/pprof's handlers on an address of their
// own, to profile the server under load.
func startBenchPprof(addr string) error {
	pl, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	go func() { _ = http.Serve(pl, mux) }()
	return nil
}

// benchSite is the served site of bench-introspection.
type benchSite struct {
	st     statestore.Store
	cfg    introspection.Config
	ln     net.Listener
	names  []string // the measured nodes
	tokens []string // theirs, by index
	primer string   // the extra node's token: a fresh server's first request
}

func (a *app) benchIntrospection(ctx context.Context, nodes int, listen, out string) error {
	b, srv, err := issueBenchSite(ctx, nodes, listen, out)
	if err != nil {
		return err
	}
	defer b.st.Close()
	// The server keeps its own copy of the design (the one generated was
	// only issueBenchSite's): the heap the collector scans is what a real
	// server holds.
	runtime.GC()
	stop := serveUntilStopped(ctx, srv, b.ln)
	defer func() { stop() }()
	base := "http://" + b.ln.Addr().String()
	if err := writeBenchStatic(ctx, base, out, b.names, b.tokens); err != nil {
		return err
	}
	// Tokens last: the script waits for this file.
	tmp := filepath.Join(out, "tokens.txt.tmp")
	if err := os.WriteFile(tmp, []byte(strings.Join(b.tokens, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(out, "tokens.txt")); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "serving the introspection API for %d nodes on %s\n", len(b.names), b.ln.Addr())
	return benchSignals(ctx, b, out, &stop)
}

// issueBenchSite generates the site (one node more than asked: its token,
// not in tokens.txt, is a fresh server's first request, outside the
// measurement), stores it and issues every node's token through the
// server it returns (each answer is stored when its token is issued, so
// no cold request loads a design).
func issueBenchSite(ctx context.Context, nodes int, listen, out string) (*benchSite, *introspection.Server, error) {
	d, err := labrun.Generated(ctx, filepath.Join(out, "site"), nodes+1)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	st, err := bolt.Open(filepath.Join(out, "state.db"), bolt.Options{})
	if err != nil {
		return nil, nil, usageErr(err)
	}
	b := &benchSite{st: st}
	fail := func(err error) (*benchSite, *introspection.Server, error) { st.Close(); return nil, nil, err }
	raw, id, err := d.Canonical()
	if err != nil {
		return fail(err)
	}
	if _, err := st.PutRevision(ctx, statestore.Revision{ID: id, Design: raw, Counts: d.Counts()}); err != nil {
		return fail(usageErr(err))
	}
	if b.ln, err = net.Listen("tcp", listen); err != nil {
		return fail(usageErr(err))
	}
	key := make([]byte, introspection.KeyLen)
	_, _ = rand.Read(key)
	b.cfg = introspection.Config{Store: st, URL: "http://" + b.ln.Addr().String(), Key: key, Log: zerolog.Nop()}
	names := d.NodeNames()
	srv, tokens, err := issueTokens(ctx, b.cfg, d, names)
	if err != nil {
		b.ln.Close()
		return fail(err)
	}
	b.primer = tokens[len(tokens)-1]
	b.names, b.tokens = names[:nodes], tokens[:nodes]
	return b, srv, nil
}

// issueTokens issues every node's token (and stores its answer) with a
// new server of cfg, 64 at a time, and returns the server.
func issueTokens(ctx context.Context, cfg introspection.Config, d *design.Design, names []string) (*introspection.Server, []string, error) {
	srv, err := introspection.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	tokens := make([]string, len(names))
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	sem := make(chan struct{}, 64)
	for i, n := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := srv.UserData(ctx, d, n, "1"); err != nil {
				select {
				case errs <- err:
				default:
				}
			}
			tokens[i] = srv.Token(n, "1")
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return nil, nil, err
	default:
		return srv, tokens, nil
	}
}

// writeBenchStatic fetches each node's answer once and writes it as the
// static file static/self/<i>.json.
func writeBenchStatic(ctx context.Context, base, out string, names, tokens []string) error {
	if err := os.MkdirAll(filepath.Join(out, "static", "self"), 0o755); err != nil {
		return err
	}
	for i, tok := range tokens {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/self", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			return fmt.Errorf("GET /v1/self for %s: %d %v", names[i], resp.StatusCode, err)
		}
		if err := os.WriteFile(filepath.Join(out, "static", "self", fmt.Sprintf("%d.json", i)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// benchSignals serves until ctx ends. SIGUSR1 restarts the server in the
// process: a new Server (empty token, answer and design caches) on the
// same store, key and address, and one request with the extra node's
// token; then it writes DIR/fresh. The load test measures the first
// request of every token after it. SIGUSR2 writes DIR/gc: the process's
// garbage collections so far, the CPU seconds they took and the live heap
// (the load test prints them per measurement). *stop stops the current
// server.
func benchSignals(ctx context.Context, b *benchSite, out string, stop *func()) error {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	defer signal.Stop(usr2)
	addr := b.ln.Addr().String()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-usr2:
			if err := writeGCStats(filepath.Join(out, "gc")); err != nil {
				return err
			}
			continue
		case <-usr1:
		}
		if err := restartBench(ctx, b.cfg, addr, b.primer, stop); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "fresh"), nil, 0o600); err != nil {
			return err
		}
	}
}

// restartBench replaces the running server with a new one on addr and
// primes it with one request.
func restartBench(ctx context.Context, cfg introspection.Config, addr, primer string, stop *func()) error {
	(*stop)()
	runtime.GC()
	srv, err := introspection.New(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	*stop = serveUntilStopped(ctx, srv, ln)
	if err := fetchSelf(ctx, "http://"+addr, primer); err != nil {
		return fmt.Errorf("prime the restarted server: %w", err)
	}
	http.DefaultClient.CloseIdleConnections()
	return nil
}

// writeGCStats writes "CYCLES GC_CPU_SECONDS LIVE_HEAP_BYTES" to path
// (through a rename: the reader never sees half of it).
func writeGCStats(path string) error {
	ms := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(ms)
	line := fmt.Sprintf("%d %.6f %d\n", ms[0].Value.Uint64(), ms[1].Value.Float64(), ms[2].Value.Uint64())
	if err := os.WriteFile(path+".tmp", []byte(line), 0o600); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// serveUntilStopped serves srv on ln until the function it returns is
// called; that function returns when the server has shut down and closed ln.
func serveUntilStopped(ctx context.Context, srv *introspection.Server, ln net.Listener) func() {
	sctx, cancel := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Serve(sctx, ln) }()
	return func() { cancel(); <-served }
}

// fetchSelf gets /v1/self with a token and checks the answer is 200.
func fetchSelf(ctx context.Context, base, tok string) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/self", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET /v1/self: %s", resp.Status)
	}
	return nil
}
