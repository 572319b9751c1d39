package orchestrator

import (
	"testing"
	"time"
)

// TestStageWaitCountsFromStageStartWhenBusy: a stage entered with the
// machine already in a phase (the identify stage's create started its
// commissioning) waits on it from the stage's start, not from its first
// call, which comes after Slipway's own work (the transition's save).
func TestStageWaitCountsFromStageStartWhenBusy(t *testing.T) {
	var w stageWait
	start := now()
	w.take(start, "Commissioning") // the identify stage ends, the machine commissioning
	time.Sleep(30 * time.Millisecond)
	w.asking()
	w.begin(true) // the first call: still commissioning
	w.asking()
	w.end() // the next call's answer: done
	if ms := w.take(now(), "Ready"); ms < 30 {
		t.Errorf("the stage waited %d ms on the machine, want at least the 30 ms since it began", ms)
	}

	w.take(now(), "Ready") // a stage entered with the machine idle
	time.Sleep(30 * time.Millisecond)
	asked := now()
	w.asking()
	w.begin(true)
	w.end()
	call := now().Sub(asked)
	if ms := w.take(now(), "Ready"); ms > call.Milliseconds() {
		t.Errorf("the stage waited %d ms on an idle machine's start, want only its own call's %s", ms, call)
	}
}

// TestStageWaitEndsAtTheGate: a wait ends where the node queues at the
// round gate (Slipway's own wait), and the later call's answer does not
// extend it.
func TestStageWaitEndsAtTheGate(t *testing.T) {
	var w stageWait
	asked := now()
	w.asking()
	w.begin(true)
	time.Sleep(20 * time.Millisecond)
	w.end() // the round gate is full
	before := now().Sub(asked)
	time.Sleep(60 * time.Millisecond)
	w.asking()
	w.end()
	if ms := w.take(now(), "Ready"); ms < 20 || ms > before.Milliseconds() {
		t.Errorf("the stage waited %d ms, want the %s before the gate (not the 60 ms in it)", ms, before)
	}
}
