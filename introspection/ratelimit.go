package introspection

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// Report limits (Config.ReportBurst, Config.ReportEvery): each node has a
// bucket of ReportBurst reports, refilled by one every ReportEvery. A
// report when the bucket is empty is refused with 429 and Retry-After and
// writes nothing: a node (or whoever holds its token) adds at most
// ReportBurst events at once and one per ReportEvery after that, and
// other nodes are not affected. The bootstrap script's curl retries a 429
// after its Retry-After.
const (
	DefaultReportBurst = 30
	DefaultReportEvery = 2 * time.Second
)

// maxBuckets is the size from which idle (full) buckets are dropped.
const maxBuckets = 10000

// reportLimiter is a token bucket per node. It is safe for concurrent use.
type reportLimiter struct {
	burst   float64
	every   time.Duration
	now     func() time.Time
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newReportLimiter(burst int, every time.Duration) *reportLimiter {
	if burst <= 0 {
		burst = DefaultReportBurst
	}
	if every <= 0 {
		every = DefaultReportEvery
	}
	return &reportLimiter{burst: float64(burst), every: every, now: time.Now, buckets: map[string]*bucket{}}
}

// take spends one of node's reports; when it has none left, wait is how
// long until it has one.
func (l *reportLimiter) take(node string) (wait time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.buckets[node]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.dropIdle(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[node] = b
	}
	l.refill(b, now)
	if b.tokens < 1 {
		return time.Duration((1 - b.tokens) * float64(l.every)), false
	}
	b.tokens--
	return 0, true
}

func (l *reportLimiter) refill(b *bucket, now time.Time) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = math.Min(l.burst, b.tokens+float64(d)/float64(l.every))
		b.last = now
	}
}

// dropIdle forgets the buckets that are full again.
func (l *reportLimiter) dropIdle(now time.Time) {
	for n, b := range l.buckets {
		if l.refill(b, now); b.tokens >= l.burst {
			delete(l.buckets, n)
		}
	}
}

// limitReports refuses a node's report beyond its bucket (429).
func (s *Server) limitReports(c echo.Context, node string) error {
	wait, ok := s.reports.take(node)
	if ok {
		return nil
	}
	secs := int(math.Ceil(wait.Seconds()))
	c.Response().Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	s.log.Warn().Str("request_id", requestIDOf(c)).Str("node", node).Msg("boot action report refused: over the node's report rate")
	return problem(http.StatusTooManyRequests, fmt.Sprintf("too many reports from this node: at most %d at once and one every %s after that; send it again after Retry-After", int(s.reports.burst), s.reports.every))
}
