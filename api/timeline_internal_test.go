package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/orchestrator/record"
)

// logOf serves a fixed event log as the engine would (after, limit).
type logOf []record.Event

func (l logOf) Events(_ context.Context, after uint64, limit int, _, _ string) ([]record.Event, error) {
	i, _ := slices.BinarySearchFunc(l, after+1, func(ev record.Event, seq uint64) int { return cmp.Compare(ev.Seq, seq) })
	return slices.Clone(l[i:min(i+limit, len(l))]), nil
}

// TestTimelineCounts: three nodes of a task (one never starts, one
// deploys, one fails), another task's events beside them. The last point
// counts each node once where it ended; the deploy stage's percentiles
// split its time by the wait its transition carries; the other task's
// node is not counted.
func TestTimelineCounts(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	var l logOf
	ev := func(s float64, task, node, kind string, stage record.Stage, waitMs int64) {
		l = append(l, record.Event{Seq: uint64(len(l) + 1), Time: at(s), Task: task, Node: node, Kind: kind, Stage: stage, ProvisionerWait: waitMs})
	}
	ev(0, "T", "a", "transition", "configure", 0)
	ev(0, "T", "b", "transition", "configure", 0)
	ev(1, "U", "x", "transition", "deploy", 0)
	ev(2, "T", "a", "transition", "deploy", 0)
	ev(3, "T", "b", "transition", "deploy", 0)
	ev(4, "T", "b", "retry", "deploy", 0)
	ev(12, "T", "a", "transition", "deployed", 8000) // 10 s in deploy, 8 s of it on the provisioner
	ev(12, "T", "a", "succeeded", "deployed", 0)
	ev(13, "T", "b", "failed", "deploy", 0)
	task := record.Task{ID: "T", Status: record.TaskPartiallySucceeded, Nodes: []string{"a", "b", "c"}, Started: t0, Finished: at(14)}

	var ts timelines
	tr := ts.get("T")
	complete, err := tr.read(t.Context(), l, task)
	if err != nil || !complete {
		t.Fatalf("read: %v, complete %v", err, complete)
	}
	got := tr.answer(task, complete, at(100))
	want := []string{"queued", "configure", "deploy", "deployed", "failed"}
	if !slices.Equal(got.Series, want) {
		t.Fatalf("series %v, want %v", got.Series, want)
	}
	if len(got.Points) != timelinePoints || got.Points[len(got.Points)-1].At != 14 {
		t.Fatalf("%d points, the last at %v s (want %d, 14 s: the task's end)", len(got.Points), got.Points[len(got.Points)-1].At, timelinePoints)
	}
	if last := got.Points[len(got.Points)-1].Counts; !slices.Equal(last, []int{1, 0, 0, 1, 1}) {
		t.Errorf("last point %v, want c queued, a deployed, b failed", last)
	}
	if first := got.Points[0].Counts; !slices.Equal(first, []int{1, 2, 0, 0, 0}) {
		t.Errorf("first point %v, want two nodes in configure", first)
	}
	var deploy *stageP50
	for _, s := range got.Stages {
		if s.Stage == "deploy" {
			deploy = &stageP50{s.Done, s.Total.P50, s.Provisioner.P50, s.Slipway.P50}
		}
	}
	if deploy == nil || *deploy != (stageP50{1, 10, 8, 2}) {
		t.Errorf("deploy stage times %+v, want 1 done, 10 s, 8 s on the provisioner, 2 s Slipway's", deploy)
	}
	// Asked again: nothing new is read, the same answer.
	if again := tr.answer(task, true, at(100)); !slices.Equal(again.Points[119].Counts, got.Points[119].Counts) {
		t.Errorf("second answer %v", again.Points[119].Counts)
	}
}

// stageP50 is a stage's runs and medians.
type stageP50 struct {
	done                 int
	total, wait, slipway float64
}

// TestTimelineBounds: a task of more nodes than the trace follows says
// truncated and counts the nodes it follows; a read stops after
// timelinePages pages and says incomplete, the next goes on.
func TestTimelineBounds(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	var l logOf
	for i := range timelinePage*timelinePages + 10 {
		l = append(l, record.Event{Seq: uint64(i + 1), Time: t0, Task: "other", Node: "n", Kind: "transition", Stage: "deploy"})
	}
	l = append(l, record.Event{Seq: uint64(len(l) + 1), Time: t0, Task: "T", Node: "a", Kind: "transition", Stage: "deploy"})
	task := record.Task{ID: "T", Status: record.TaskRunning, Nodes: []string{"a"}, Started: t0}
	var ts timelines
	tr := ts.get("T")
	if complete, err := tr.read(t.Context(), l, task); err != nil || complete {
		t.Fatalf("first read: complete %v, %v (want incomplete at %d pages)", complete, err, timelinePages)
	}
	if complete, err := tr.read(t.Context(), l, task); err != nil || !complete || len(tr.nodes) != 1 {
		t.Fatalf("second read: complete %v, %v, %d nodes", complete, err, len(tr.nodes))
	}
	for i := range timelineNodes + 1 {
		tr.add(&record.Event{Time: t0, Task: "T", Node: "n" + strconv.Itoa(i), Kind: "transition", Stage: "deploy"})
	}
	if got := tr.answer(task, true, t0.Add(time.Minute)); !got.Truncated || len(tr.nodes) != timelineNodes {
		t.Errorf("truncated %v with %d nodes followed", got.Truncated, len(tr.nodes))
	}
	for i := range timelineTasks + 1 {
		ts.get("task" + strconv.Itoa(i))
	}
	if len(ts.traces) != timelineTasks {
		t.Errorf("%d traces kept, want %d", len(ts.traces), timelineTasks)
	}
}

// rollout is the event log of a task of n nodes going through stages
// one after the other, a second apart, each node a few ms after the last.
func rollout(n int, stages []record.Stage) (logOf, record.Task) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	l := make(logOf, 0, n*(len(stages)+1))
	for s, st := range stages {
		for i := range n {
			l = append(l, record.Event{Seq: uint64(len(l) + 1), Time: t0.Add(time.Duration(s)*time.Second + time.Duration(i)*50*time.Microsecond),
				Task: "T", Node: "n" + strconv.Itoa(i), Kind: "transition", Stage: st, ProvisionerWait: int64(s * 100)})
		}
	}
	task := record.Task{ID: "T", Status: record.TaskRunning, Started: t0}
	for i := range n {
		task.Nodes = append(task.Nodes, "n"+strconv.Itoa(i))
	}
	return l, task
}

var rolloutStages = []record.Stage{"oob-prepare", "identify", "commission", "as-built", "configure", "images", "deploy", "bootstrap", "deployed"}

// BenchmarkTimelineRead10000: the first GET /tasks/{id}/timeline of a
// 10,000-node task whose 90,000 events are in the log: reading them all
// (already decoded here: the store's decoding comes on top) and the answer.
func BenchmarkTimelineRead10000(b *testing.B) {
	l, task := rollout(10000, rolloutStages)
	b.ReportAllocs()
	for b.Loop() {
		var ts timelines
		tr := ts.get("T")
		for complete := false; !complete; {
			var err error
			if complete, err = tr.read(b.Context(), l, task); err != nil {
				b.Fatal(err)
			}
		}
		tr.answer(task, true, task.Started.Add(time.Hour))
	}
}

// BenchmarkTimelineAnswer10000: a later ask (nothing new in the log):
// the answer alone, what the dashboard pays once a second while events
// come.
func BenchmarkTimelineAnswer10000(b *testing.B) {
	l, task := rollout(10000, rolloutStages)
	var ts timelines
	tr := ts.get("T")
	for complete := false; !complete; {
		var err error
		if complete, err = tr.read(b.Context(), l, task); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		tr.answer(task, true, task.Started.Add(time.Hour))
	}
}

// TestTimelineStageOrder: the example site's deploy, in short: two
// nodes go through the baseline stage first, three (two of them those)
// through images, and a node that skips images reached deploy before any
// node reached images. The series follow the workflow all the same.
func TestTimelineStageOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	var l logOf
	path := func(s int, node string, stages ...record.Stage) {
		for k, st := range stages {
			l = append(l, record.Event{Seq: uint64(len(l) + 1), Time: t0.Add(time.Duration(s+k) * time.Second), Task: "T", Node: node, Kind: "transition", Stage: st})
		}
	}
	for _, c := range []string{"c1", "c2", "c3", "c4", "c5"} {
		path(0, c, "oob-prepare", "configure", "deploy", "deployed")
	}
	path(5, "g1", "baseline", "oob-prepare", "configure", "images", "deploy", "deployed")
	path(5, "g2", "baseline", "oob-prepare", "configure", "images", "deploy", "deployed")
	path(5, "g3", "oob-prepare", "configure", "images", "deploy", "deployed")
	slices.SortStableFunc(l, func(a, b record.Event) int { return a.Time.Compare(b.Time) })
	for i := range l {
		l[i].Seq = uint64(i + 1)
	}
	task := record.Task{ID: "T", Status: record.TaskRunning, Started: t0}
	var ts timelines
	tr := ts.get("T")
	if _, err := tr.read(t.Context(), l, task); err != nil {
		t.Fatal(err)
	}
	got := tr.answer(task, true, t0.Add(time.Minute))
	if want := []string{"queued", "baseline", "oob-prepare", "configure", "images", "deploy", "deployed"}; !slices.Equal(got.Series, want) {
		t.Errorf("series %v, want %v", got.Series, want)
	}
}

// TestTimelineNoStageEndedYet: a running task whose nodes have not left a
// stage answers an empty stage list, not null (the dashboard iterates it:
// "tl.stages is not iterable" in TestTaskTimelineView).
func TestTimelineNoStageEndedYet(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	l := logOf{{Seq: 1, Time: t0, Task: "T", Node: "a", Kind: "transition", Stage: "configure"}}
	task := record.Task{ID: "T", Status: record.TaskRunning, Nodes: []string{"a"}, Started: t0}
	var ts timelines
	tr := ts.get("T")
	complete, err := tr.read(t.Context(), l, task)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(tr.answer(task, complete, t0.Add(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.Index(b, []byte(`"stages":`)); i < 0 || !bytes.HasPrefix(b[i:], []byte(`"stages":[]`)) {
		t.Errorf("answer's stages %.20q, want \"stages\":[]", b[max(i, 0):])
	}
}
