// Package progress draws a deploy's progress on a terminal or a log: how
// many nodes are in each stage of the workflow, how many finished, and why
// the failed ones failed.
//
// On a terminal the Renderer redraws a block in place (ANSI cursor up and
// clear line): one bar per stage and a summary line, with each new failure
// printed once above the block, where it stays. Elsewhere (a pipe, a file,
// CI) it never writes ANSI: it prints a compact line of the counts when
// they changed, at most once a second, and each new failure once, on its
// own line.
package progress

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Stage is the number of nodes currently in one stage of the workflow.
type Stage struct {
	Name  string
	Count int
}

// Failure is a node that finished unsuccessfully.
type Failure struct {
	Node, Stage, Reason string
}

// Snapshot is the state of a deploy at one moment.
type Snapshot struct {
	Total   int
	Stages  []Stage   // in workflow order, e.g. pending, oob-prepare, identify, commission, configure, deploy, bootstrap, deployed
	Done    int       // nodes finished successfully
	Failed  []Failure // finished unsuccessfully, with reasons
	Elapsed time.Duration
}

// defaultBarWidth is the width of a full bar (Total nodes), in characters.
const defaultBarWidth = 30

// minInterval is the least time between two count lines when not on a
// terminal.
const minInterval = time.Second

// Renderer draws snapshots to a writer. It is safe for concurrent use.
// Write errors are ignored: progress output is best effort.
type Renderer struct {
	mu       sync.Mutex
	w        io.Writer
	tty      bool
	barWidth int
	now      func() time.Time // the clock of the rate limit (tests replace it)

	failed map[Failure]bool // failures printed

	// On a terminal: the lines of the block drawn last, which the next
	// draw goes back up over (0: nothing to redraw).
	lines int

	// Not on a terminal: the counts printed last, and when.
	lastCounts  string
	lastPrinted time.Time
	printed     bool
}

// New returns a Renderer writing to w; tty selects in-place redrawing with
// ANSI escapes (see IsTerminal).
func New(w io.Writer, tty bool) *Renderer {
	return &Renderer{w: w, tty: tty, barWidth: defaultBarWidth, now: time.Now, failed: map[Failure]bool{}}
}

// Update draws s. On a terminal it redraws the block; elsewhere it prints
// the new failures, and the counts if they changed since the line printed
// last and that was at least a second ago.
func (r *Renderer) Update(s Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.draw(s, false)
}

// Finish draws s a last time (elsewhere than on a terminal the counts line
// is printed whatever the rate limit), and leaves the cursor below it: a
// later Update starts a new block.
func (r *Renderer) Finish(s Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.draw(s, true)
	r.lines = 0
}

func (r *Renderer) draw(s Snapshot, final bool) {
	var b strings.Builder
	if r.tty {
		r.drawTTY(&b, s)
	} else {
		r.drawPlain(&b, s, final)
	}
	if b.Len() > 0 {
		_, _ = io.WriteString(r.w, b.String())
	}
}

// newFailures returns the failures of s not printed yet, and marks them
// printed.
func (r *Renderer) newFailures(s Snapshot) []Failure {
	var out []Failure
	for _, f := range s.Failed {
		if !r.failed[f] {
			r.failed[f] = true
			out = append(out, f)
		}
	}
	return out
}

func failureLine(f Failure) string {
	return "FAILED " + clean(f.Node) + " (" + clean(f.Stage) + "): " + clean(f.Reason)
}

// drawTTY goes back up over the block drawn last, prints the new failures
// there (they stay above the block) and draws the block again:
//
//	FAILED node-3 (commission): Failed commissioning
//	pending     [##............................]   3/50
//	...
//	deployed    [##########....................]  17/50
//	done 17/50, failed 1, elapsed 12.3s
func (r *Renderer) drawTTY(b *strings.Builder, s Snapshot) {
	redraw := r.lines > 0
	if redraw {
		fmt.Fprintf(b, "\x1b[%dA", r.lines)
	}
	line := func(text string) {
		if redraw {
			b.WriteString("\r\x1b[2K")
		}
		b.WriteString(text)
		b.WriteByte('\n')
	}
	for _, f := range r.newFailures(s) {
		line(failureLine(f))
	}
	nameW := 0
	for _, st := range s.Stages {
		nameW = max(nameW, len(clean(st.Name)))
	}
	countW := len(strconv.Itoa(max(s.Total, 0)))
	for _, st := range s.Stages {
		line(fmt.Sprintf("%-*s  [%s]  %*d/%d", nameW, clean(st.Name), r.bar(st.Count, s.Total), countW, st.Count, s.Total))
	}
	line(fmt.Sprintf("done %d/%d, failed %d, elapsed %s", s.Done, s.Total, len(s.Failed), seconds(s.Elapsed)))
	if redraw {
		b.WriteString("\x1b[J") // what is left of a longer block drawn before
	}
	r.lines = len(s.Stages) + 1
}

// bar is count's share of total in barWidth characters, rounded to the
// nearest; a stage with nodes in it gets at least one '#'.
func (r *Renderer) bar(count, total int) string {
	n := 0
	if total > 0 && count > 0 {
		n = (2*count*r.barWidth + total) / (2 * total)
		n = min(max(n, 1), r.barWidth)
	}
	return strings.Repeat("#", n) + strings.Repeat(".", r.barWidth-n)
}

// drawPlain prints each new failure on its own line, and the counts when
// they changed (or final), at most once per minInterval (unless final):
//
//	12.3s  pending 3  identify 10  commission 20  deployed 17/50  failed 0
//
// The last stage, the workflow's goal, is shown against the total; when
// Done is not its count (or there are no stages), "done D/N" follows.
func (r *Renderer) drawPlain(b *strings.Builder, s Snapshot, final bool) {
	for _, f := range r.newFailures(s) {
		b.WriteString(failureLine(f))
		b.WriteByte('\n')
	}
	counts := plainCounts(s)
	now := r.now()
	if !final {
		if r.printed && counts == r.lastCounts {
			return
		}
		if r.printed && now.Sub(r.lastPrinted) < minInterval {
			return
		}
	}
	b.WriteString(seconds(s.Elapsed))
	b.WriteString("  ")
	b.WriteString(counts)
	b.WriteByte('\n')
	r.lastCounts, r.lastPrinted, r.printed = counts, now, true
}

// plainCounts is the counts part of the plain line (without the time).
func plainCounts(s Snapshot) string {
	var parts []string
	for i, st := range s.Stages {
		p := clean(st.Name) + " " + strconv.Itoa(st.Count)
		if i == len(s.Stages)-1 {
			p += "/" + strconv.Itoa(s.Total)
		}
		parts = append(parts, p)
	}
	if n := len(s.Stages); n == 0 || s.Stages[n-1].Count != s.Done {
		parts = append(parts, fmt.Sprintf("done %d/%d", s.Done, s.Total))
	}
	parts = append(parts, "failed "+strconv.Itoa(len(s.Failed)))
	return strings.Join(parts, "  ")
}

// seconds formats a duration as seconds with one decimal: "12.3s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
}

// clean replaces control characters (newlines, escapes) with spaces, so a
// reason cannot break a line or the layout, or smuggle in ANSI sequences.
func clean(s string) string {
	return strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			return ' '
		}
		return c
	}, s)
}

// IsTerminal reports whether f is a terminal (a character device), where
// a Renderer may redraw in place.
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
