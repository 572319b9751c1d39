package api

import (
	"context"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// GET /tasks/{id}/timeline: where a task's time goes, from its events
// (the dashboard's task view plots it). The server reads the event log
// once per task and keeps what it found (a few tasks at a time), so a
// page asking every few seconds reads only the events written since.
const (
	timelinePoints  = 120       // points of the answer, evenly spaced
	timelineNodes   = 100_000   // nodes followed per task
	timelineChanges = 1_000_000 // stage changes kept per task (16 bytes each)
	timelinePages   = 200       // event pages (1,000 each) read per request
	timelineTasks   = 8         // tasks kept
	timelinePage    = 1000
)

// Series besides the stages.
const seriesQueued = "queued"

// outcomeSeries are the outcomes that end a node's run short of its goal:
// the node is counted under the outcome, not its stage.
var outcomeSeries = []string{string(record.OutcomeFailed), string(record.OutcomeCancelled), string(record.OutcomeManual)}

// timelines keeps the traces of the tasks last asked about.
type timelines struct {
	mu     sync.Mutex
	traces map[string]*trace
}

// get is id's trace, a new one when none is kept (dropping the one
// asked about longest ago when timelineTasks are).
func (ts *timelines) get(id string) *trace {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.traces == nil {
		ts.traces = map[string]*trace{}
	}
	tr := ts.traces[id]
	if tr == nil {
		if len(ts.traces) >= timelineTasks {
			var oldest string
			for k, v := range ts.traces {
				if oldest == "" || v.used.Before(ts.traces[oldest].used) {
					oldest = k
				}
			}
			delete(ts.traces, oldest)
		}
		tr = &trace{task: id, nodes: map[string]*nodeTrace{}, index: map[string]int{seriesQueued: 0}, series: []string{seriesQueued},
			before: [][]int32{{0}}, runs: map[int]*stageRuns{}}
		ts.traces[id] = tr
	}
	tr.used = time.Now()
	return tr
}

// trace is what the events of one task said so far.
type trace struct {
	mu   sync.Mutex
	task string
	used time.Time // guarded by timelines.mu
	// after is the last event read (of any task: the log is read whole).
	after uint64
	// caughtUp: the task had finished when the log was last read to its end.
	caughtUp bool
	nodes    map[string]*nodeTrace
	series   []string       // in the order first reached
	index    map[string]int // series -> its index
	// before[a][b]: how many times a node entered series b after it had
	// entered a (the first 64 series): the stages' order.
	before    [][]int32
	changes   []change // in the log's order
	runs      map[int]*stageRuns
	truncated bool
}

type nodeTrace struct {
	idx    int32
	seen   uint64 // the series (of the first 64) it entered
	series int
	since  time.Time // when it entered its stage
	open   bool      // in a stage it has yet to leave (not queued, ended or terminal)
}

// change: a node moved to a series at a time.
type change struct {
	at   int64 // Unix nanoseconds
	node int32
	to   int32
}

// stageRuns are the durations (seconds) of a stage's runs that ended.
type stageRuns struct{ total, wait []float64 }

func (s *Server) taskTimeline(c echo.Context) error {
	ctx := c.Request().Context()
	t, _, err := s.cfg.Engine.Task(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	tr := s.timelines.get(t.ID)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	complete, err := tr.read(ctx, s.cfg.Engine, t)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tr.answer(t, complete, time.Now().UTC()))
}

// eventReader is what a trace reads: the engine's event log.
type eventReader interface {
	Events(ctx context.Context, after uint64, limit int, task, node string) ([]record.Event, error)
}

// read takes in the events written since the last read, at most
// timelinePages pages; complete when it reached the log's end.
func (tr *trace) read(ctx context.Context, log eventReader, t record.Task) (complete bool, err error) {
	finished := t.Status.Finished()
	if tr.caughtUp && finished {
		return true, nil
	}
	for range timelinePages {
		evs, err := log.Events(ctx, tr.after, timelinePage, "", "")
		if err != nil {
			return false, err
		}
		for i := range evs {
			tr.after = evs[i].Seq
			if evs[i].Task == tr.task && evs[i].Node != "" {
				tr.add(&evs[i])
			}
		}
		if len(evs) < timelinePage {
			tr.caughtUp = finished
			return true, nil
		}
	}
	return false, nil
}

// add takes in one event of the task about a node.
func (tr *trace) add(ev *record.Event) {
	n := tr.nodes[ev.Node]
	if n == nil {
		if len(tr.nodes) >= timelineNodes {
			tr.truncated = true
			return
		}
		n = &nodeTrace{idx: int32(len(tr.nodes))}
		tr.nodes[ev.Node] = n
	}
	switch {
	case ev.Kind == "transition":
		if n.open {
			tr.ended(n, ev)
		}
		tr.move(n, string(ev.Stage), ev.Time, true)
	case ev.Kind == string(record.OutcomeSucceeded):
		tr.move(n, string(ev.Stage), ev.Time, false) // its terminal stage
	case slices.Contains(outcomeSeries, ev.Kind):
		tr.move(n, ev.Kind, ev.Time, false)
	case !n.open && ev.Stage != "":
		// a node resumed (a verb, a restarted engine): its stage runs again
		tr.move(n, string(ev.Stage), ev.Time, true)
	}
}

// ended records the run of n's stage that ev ends.
func (tr *trace) ended(n *nodeTrace, ev *record.Event) {
	total := ev.Time.Sub(n.since).Seconds()
	if total < 0 {
		total = 0
	}
	wait := min(float64(ev.ProvisionerWait)/1000, total)
	r := tr.runs[n.series]
	if r == nil {
		r = &stageRuns{}
		tr.runs[n.series] = r
	}
	r.total = append(r.total, total)
	r.wait = append(r.wait, max(wait, 0))
}

// move puts n in series s from at.
func (tr *trace) move(n *nodeTrace, s string, at time.Time, open bool) {
	i, ok := tr.index[s]
	if !ok {
		i = len(tr.series)
		tr.index[s] = i
		tr.series = append(tr.series, s)
		for a := range tr.before {
			tr.before[a] = append(tr.before[a], 0)
		}
		tr.before = append(tr.before, make([]int32, len(tr.series)))
	}
	if i < 64 {
		for a := range min(len(tr.series), 64) {
			if a != i && n.seen&(1<<a) != 0 {
				tr.before[a][i]++
			}
		}
		n.seen |= 1 << i
	}
	n.series, n.since, n.open = i, at, open
	if len(tr.changes) >= timelineChanges {
		tr.truncated = true
		return
	}
	tr.changes = append(tr.changes, change{at: at.UnixNano(), node: n.idx, to: int32(i)})
}

// answer is the trace as the API answers it.
func (tr *trace) answer(t record.Task, complete bool, now time.Time) apitypes.TaskTimeline {
	start := t.Created
	if !t.Started.IsZero() {
		start = t.Started
	}
	end := now
	if t.Status.Finished() && !t.Finished.IsZero() {
		end = t.Finished
	}
	if n := len(tr.changes); n > 0 && tr.changes[n-1].at > end.UnixNano() {
		end = time.Unix(0, tr.changes[n-1].at).UTC()
	}
	end = maxTime(end, start)
	order := tr.order()
	out := apitypes.TaskTimeline{Task: t.ID, Status: string(t.Status), Nodes: max(len(t.Nodes), len(tr.nodes)), Start: start, End: end,
		Series: make([]string, len(order)), Complete: complete, Truncated: tr.truncated,
		Stages: make([]apitypes.StageTimes, 0, len(order))} // [] before a stage ended: the dashboard iterates it
	pos := make([]int, len(order)) // a series' index -> its place in the answer
	for place, i := range order {
		out.Series[place], pos[i] = tr.series[i], place
	}
	out.Points = tr.points(out.Nodes, start, end, pos)
	for _, i := range order {
		if r := tr.runs[i]; r != nil {
			out.Stages = append(out.Stages, r.times(tr.series[i]))
		}
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// order lists the series: queued, the stages in the order the nodes
// went through them, then the outcomes short of the goal. A stage comes
// next when no stage left to place was entered after it more often than
// before it (a stage some nodes skip, images, still sorts between its
// neighbours); among those, the one first reached.
func (tr *trace) order() []int {
	var left []int
	for i, s := range tr.series[1:] {
		if !slices.Contains(outcomeSeries, s) {
			left = append(left, i+1)
		}
	}
	out := append(make([]int, 0, len(tr.series)), 0)
	for len(left) > 0 {
		pick := 0
		for k, c := range left {
			if !slices.ContainsFunc(left, func(o int) bool { return tr.follows(c, o) }) {
				pick = k
				break
			}
		}
		out = append(out, left[pick])
		left = slices.Delete(left, pick, pick+1)
	}
	for _, s := range outcomeSeries {
		if i, ok := tr.index[s]; ok {
			out = append(out, i)
		}
	}
	return out
}

// follows reports whether nodes entered series c after o more often
// than before it.
func (tr *trace) follows(c, o int) bool {
	return c != o && tr.before[o][c] > tr.before[c][o]
}

// points counts the nodes in each series at timelinePoints times from
// start to end (one point when they are the same), every node queued
// until its first change; pos places a series in the answer.
func (tr *trace) points(nodes int, start, end time.Time, pos []int) []apitypes.TimelinePoint {
	n := timelinePoints
	if !end.After(start) {
		n = 1
	}
	cur := make([]int32, len(tr.nodes)) // each node's series, 0 (queued) at first
	counts := make([]int, len(pos))
	counts[pos[0]] = nodes
	span := end.Sub(start)
	out := make([]apitypes.TimelinePoint, n)
	k := 0
	for p := range n {
		at := end
		if n > 1 {
			at = start.Add(time.Duration(float64(span) * float64(p) / float64(n-1)))
		}
		for ; k < len(tr.changes) && (tr.changes[k].at <= at.UnixNano() || p == n-1); k++ {
			c := tr.changes[k]
			counts[pos[cur[c.node]]]--
			counts[pos[c.to]]++
			cur[c.node] = c.to
		}
		out[p] = apitypes.TimelinePoint{At: math.Round(at.Sub(start).Seconds()*1000) / 1000, Counts: slices.Clone(counts)}
	}
	return out
}

// times are the percentiles of a stage's runs.
func (r *stageRuns) times(stage string) apitypes.StageTimes {
	own := make([]float64, len(r.total))
	for i := range r.total {
		own[i] = r.total[i] - r.wait[i]
	}
	return apitypes.StageTimes{Stage: stage, Done: len(r.total), Total: percentiles(slices.Clone(r.total)),
		Provisioner: percentiles(slices.Clone(r.wait)), Slipway: percentiles(own)}
}

// percentiles are the nearest-rank 50th and 95th percentiles of v
// (sorted in place), rounded to milliseconds.
func percentiles(v []float64) apitypes.Percentiles {
	if len(v) == 0 {
		return apitypes.Percentiles{}
	}
	slices.Sort(v)
	rank := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(v)))) - 1
		return math.Round(v[max(i, 0)]*1000) / 1000
	}
	return apitypes.Percentiles{P50: rank(0.50), P95: rank(0.95)}
}
