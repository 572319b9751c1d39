package main

// The randomized lifecycle runs' generator: a sequence of operations
// drawn from a seed alone (never from what a run observed), over a model
// of what each node should be if every operation did what it asks. Most
// operations are valid for the model's state; some are not, and those
// must be refused or do nothing to the lab. Timing (a cancel's or a
// kill's instant) is a drawn delay: the same seed draws the same
// sequence, but a replay may land a delay on another stage.

import (
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Operation kinds.
const (
	lrDeploy        = "deploy"
	lrRedeploy      = "redeploy"
	lrDestroy       = "destroy"
	lrDecommission  = "decommission"
	lrCancel        = "cancel" // deploy, cancelled after the drawn delay
	lrKill9         = "kill-9" // deploy, serve SIGKILLed after the delay and started again
	lrRetry         = "retry"  // of the last task
	lrResume        = "resume" // of the last task
	lrRerun         = "rerun"  // of the last task
	lrRestartClean  = "restart-clean"
	lrRescueEnter   = "rescue-enter"
	lrRescueExit    = "rescue-exit"
	lrTest          = "test"
	lrMarkManual    = "mark-manual-intervention"
	lrReleaseManual = "release-manual"
	lrAdopt         = "adopt"
	lrPowerCycle    = "power-cycle"
	// lrMAASRelease: the machine released in MAAS directly (behind the
	// orchestrator's back), then the node adopted.
	lrMAASRelease = "maas-release+adopt"
	// lrOverlap: a deploy, and after the delay a second task (Then) on
	// some of its nodes while it runs, neither waited for.
	lrOverlap = "overlap"
)

// lrOp is one operation of a sequence.
type lrOp struct {
	Kind    string
	Nodes   []string
	Delay   time.Duration // cancel, kill-9: after the task's creation
	Erase   string        // destroy, decommission: none | quick | secure ("" the design's)
	Invalid bool          // must be refused, or leave the lab as it was
	Then    *lrOp         // overlap: the task started during the first
}

func (o lrOp) String() string {
	s := o.Kind + " " + strings.Join(o.Nodes, ",")
	if o.Delay > 0 {
		s += " after " + o.Delay.String()
	}
	if o.Erase != "" {
		s += " erase=" + o.Erase
	}
	if o.Invalid {
		s += " (invalid)"
	}
	if o.Then != nil {
		s += ", then " + o.Then.String()
	}
	return s
}

// releasing reports whether the operation may release or erase its
// nodes' machines: a verb that asks for it, or a deploy workflow whose
// recovery plan may (a failed deployment is released before the next).
func (o lrOp) releasing() bool {
	switch o.Kind {
	case lrDeploy, lrRedeploy, lrDestroy, lrDecommission, lrCancel, lrKill9, lrRetry, lrResume, lrRerun, lrRestartClean, lrMAASRelease,
		lrOverlap:
		return !o.Invalid
	}
	return false
}

// lrModel is what each node should be if every operation did what it
// asks: new, deployed, released or rescue; frozen nodes aside.
type lrModel struct {
	rnd    *mrand.Rand
	names  []string
	state  map[string]string
	frozen map[string]bool
	tasks  int // tasks the sequence created so far
}

// generateOps draws n operations over names from seed.
func generateOps(seed uint64, names []string, n int) []lrOp {
	m := &lrModel{rnd: mrand.New(mrand.NewPCG(seed, 7)), names: names, state: map[string]string{}, frozen: map[string]bool{}}
	for _, nm := range names {
		m.state[nm] = "new"
	}
	ops := []lrOp{m.deploy(m.pick("new", len(names)/2+1))}
	for len(ops) < n {
		if op, ok := m.next(); ok {
			ops = append(ops, op)
		}
	}
	return ops
}

// next draws one operation; ok is false when the drawn kind has no node
// to act on in the model's state.
func (m *lrModel) next() (lrOp, bool) {
	switch k := m.rnd.IntN(23); {
	case k < 3:
		return m.taskOn(lrDeploy, "new", "released")
	case k < 4:
		return m.taskOn(lrRedeploy, "deployed")
	case k < 5:
		return m.taskOn(lrDestroy, "deployed")
	case k < 6:
		return m.taskOn(lrDecommission, "deployed", "released", "new")
	case k < 8:
		return m.timed(lrCancel, "new", "released")
	case k < 9:
		return m.timed(lrKill9, "new", "released")
	case k < 12:
		return m.verb()
	case k < 14:
		return m.rescue()
	case k < 15:
		return m.taskOn(lrTest, "released")
	case k < 17:
		return m.manual()
	case k < 18:
		return m.taskOn(lrAdopt, "deployed")
	case k < 19:
		return m.taskOn(lrPowerCycle, "deployed")
	case k < 20:
		return m.taskOn(lrMAASRelease, "deployed")
	case k < 22:
		return m.overlap()
	default:
		return m.invalid()
	}
}

// pick draws up to n unfrozen nodes in one of the states, sorted.
func (m *lrModel) pick(state string, n int, more ...string) []string {
	var in []string
	for _, nm := range m.names {
		if !m.frozen[nm] && (m.state[nm] == state || slices.Contains(more, m.state[nm])) {
			in = append(in, nm)
		}
	}
	m.rnd.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	out := in[:min(n, len(in))]
	slices.Sort(out)
	return out
}

func (m *lrModel) deploy(nodes []string) lrOp {
	m.apply(nodes, "deployed")
	m.tasks++
	return lrOp{Kind: lrDeploy, Nodes: nodes}
}

func (m *lrModel) apply(nodes []string, state string) {
	for _, n := range nodes {
		m.state[n] = state
	}
}

// lrAfter is the model's state of a node once kind succeeded.
var lrAfter = map[string]string{lrDeploy: "deployed", lrRedeploy: "deployed", lrDestroy: "released", lrDecommission: "released",
	lrCancel: "released", lrKill9: "deployed", lrMAASRelease: "released", lrOverlap: "deployed"}

// taskOn is an operation of kind on 1 to 3 nodes in one of the states.
func (m *lrModel) taskOn(kind string, states ...string) (lrOp, bool) {
	nodes := m.pick(states[0], 1+m.rnd.IntN(3), states[1:]...)
	if len(nodes) == 0 {
		return lrOp{}, false
	}
	op := lrOp{Kind: kind, Nodes: nodes}
	if kind == lrDestroy || kind == lrDecommission {
		op.Erase = []string{"", "none", "quick", "secure"}[m.rnd.IntN(4)]
	}
	if s, ok := lrAfter[kind]; ok {
		m.apply(nodes, s)
	}
	if kind != lrAdopt && kind != lrMAASRelease {
		m.tasks++
	}
	return op, true
}

// timed is a deploy cancelled, or serve killed, after a drawn delay of
// up to 4 s (the phases at the runs' time scale take a few seconds).
func (m *lrModel) timed(kind string, states ...string) (lrOp, bool) {
	op, ok := m.taskOn(kind, states...)
	op.Delay = time.Duration(100+m.rnd.IntN(3900)) * time.Millisecond
	return op, ok
}

// overlap is a deploy of new or released nodes and, after a drawn delay
// while it runs, a deploy, redeploy or destroy of some of them.
func (m *lrModel) overlap() (lrOp, bool) {
	op, ok := m.timed(lrOverlap, "new", "released")
	if !ok {
		return op, false
	}
	kind := []string{lrDeploy, lrRedeploy, lrDestroy}[m.rnd.IntN(3)]
	then := lrOp{Kind: kind, Nodes: op.Nodes[:1+m.rnd.IntN(len(op.Nodes))]}
	if s, ok := lrAfter[kind]; ok {
		m.apply(then.Nodes, s)
	}
	m.tasks++
	op.Then = &then
	return op, true
}

// verb is a recovery verb on the last task (its nodes unknown to the
// model, which leaves them as they are).
func (m *lrModel) verb() (lrOp, bool) {
	if m.tasks == 0 {
		return lrOp{}, false
	}
	k := []string{lrRetry, lrResume, lrRerun, lrRestartClean}[m.rnd.IntN(4)]
	return lrOp{Kind: k}, true
}

func (m *lrModel) rescue() (lrOp, bool) {
	if op, ok := m.taskOn(lrRescueExit, "rescue"); ok && m.rnd.IntN(2) == 0 {
		m.apply(op.Nodes, "deployed")
		return op, true
	}
	op, ok := m.taskOn(lrRescueEnter, "deployed")
	m.apply(op.Nodes, "rescue")
	return op, ok
}

// manual freezes a node, or unfreezes a frozen one.
func (m *lrModel) manual() (lrOp, bool) {
	var frozen []string
	for _, n := range m.names {
		if m.frozen[n] {
			frozen = append(frozen, n)
		}
	}
	if len(frozen) > 0 && m.rnd.IntN(2) == 0 {
		n := frozen[m.rnd.IntN(len(frozen))]
		delete(m.frozen, n)
		return lrOp{Kind: lrReleaseManual, Nodes: []string{n}}, true
	}
	n := m.names[m.rnd.IntN(len(m.names))]
	m.frozen[n] = true
	return lrOp{Kind: lrMarkManual, Nodes: []string{n}}, true
}

// invalid is an operation the node's state does not allow: rescue exit
// of a node not in rescue, release-manual of a node not frozen, a deploy
// or destroy of a frozen node.
func (m *lrModel) invalid() (lrOp, bool) {
	n := m.names[m.rnd.IntN(len(m.names))]
	switch {
	case m.frozen[n] && m.rnd.IntN(2) == 0:
		return lrOp{Kind: lrDestroy, Nodes: []string{n}, Invalid: true}, true
	case m.frozen[n]:
		return lrOp{Kind: lrDeploy, Nodes: []string{n}, Invalid: true}, true
	case m.state[n] != "rescue" && m.rnd.IntN(2) == 0:
		return lrOp{Kind: lrRescueExit, Nodes: []string{n}, Invalid: true}, true
	default:
		return lrOp{Kind: lrReleaseManual, Nodes: []string{n}, Invalid: true}, true
	}
}

// describeOps lists ops numbered as the sequence numbers them.
func describeOps(ops []lrOp, idx []int) string {
	var b strings.Builder
	for i, op := range ops {
		fmt.Fprintf(&b, "  #%d %s\n", idx[i], op)
	}
	return b.String()
}
