package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// clock is a settable clock for the rate limit.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

// testRenderer is a Renderer on a buffer, with a clock the test sets.
func testRenderer(tty bool) (*Renderer, *bytes.Buffer, *clock) {
	var buf bytes.Buffer
	c := newClock()
	r := New(&buf, tty)
	r.now = c.now
	return r, &buf, c
}

// snap is a deploy of total nodes with the stage counts in order.
func snap(total, done int, elapsed time.Duration, failed []Failure, counts ...int) Snapshot {
	names := []string{"pending", "identify", "commission", "deployed"}
	s := Snapshot{Total: total, Done: done, Failed: failed, Elapsed: elapsed}
	for i, c := range counts {
		s.Stages = append(s.Stages, Stage{Name: names[i], Count: c})
	}
	return s
}

// take returns what was written since the last take.
func take(buf *bytes.Buffer) string {
	s := buf.String()
	buf.Reset()
	return s
}

func TestPlainLine(t *testing.T) {
	r, buf, _ := testRenderer(false)
	r.Update(snap(50, 17, 12340*time.Millisecond, nil, 3, 10, 20, 17))
	want := "12.3s  pending 3  identify 10  commission 20  deployed 17/50  failed 0\n"
	if got := take(buf); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestPlainLineShowsDoneWhenNotTheLastStage(t *testing.T) {
	r, buf, _ := testRenderer(false)
	r.Update(snap(10, 2, time.Second, nil, 5, 3))
	if got, want := take(buf), "1.0s  pending 5  identify 3/10  done 2/10  failed 0\n"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	r.Finish(Snapshot{Total: 4, Done: 3, Elapsed: 2 * time.Second})
	if got, want := take(buf), "2.0s  done 3/4  failed 0\n"; got != want {
		t.Errorf("no stages: got %q\nwant %q", got, want)
	}
}

func TestPlainRateLimit(t *testing.T) {
	r, buf, c := testRenderer(false)
	r.Update(snap(4, 0, 0, nil, 4, 0, 0, 0))
	if got := take(buf); got != "0.0s  pending 4  identify 0  commission 0  deployed 0/4  failed 0\n" {
		t.Fatalf("first update: %q", got)
	}

	// Changed, but within a second of the last line: nothing.
	c.advance(500 * time.Millisecond)
	r.Update(snap(4, 0, 500*time.Millisecond, nil, 2, 2, 0, 0))
	if got := take(buf); got != "" {
		t.Errorf("an update 0.5s after the last line printed %q", got)
	}

	// A second after the last line: the latest counts.
	c.advance(500 * time.Millisecond)
	r.Update(snap(4, 0, time.Second, nil, 1, 3, 0, 0))
	if got := take(buf); got != "1.0s  pending 1  identify 3  commission 0  deployed 0/4  failed 0\n" {
		t.Errorf("an update 1s after the last line: %q", got)
	}

	// Unchanged counts are not printed again, however late (the elapsed
	// time alone is no change).
	c.advance(10 * time.Second)
	r.Update(snap(4, 0, 11*time.Second, nil, 1, 3, 0, 0))
	if got := take(buf); got != "" {
		t.Errorf("unchanged counts printed %q", got)
	}

	// A change held back by the rate limit shows at the next update after
	// the second, even if nothing changed since.
	r.Update(snap(4, 0, 11*time.Second, nil, 0, 4, 0, 0))
	take(buf)
	c.advance(100 * time.Millisecond)
	r.Update(snap(4, 0, 11100*time.Millisecond, nil, 0, 0, 4, 0))
	if got := take(buf); got != "" {
		t.Errorf("rate-limited change printed %q", got)
	}
	c.advance(time.Second)
	r.Update(snap(4, 0, 12100*time.Millisecond, nil, 0, 0, 4, 0))
	if got := take(buf); got != "12.1s  pending 0  identify 0  commission 4  deployed 0/4  failed 0\n" {
		t.Errorf("held-back change: %q", got)
	}

	// Finish always prints, rate limit or not, changed or not.
	r.Finish(snap(4, 0, 12100*time.Millisecond, nil, 0, 0, 4, 0))
	if got := take(buf); got != "12.1s  pending 0  identify 0  commission 4  deployed 0/4  failed 0\n" {
		t.Errorf("finish: %q", got)
	}
}

func TestPlainFailuresOnceAndNoANSI(t *testing.T) {
	r, buf, c := testRenderer(false)
	f1 := Failure{Node: "node-1", Stage: "commission", Reason: "Failed commissioning"}
	f2 := Failure{Node: "node-2", Stage: "deploy", Reason: "curtin failed:\nexit 3 \x1b[31mred\x1b[0m"}
	var out strings.Builder
	r.Update(snap(3, 0, 0, nil, 3, 0, 0, 0))
	out.WriteString(take(buf))
	c.advance(100 * time.Millisecond)
	r.Update(snap(3, 0, 100*time.Millisecond, []Failure{f1}, 0, 2, 0, 0))
	got := take(buf)
	out.WriteString(got)
	// The failure is printed at once; the counts wait for the rate limit.
	if got != "FAILED node-1 (commission): Failed commissioning\n" {
		t.Errorf("first failure: %q", got)
	}
	c.advance(2 * time.Second)
	r.Update(snap(3, 0, 2100*time.Millisecond, []Failure{f1, f2}, 0, 1, 0, 0))
	got = take(buf)
	out.WriteString(got)
	want := "FAILED node-2 (deploy): curtin failed: exit 3  [31mred [0m\n" +
		"2.1s  pending 0  identify 1  commission 0  deployed 0/3  failed 2\n"
	if got != want {
		t.Errorf("second failure:\ngot  %q\nwant %q", got, want)
	}
	r.Finish(snap(3, 1, 3*time.Second, []Failure{f1, f2}, 0, 0, 0, 1))
	out.WriteString(take(buf))
	all := out.String()
	for _, f := range []string{"node-1", "node-2"} {
		if n := strings.Count(all, "FAILED "+f); n != 1 {
			t.Errorf("FAILED %s printed %d times in\n%s", f, n, all)
		}
	}
	if strings.ContainsRune(all, '\x1b') {
		t.Errorf("ANSI escape in plain output %q", all)
	}
	if !strings.HasSuffix(all, "3.0s  pending 0  identify 0  commission 0  deployed 1/3  failed 2\n") {
		t.Errorf("finish line missing: %q", all)
	}
}

func TestTTYFirstDraw(t *testing.T) {
	r, buf, _ := testRenderer(true)
	r.barWidth = 10
	r.Update(snap(50, 0, 0, nil, 50, 0, 0, 0))
	want := "" +
		"pending     [##########]  50/50\n" +
		"identify    [..........]   0/50\n" +
		"commission  [..........]   0/50\n" +
		"deployed    [..........]   0/50\n" +
		"done 0/50, failed 0, elapsed 0.0s\n"
	if got := take(buf); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestTTYRedrawAndFailures(t *testing.T) {
	r, buf, _ := testRenderer(true)
	r.barWidth = 10
	r.Update(snap(10, 0, 0, nil, 10, 0, 0, 0))
	take(buf)
	f := Failure{Node: "node-7", Stage: "identify", Reason: "no BMC answers"}
	r.Update(snap(10, 2, 12340*time.Millisecond, []Failure{f}, 3, 4, 0, 2))
	const up, clr, clearBelow = "\x1b[5A", "\r\x1b[2K", "\x1b[J"
	want := up +
		clr + "FAILED node-7 (identify): no BMC answers\n" +
		clr + "pending     [###.......]   3/10\n" +
		clr + "identify    [####......]   4/10\n" +
		clr + "commission  [..........]   0/10\n" +
		clr + "deployed    [##........]   2/10\n" +
		clr + "done 2/10, failed 1, elapsed 12.3s\n" +
		clearBelow
	if got := take(buf); got != want {
		t.Errorf("redraw:\ngot  %q\nwant %q", got, want)
	}
	// The failure stays above the block: the next redraw goes up over the
	// block only, and does not print it again.
	r.Update(snap(10, 9, 20*time.Second, []Failure{f}, 0, 0, 0, 9))
	got := take(buf)
	if !strings.HasPrefix(got, up) || strings.Contains(got, "FAILED") {
		t.Errorf("second redraw %q: want it to go up 5 lines and not repeat the failure", got)
	}
	if !strings.Contains(got, clr+"deployed    [#########.]   9/10\n") {
		t.Errorf("second redraw %q lacks the deployed bar at 9/10", got)
	}
	// Finish draws once more and leaves the cursor below: what follows is
	// a new block, not a redraw.
	r.Finish(snap(10, 9, 21*time.Second, []Failure{f}, 0, 0, 0, 9))
	if got := take(buf); !strings.HasPrefix(got, up) || !strings.HasSuffix(got, "elapsed 21.0s\n"+clearBelow) {
		t.Errorf("finish %q", got)
	}
	r.Update(snap(10, 9, 22*time.Second, []Failure{f}, 0, 0, 0, 9))
	if got := take(buf); strings.Contains(got, "\x1b[") {
		t.Errorf("an update after Finish redrew over the finished block: %q", got)
	}
}

func TestTTYShorterBlockIsCleared(t *testing.T) {
	r, buf, _ := testRenderer(true)
	r.Update(snap(4, 0, 0, nil, 4, 0, 0, 0))
	take(buf)
	r.Update(snap(4, 0, 0, nil, 4, 0))
	got := take(buf)
	if !strings.HasPrefix(got, "\x1b[5A") || !strings.HasSuffix(got, "\x1b[J") {
		t.Errorf("shrinking redraw %q: want up 5 lines, and the rest cleared", got)
	}
	if r.lines != 3 {
		t.Errorf("block of %d lines, want 3", r.lines)
	}
}

func TestBarWidthsProportional(t *testing.T) {
	r := New(nil, true)
	r.barWidth = 20
	for _, c := range []struct{ count, total, hashes int }{
		{0, 50, 0}, {50, 50, 20}, {25, 50, 10}, {10, 50, 4}, {12, 50, 5}, // 4.8 rounds to 5
		{1, 50, 1}, // 0.4, but a stage with nodes shows
		{1, 1000, 1}, {3, 4, 15}, {5, 0, 0}, {60, 50, 20},
	} {
		bar := r.bar(c.count, c.total)
		if len(bar) != 20 || strings.Count(bar, "#") != c.hashes || strings.Trim(bar, "#") != strings.Repeat(".", 20-c.hashes) {
			t.Errorf("bar(%d, %d) = %q, want %d '#' then dots, 20 in all", c.count, c.total, bar, c.hashes)
		}
	}
	// Twice the nodes, twice the bar.
	var buf bytes.Buffer
	r = New(&buf, true)
	r.Update(snap(60, 0, 0, nil, 10, 20, 30))
	lines := strings.Split(buf.String(), "\n")
	for i, want := range []int{5, 10, 15} {
		if got := strings.Count(lines[i], "#"); got != want {
			t.Errorf("line %q: %d '#', want %d", lines[i], got, want)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	if IsTerminal(nil) {
		t.Error("nil is a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a regular file is a terminal")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if IsTerminal(pw) {
		t.Error("a pipe is a terminal")
	}
}
