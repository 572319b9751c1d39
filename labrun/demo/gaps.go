package demo

import (
	"math"
	"time"

	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
)

// GapStats says where the wall time beyond the floor went: the lab's
// phases of each machine (what it had to wait) against the engine's
// stage transitions of its node. Each gap is a mean and a maximum over
// the nodes that had both ends.
type GapStats struct {
	// ToCommission: the task's start to the machine's commissioning
	// (preparing the BMC, identifying or enlisting the machine).
	ToCommission Gap `json:"to_commission"`
	// CommissionSeen: commissioning's end to the engine leaving the
	// commission stage (noticing it, reading the inventory).
	CommissionSeen Gap `json:"commission_seen"`
	// Configure: the configure stage (networking, storage, platform).
	Configure Gap `json:"configure"`
	// DeployStart: the deploy stage's start to the deployment's start in
	// MAAS (allocation, user data, the deploy request).
	DeployStart Gap `json:"deploy_start"`
	// DeploySeen: the deployment's end to the engine leaving the deploy
	// stage.
	DeploySeen Gap `json:"deploy_seen"`
	// ReportSeen: the end of the boot (the node agent starts) to the
	// node deployed: the agent's run and the engine noticing its reports.
	ReportSeen Gap `json:"report_seen"`
	// PhaseOverrun: how much longer the machine's phases took in wall
	// time than their nominal (scaled) durations: the simulator's own
	// lateness, not the engine's.
	PhaseOverrun Gap `json:"phase_overrun"`
}

// Gap is a mean and a maximum over the nodes that had both ends.
type Gap struct {
	MeanSeconds float64 `json:"mean_seconds"`
	MaxSeconds  float64 `json:"max_seconds"`
	n           int
}

func (g *Gap) add(from, to time.Time) {
	if from.IsZero() || to.IsZero() {
		return
	}
	s := to.Sub(from).Seconds()
	g.MeanSeconds += s
	g.MaxSeconds = max(g.MaxSeconds, s)
	g.n++
}

func (g *Gap) done() {
	if g.n > 0 {
		g.MeanSeconds = math.Round(g.MeanSeconds/float64(g.n)*1000) / 1000
	}
	g.MaxSeconds = math.Round(g.MaxSeconds*1000) / 1000
}

// nodeTimes are a node's moments that the gaps are measured between.
type nodeTimes struct {
	comStart, comEnd, depStart, depEnd, bootEnd     time.Time // the lab's
	leftCommission, leftConfigure, leftDeploy, done time.Time // the engine's
	overrun                                         time.Duration
}

func gaps(machines []*lab.Machine, records map[string]record.NodeRecord, start time.Time) GapStats {
	var g GapStats
	for _, m := range machines {
		t := labTimes(m.Timeline().Since(start))
		engineTimes(&t, records[m.Name], start)
		g.ToCommission.add(start, t.comStart)
		g.CommissionSeen.add(t.comEnd, t.leftCommission)
		g.Configure.add(t.leftCommission, t.leftConfigure)
		g.DeployStart.add(t.leftConfigure, t.depStart)
		g.DeploySeen.add(t.depEnd, t.leftDeploy)
		g.ReportSeen.add(t.bootEnd, t.done)
		g.PhaseOverrun.add(start, start.Add(t.overrun))
	}
	for _, x := range []*Gap{&g.ToCommission, &g.CommissionSeen, &g.Configure, &g.DeployStart, &g.DeploySeen, &g.ReportSeen, &g.PhaseOverrun} {
		x.done()
	}
	return g
}

// labTimes reads the last commissioning, deployment and boot.
func labTimes(tl lab.Timeline) nodeTimes {
	var t nodeTimes
	for _, p := range tl.Phases {
		t.overrun += p.End.Sub(p.Start) - p.Nominal
		switch p.Name {
		case maas.PhaseCommission:
			t.comStart, t.comEnd = p.Start, p.End
		case maas.PhaseDeploy:
			t.depStart, t.depEnd = p.Start, p.End
		case lab.PhaseBoot:
			t.bootEnd = p.End
		}
	}
	return t
}

// engineTimes reads when the node left each stage in this run.
func engineTimes(t *nodeTimes, rec record.NodeRecord, start time.Time) {
	for _, tr := range rec.History {
		if tr.At.Before(start) {
			continue
		}
		switch tr.From {
		case record.StageCommission:
			t.leftCommission = tr.At
		case record.StageConfigure:
			t.leftConfigure = tr.At
		case record.StageDeploy:
			t.leftDeploy = tr.At
		case record.StageBootstrap:
			t.done = tr.At
		}
	}
}
