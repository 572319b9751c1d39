package main

import (
	"math"
	"time"

	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
)

// gapStats says where the wall time beyond the floor went, from the
// machines' timelines: the time from the task's start to a machine's
// first commissioning, from its commissioning's end to its deployment's
// start (identification aside, the engine's configuration of the
// machine and the detection of both ends), and from the last machine's
// boot to the task's end (the node agents' reports and their detection).
type gapStats struct {
	ToCommission       gap     `json:"to_commission"`
	CommissionToDeploy gap     `json:"commission_to_deploy"`
	DeployToBoot       gap     `json:"deploy_to_boot"`
	TailSeconds        float64 `json:"tail_seconds"`
}

// gap is a mean and a maximum over the machines that had both ends.
type gap struct {
	MeanSeconds float64 `json:"mean_seconds"`
	MaxSeconds  float64 `json:"max_seconds"`
	n           int
}

func (g *gap) add(d time.Duration) {
	s := d.Seconds()
	g.MeanSeconds += s
	g.MaxSeconds = max(g.MaxSeconds, s)
	g.n++
}

func (g *gap) done() {
	if g.n > 0 {
		g.MeanSeconds = math.Round(g.MeanSeconds/float64(g.n)*1000) / 1000
	}
	g.MaxSeconds = math.Round(g.MaxSeconds*1000) / 1000
}

func gaps(machines []*lab.Machine, start time.Time, wall float64) gapStats {
	var g gapStats
	var lastBoot time.Time
	for _, m := range machines {
		var com, dep *maas.Phase
		for _, p := range m.Timeline().Since(start).Phases {
			switch p.Name {
			case maas.PhaseCommission:
				if com == nil {
					g.ToCommission.add(p.Start.Sub(start))
				}
				com = &p
			case maas.PhaseDeploy:
				dep = &p
				if com != nil {
					g.CommissionToDeploy.add(p.Start.Sub(com.End))
				}
			case lab.PhaseBoot:
				if dep != nil {
					g.DeployToBoot.add(p.Start.Sub(dep.End))
				}
				if p.End.After(lastBoot) {
					lastBoot = p.End
				}
			}
		}
	}
	g.ToCommission.done()
	g.CommissionToDeploy.done()
	g.DeployToBoot.done()
	if !lastBoot.IsZero() {
		g.TailSeconds = math.Round((wall-lastBoot.Sub(start).Seconds())*1000) / 1000
	}
	return g
}
