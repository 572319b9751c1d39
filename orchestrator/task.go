package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/statestore"
)

// taskRun is a task being run by this process.
type taskRun struct {
	id     string
	ctx    context.Context // ends on cancel or engine stop
	cancel context.CancelFunc
	done   chan struct{}

	// corr is the task's Correlation, fixed at launch: the node runs
	// stamp it on their events without taking mu.
	corr string

	mu        sync.Mutex
	task      record.Task
	results   map[string]record.NodeResult
	cancelled bool

	// orphanPorts: the switch ports of the orphans, read once by the
	// task's first port stage (ports_orphans.go); nil until then.
	portsMu     sync.Mutex
	orphanPorts map[drivers.SwitchPort]string

	// imgs: the image syncs the task's nodes follow (images.go).
	imgs runImages
}

func (t *taskRun) setResult(nr record.NodeResult) {
	t.mu.Lock()
	t.results[nr.Node] = nr
	t.mu.Unlock()
}

func (t *taskRun) result(node string) record.NodeResult {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.results[node]
}

func (t *taskRun) isCancelled() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cancelled
}

// Submit validates and stores a task, then starts it.
func (e *Engine) Submit(ctx context.Context, req record.Request) (record.Task, error) {
	if err := checkRequest(&req); err != nil {
		return record.Task{}, err
	}
	d, id, err := e.requestDesign(ctx, req.Revision)
	if err != nil {
		return record.Task{}, err
	}
	orphans, err := e.orphansNamed(ctx, req, d) // destroy may name them (drift_orphan.go)
	if err != nil {
		return record.Task{}, err
	}
	if err := withoutNames(req.Filter, orphans).CheckIn(d, id); err != nil {
		return record.Task{}, err
	}
	now := time.Now().UTC()
	t := record.Task{ID: newTaskID(now), Action: req.Action, Filter: req.Filter, Revision: id,
		Requester: orDefault(req.Requester, "unknown"), Status: record.TaskQueued, Created: now, Correlation: req.Correlation, Options: req.Options}
	if !req.Action.SiteAction() {
		if t.Nodes, err = selectNodes(req.Filter, d, orphans); err != nil {
			return record.Task{}, err
		}
	}
	var b batch
	b.task(t)
	for _, n := range t.Nodes {
		b.result(t.ID, record.NodeResult{Node: n, Stage: record.StagePending, Outcome: record.OutcomeQueued})
	}
	b.event(record.Event{Time: now, Task: t.ID, Level: "info", Kind: "task", Correlation: t.Correlation,
		Message: fmt.Sprintf("task %s: %s of %d node(s) on design %s, requested by %s%s", t.ID, t.Action, len(t.Nodes), short(id), t.Requester, t.Options.Describe())})
	if err := e.rec.write(ctx, &b); err != nil {
		return record.Task{}, fmt.Errorf("store task: %w", err)
	}
	e.launch(t)
	return t, nil
}

// checkRequest checks a task request's action, options and correlation
// ID; empty options become none.
func checkRequest(req *record.Request) error {
	if _, err := record.ParseAction(string(req.Action)); err != nil {
		return err
	}
	if err := req.Options.Check(req.Action); err != nil {
		return err
	}
	if req.Options != nil && *req.Options == (record.TaskOptions{}) {
		req.Options = nil
	}
	return record.CheckCorrelation(req.Correlation)
}

// requestDesign is the design revision a task request names, the current
// one when it names none.
func (e *Engine) requestDesign(ctx context.Context, rev string) (*design.Design, string, error) {
	if rev == "" {
		cur, err := e.currentRevision(ctx)
		if errors.Is(err, statestore.ErrNotFound) {
			return nil, "", fmt.Errorf("%w: no design yet: apply one first (POST /api/v1/designs, or `orchestrator apply`)", ErrConflict)
		}
		if err != nil {
			return nil, "", err
		}
		rev = cur
	}
	return e.design(ctx, rev)
}

// selectNodes is the nodes a node task acts on: those f selects in d,
// and the orphans the request names; at least one.
func selectNodes(f record.Filter, d *design.Design, orphans []string) ([]string, error) {
	nodes, err := f.Select(d)
	if err != nil {
		return nil, err
	}
	nodes = withOrphans(nodes, orphans)
	if len(nodes) == 0 {
		return nil, fmt.Errorf("the node filter selects none of the design's %d nodes; check names, labels, tags and racks (`orchestrator render` shows a node)", len(d.Nodes))
	}
	return nodes, nil
}

// currentRevision returns the ID of the most recently applied design.
func (e *Engine) currentRevision(ctx context.Context) (string, error) {
	id, err := statestore.CurrentID(ctx, e.cfg.Store)
	if err != nil {
		return "", fmt.Errorf("no design revision given and %w (run `orchestrator apply` first)", err)
	}
	return id, nil
}

// launch runs a stored task in the background.
func (e *Engine) launch(t record.Task) {
	e.mu.Lock()
	if e.ctx == nil || e.closed {
		e.mu.Unlock()
		return
	}
	if _, ok := e.runs[t.ID]; ok {
		e.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(e.ctx)
	run := &taskRun{id: t.ID, ctx: ctx, cancel: cancel, done: make(chan struct{}), task: t, corr: t.Correlation,
		results: map[string]record.NodeResult{}, cancelled: t.Cancel}
	e.runs[t.ID] = run
	e.wg.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.wg.Done()
		defer cancel()
		e.runTask(run)
	}()
}

// runTask drives a task to its end (or until the engine stops).
func (e *Engine) runTask(run *taskRun) {
	defer func() {
		e.mu.Lock()
		delete(e.runs, run.id)
		e.mu.Unlock()
		close(run.done)
	}()
	ectx := e.ctx
	t := run.task
	log := e.log.With().Str("task", t.ID).Str("action", string(t.Action)).Logger()
	if err := e.startRun(run); err != nil {
		log.Error().Err(err).Msg("start the task")
		return
	}
	d, _, err := e.design(ectx, t.Revision)
	if err != nil {
		e.finishTask(run, record.TaskFailed, "design revision: "+err.Error())
		return
	}
	if t.Action.SiteAction() {
		status, msg := e.runSite(run, d)
		if ectx.Err() != nil {
			return
		}
		e.finishTask(run, status, msg)
		return
	}
	if !e.preflightTask(run, d) {
		return
	}
	e.startTaskImages(run, d) // images_stage.go
	e.driveNodes(run, d, log)
	if ectx.Err() != nil {
		return // stopped: the task resumes at the next start
	}
	status, msg := run.outcome()
	e.finishTask(run, status, msg)
}

// startRun loads the results a task already has (a resumed task) and
// marks a queued task running.
func (e *Engine) startRun(run *taskRun) error {
	results, err := e.rec.results(e.ctx, run.task.ID)
	if err != nil {
		return fmt.Errorf("load task results: %w", err)
	}
	for _, r := range results {
		run.setResult(r)
	}
	t := run.task
	if t.Status != record.TaskQueued {
		return nil
	}
	t.Status, t.Started, t.Cancel = record.TaskRunning, time.Now().UTC(), t.Cancel || run.isCancelled()
	var b batch
	b.task(t)
	b.event(record.Event{Time: t.Started, Task: t.ID, Level: "info", Kind: "task", Message: "task started", Correlation: run.corr})
	if err := e.rec.write(e.ctx, &b); err != nil {
		return fmt.Errorf("store task start: %w", err)
	}
	run.mu.Lock()
	run.task = t
	run.mu.Unlock()
	return nil
}

// driveNodes runs the workflow of each of the task's unfinished nodes, at
// once, and returns when all have stopped.
func (e *Engine) driveNodes(run *taskRun, d *design.Design, log zerolog.Logger) {
	t := run.task
	if w, ok := e.cfg.Bootstrap.(BootstrapWarmer); ok && d != nil && slices.Contains(sequence(t.Action), record.StageDeploy) {
		go w.Warm(e.ctx, d)
	}
	var wg sync.WaitGroup
	for _, name := range t.Nodes {
		if run.result(name).Outcome.Finished() {
			continue
		}
		nd, n := d, d.Nodes[name]
		if n == nil && t.Action == record.ActionDestroyNodes { // an orphan: the design it was deployed with (drift_orphan.go)
			nd, n = e.lastDesignOf(e.ctx, name)
		}
		if n == nil {
			e.finishNodeMissing(run, name)
			continue
		}
		wg.Add(1)
		nr := &nodeRun{e: e, run: run, d: nd, n: n, seq: imageSequence(nd, n, nodeSequence(t, n)), log: log.With().Str("node", name).Logger(), exit: wg.Done}
		go nr.drive()
	}
	wg.Wait()
}

// outcome is the task's status from its nodes' results, and a summary.
func (t *taskRun) outcome() (record.TaskStatus, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ok, bad, cancelled int
	for _, r := range t.results {
		switch r.Outcome {
		case record.OutcomeSucceeded:
			ok++
		case record.OutcomeCancelled:
			cancelled++
		default:
			bad++
		}
	}
	status := record.TaskSucceeded
	switch {
	case t.cancelled:
		status = record.TaskCancelled
	case ok == 0:
		status = record.TaskFailed
	case bad > 0 || cancelled > 0:
		status = record.TaskPartiallySucceeded
	}
	return status, fmt.Sprintf("%d succeeded, %d failed, %d cancelled", ok, bad, cancelled)
}

func (e *Engine) finishNodeMissing(run *taskRun, name string) {
	now := time.Now().UTC()
	nr := record.NodeResult{Node: name, Stage: record.StagePending, Outcome: record.OutcomeFailed, Class: "permanent",
		Reason: "node is not in the task's design revision", Finished: now}
	var b batch
	b.result(run.id, nr)
	if err := e.rec.write(e.ctx, &b); err == nil {
		run.setResult(nr)
	}
}

func (e *Engine) finishTask(run *taskRun, status record.TaskStatus, msg string) {
	run.mu.Lock()
	t := run.task
	t.Cancel = t.Cancel || run.cancelled // cancelTask sets only run.cancelled
	run.mu.Unlock()
	t.Status, t.Message, t.Finished = status, msg, time.Now().UTC()
	var b batch
	b.task(t)
	level := "info"
	if status != record.TaskSucceeded {
		level = "warn"
	}
	b.event(record.Event{Time: t.Finished, Task: t.ID, Level: level, Kind: "task", Message: fmt.Sprintf("task %s: %s", status, msg), Correlation: run.corr})
	if err := e.rec.write(e.ctx, &b); err != nil {
		e.log.Error().Err(err).Str("task", t.ID).Msg("store task end")
		return
	}
	run.mu.Lock()
	run.task = t
	run.mu.Unlock()
	ll := e.log.Info().Str("task", t.ID).Str("status", string(status))
	if wc, ok := e.cfg.Store.(writeCounter); ok {
		writes, commits := wc.WriteCounts()
		ll = ll.Uint64("store_writes", writes).Uint64("store_commits", commits)
	}
	ll.Msg(msg)
}

// writeCounter is a store that counts its Writes and the commits that
// carried them since it opened (statestore/bolt): the task's end logs
// them, to see how well writes share commits.
type writeCounter interface {
	WriteCounts() (writes, commits uint64)
}

// Wait blocks until the task finishes, ctx ends or the engine stops, and
// returns the task as it then stands.
func (e *Engine) Wait(ctx context.Context, id string) (record.Task, error) {
	e.mu.Lock()
	run := e.runs[id]
	stopped := e.ctx
	e.mu.Unlock()
	if run != nil {
		var stop <-chan struct{}
		if stopped != nil {
			stop = stopped.Done()
		}
		select {
		case <-run.done:
		case <-ctx.Done():
			return record.Task{}, ctx.Err()
		case <-stop:
			return record.Task{}, errors.New("the engine stopped before the task finished; it resumes when the engine starts again")
		}
	}
	return e.rec.task(ctx, id)
}

// Task returns a task and its per-node results.
func (e *Engine) Task(ctx context.Context, id string) (record.Task, []record.NodeResult, error) {
	e.mu.Lock()
	run := e.runs[id]
	e.mu.Unlock()
	if run != nil {
		run.mu.Lock()
		t := run.task
		t.Cancel = t.Cancel || run.cancelled
		res := make([]record.NodeResult, 0, len(run.results))
		for _, r := range run.results {
			res = append(res, r)
		}
		run.mu.Unlock()
		sort.Slice(res, func(i, j int) bool { return res[i].Node < res[j].Node })
		return t, res, nil
	}
	t, err := e.rec.task(ctx, id)
	if err != nil {
		return record.Task{}, nil, err
	}
	res, err := e.rec.results(ctx, id)
	return t, res, err
}

// Tasks lists every task, oldest first.
func (e *Engine) Tasks(ctx context.Context) ([]record.Task, error) { return e.rec.tasks(ctx) }

// Node returns a node's record (a record of an earlier version gets its
// lifecycle derived: LifecycleState).
func (e *Engine) Node(ctx context.Context, name string) (record.NodeRecord, error) {
	n, ok, err := e.rec.node(ctx, name)
	if err == nil && !ok {
		return n, fmt.Errorf("%w: node %q has no record yet (no task has selected it)", ErrNotFound, name)
	}
	if err == nil && n.Lifecycle == "" {
		n.Lifecycle = n.LifecycleState()
	}
	return n, err
}

// Nodes lists every node record (lifecycles derived as Node does).
func (e *Engine) Nodes(ctx context.Context) ([]record.NodeRecord, error) {
	ns, err := e.rec.nodes(ctx)
	for i := range ns {
		if ns[i].Lifecycle == "" {
			ns[i].Lifecycle = ns[i].LifecycleState()
		}
	}
	return ns, err
}

// LastEvent is the sequence number of the last event (0: none yet).
func (e *Engine) LastEvent(ctx context.Context) (uint64, error) {
	return e.rec.s.LastSeq(ctx, logEvents)
}

// Events returns events after seq (0: from the start), filtered by task
// and node when given; limit <= 0 returns all.
func (e *Engine) Events(ctx context.Context, after uint64, limit int, task, node string) ([]record.Event, error) {
	return e.rec.events(ctx, after, limit, task, node)
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
