package introspection

import (
	"context"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/slipway-dev/slipway/statestore"
)

// Follow keeps this server in step with the other processes sharing its
// store, until ctx ends: a token another process rotated, reissued or
// revoked is dropped from this server's cache, so it is refused here too
// (without Follow it would be answered from the cache until this process
// restarts), and a report another process stored or dropped calls the
// NotifyReports func with its node, as one stored here does. w is the
// server's store as a statestore.Watcher. Changes this process made come
// back through the watch as well: they are forgotten and notified again,
// which costs a cache miss and a spare wake-up. When the watch of the
// tokens may have missed changes, every cached session is dropped. It
// returns nil when ctx ends, else the error of the watch that ended first
// (the store was closed, say).
func (s *Server) Follow(ctx context.Context, w statestore.Watcher) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return w.WatchRecords(gctx, collTokens, s.tokenChanged) })
	g.Go(func() error { return w.WatchRecords(gctx, collReports, s.reportChanged) })
	err := g.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// tokenChanged drops the cached session of the token whose record
// changed (key: its hash, hex), or every session ("": changes missed).
func (s *Server) tokenChanged(key string) {
	if key == "" {
		s.tokens.forgetAll()
		return
	}
	s.tokens.forget(key)
}

// reportChanged tells the NotifyReports func of the node whose report
// changed (key: reportKey's node/deployment/action). Missed changes
// ("") are not told: the engine also polls BootstrapStatus.
func (s *Server) reportChanged(key string) {
	node, _, ok := strings.Cut(key, "/")
	if !ok || node == "" {
		return
	}
	if fn, _ := s.onReport.Load().(func(string)); fn != nil {
		fn(node)
	}
}
