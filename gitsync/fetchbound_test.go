package gitsync

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/gitsync/gittest"
	"github.com/slipway-dev/slipway/ingest/archive"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
)

// TestFetchStoppedAtTheBound: a push of a large file (about 24 MiB
// packed) to a repository whose cache is bounded at 1 MiB (16 x
// designMaxBytes) is stopped while git writes it, not refused once the
// whole of it is on disk: the refusal says so and names a size far
// below the pack's; nothing is applied and the cache is gone.
func TestFetchStoppedAtTheBound(t *testing.T) {
	up := gittest.NewUpstream(t)
	c1 := up.Commit("one", map[string]string{"site/site.yaml": siteYAML})
	a := newApplier(t)
	d := gittest.StartDaemon(t, up.Root)
	lim := archive.Limits{Limits: yamlingest.Limits{FileBytes: 16 << 10, DesignBytes: 64 << 10}, Files: 10}
	f := follow(t, a, d.URL, func(c *Config) { c.Limits = lim })
	f.Round(t.Context(), "test")
	if a.current(t) != c1 {
		t.Fatalf("the first commit was not applied: %+v", lastEvent(t, f))
	}
	c2 := up.Commit("a large file", map[string]string{"blob.txt": randomText(t, 48<<20)})
	f.Round(t.Context(), "test")
	ev := lastEvent(t, f)
	m := regexp.MustCompile(`passed (\d+) bytes while it was written`).FindStringSubmatch(ev.Reason)
	if ev.Outcome != OutcomeRefused || ev.Commit != c2 || m == nil {
		t.Fatalf("a fetch over the bound: %+v; want refused while it was written", ev)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	t.Logf("stopped at %d bytes", n)
	if n > 12<<20 {
		t.Errorf("stopped at %d bytes, want well under the pack's ~24 MiB", n)
	}
	if a.current(t) != c1 || !strings.Contains(ev.Reason, "16 x designMaxBytes") {
		t.Errorf("current %s, reason %q", a.current(t), ev.Reason)
	}
	if left := dirBytes(f.cfg.Dir); left > 1<<20 {
		t.Errorf("%d bytes left in %s after the refusal", left, f.cfg.Dir)
	}
}
