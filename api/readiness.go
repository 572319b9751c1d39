package api

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/singleflight"
)

// DefaultReadyTTL is how long GET /readyz reuses the result of its
// upstream checks (the state store, the drivers: the provisioner's
// probe is eight authenticated MAAS requests).
const DefaultReadyTTL = 5 * time.Second

// MaxReadyTTL bounds Config.ReadyTTL.
const MaxReadyTTL = 5 * time.Minute

// readyCheckTimeout bounds one round of upstream checks.
const readyCheckTimeout = 10 * time.Second

// readiness runs the probe's upstream checks at most once at a time and
// at most once per ttl: callers meanwhile share the round in flight or
// the last result, a failure as much as a success, so that no number of
// probes (anyone may send them) makes more upstream requests than one
// round per ttl.
type readiness struct {
	ttl   time.Duration
	check func(ctx context.Context) error
	log   zerolog.Logger
	group singleflight.Group

	mu      sync.Mutex
	checked time.Time // zero: never
	err     error
}

// newReadiness: ttl 0 is DefaultReadyTTL; over MaxReadyTTL, MaxReadyTTL.
func newReadiness(ttl time.Duration, log zerolog.Logger, check func(ctx context.Context) error) *readiness {
	if ttl <= 0 {
		ttl = DefaultReadyTTL
	}
	return &readiness{ttl: min(ttl, MaxReadyTTL), check: check, log: log}
}

// result is the last round's error when it is under ttl old, else the
// error of a new round (shared with every caller that asks meanwhile). A
// caller whose ctx ends first gets ctx's error; the round goes on.
func (r *readiness) result(ctx context.Context) error {
	if ok, err := r.cached(); ok {
		return err
	}
	ch := r.group.DoChan("ready", func() (any, error) {
		if ok, err := r.cached(); ok { // a round that ended between cached and DoChan
			return nil, err
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readyCheckTimeout)
		defer cancel()
		err := r.check(cctx)
		r.mu.Lock()
		r.checked, r.err = time.Now(), err
		r.mu.Unlock()
		if err != nil {
			r.log.Warn().Err(err).Dur("reused_for", r.ttl).Msg("readiness check failed: /readyz answers 503 (ask it with a token for the reason)")
		}
		return nil, err
	})
	select {
	case res := <-ch:
		return res.Err
	case <-ctx.Done():
		return errors.Join(errNotReady, ctx.Err())
	}
}

// cached is the last result when it is under ttl old.
func (r *readiness) cached() (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.checked.IsZero() || time.Since(r.checked) >= r.ttl {
		return false, nil
	}
	return true, r.err
}

var errNotReady = errors.New("the readiness check did not end in time")
