package orchestrator

import (
	"context"
	"math/rand/v2"
	"time"
)

// Limits bound how much the engine does at once.
type Limits struct {
	// Global bounds driver calls in flight, of every kind (default 64).
	Global int
	// Provisioner bounds calls to the server driver (default 32): MAAS
	// serves a region's API from a few workers.
	Provisioner int
	// OOB bounds calls to the OOB driver (default 32, the IPMI driver's
	// own maxConcurrent): BMC calls are slow (sessions, power waits), and
	// beyond what the driver runs at once they would only hold slots of
	// the global limit that provisioner calls need.
	OOB int
	// Rounds bounds the nodes running a stage's handler at once (default
	// 4×Global, at least 256; gate.go): the others wait without a
	// goroutine.
	Rounds int
	// One operation per BMC is always enforced: BMCs handle few sessions.
}

func (l Limits) withDefaults() Limits {
	if l.Global <= 0 {
		l.Global = 64
	}
	if l.Provisioner <= 0 {
		l.Provisioner = 32
	}
	if l.OOB <= 0 {
		l.OOB = 32
	}
	if l.Rounds <= 0 {
		l.Rounds = max(4*l.Global, 256)
	}
	return l
}

// sem is a counting semaphore.
type sem chan struct{}

func (s sem) acquire(ctx context.Context) error {
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s sem) release() { <-s }

// RetryPolicy is the per-stage retry budget for transient errors.
type RetryPolicy struct {
	Attempts int           // failed calls allowed per stage before the node fails (default 6)
	Base     time.Duration // first backoff (default 2s)
	Max      time.Duration // backoff cap (default 2m)
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = 6
	}
	if p.Base <= 0 {
		p.Base = 2 * time.Second
	}
	if p.Max <= 0 {
		p.Max = 2 * time.Minute
	}
	return p
}

// backoff returns the wait before attempt n+1 after n failures: capped
// exponential with full jitter in [d/2, d].
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.Base
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + time.Duration(rand.Int64N(int64(half)+1))
}
