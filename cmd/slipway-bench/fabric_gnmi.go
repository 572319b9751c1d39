package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	gpb "github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/slipway-dev/slipway/drivers"
	gnmidrv "github.com/slipway-dev/slipway/drivers/network/gnmi"
	simgnmi "github.com/slipway-dev/slipway/sim/gnmi"
)

// bench-fabric --driver gnmi: the gnmi network driver's port-configuration
// time at scale against the lab's gNMI target (sim/gnmi: one loopback
// listener serving every switch, chosen by the path's target, with a
// username and password): production, then production again (nothing to
// change: the target must count no Set), then quarantine. After each
// phase every port is checked in the target's own state (its Port view).
// The floor, in the same run on a fresh target: the same final settings
// sent by a plain gNMI client, one SetRequest per switch carrying all its
// ports (the switches at once); for the repeat, one Get of /interfaces
// per switch (what reading the switches costs when nothing is to change).

// gnmiBenchMaxPorts is the target's bound on one switch's ports.
const gnmiBenchMaxPorts = 1024

// phaseAgain labels the repeat of production.
const phaseAgain = "production-again"

var gnmiVLANsPath = []*gpb.PathElem{{Name: "network-instances"}, {Name: "network-instance", Key: map[string]string{"name": "default"}}, {Name: "vlans"}}

// gnmiBenchTarget starts a target with the switches and the ports the
// nodes are cabled to.
func gnmiBenchTarget(nodes []drivers.Node, switches int, user, pass string) (*simgnmi.Target, error) {
	tg, err := simgnmi.Start(simgnmi.Config{Username: user, Password: pass})
	if err != nil {
		return nil, err
	}
	ports := map[string][]string{}
	for _, n := range nodes {
		for _, in := range n.Interfaces {
			for _, d := range in.Devices {
				ports[d.Switch] = append(ports[d.Switch], d.Port)
			}
		}
	}
	for s := range switches {
		name := "sw" + strconv.Itoa(s)
		if err := tg.AddSwitch(name, ports[name]...); err != nil {
			tg.Close()
			return nil, fmt.Errorf("switch %s: %w", name, err)
		}
	}
	return tg, nil
}

// benchPassword is a fresh random password for the run's targets.
func benchPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand never fails on Linux
	return hex.EncodeToString(b)
}

// runGNMIFabricBench runs the three phases through the gnmi driver, then
// the floor on a fresh target.
func runGNMIFabricBench(ctx context.Context, o fabricBench) (FabricResult, error) {
	res := FabricResult{Driver: "gnmi", Nodes: o.nodes, Ports: 3 * o.nodes, Switches: o.switches, Workers: o.workers}
	nodes := benchNodes(o.nodes, o.switches)
	user, pass := "bench", benchPassword()
	phases := []drivers.Phase{drivers.PhaseProduction, drivers.PhaseProduction, drivers.PhaseQuarantine}
	runs, err := gnmiDriverRun(ctx, nodes, o, user, pass, phases)
	if err != nil {
		return res, err
	}
	floors, err := gnmiFloorRun(ctx, nodes, o.switches, user, pass)
	if err != nil {
		return res, err
	}
	for i, r := range runs {
		p := FabricPhase{Phase: string(phases[i]), WallSeconds: r.wall.Seconds(), FloorSeconds: floors[i].Seconds(),
			Verified: r.verified, Sets: &runs[i].sets}
		if i == 1 {
			p.Phase = phaseAgain
		}
		p.MsPerNode = float64(r.wall.Microseconds()) / 1000 / float64(o.nodes)
		p.MsPerPort = p.MsPerNode / 3
		p.CallP50Ms, p.CallP95Ms = pctMs(r.calls, 0.50), pctMs(r.calls, 0.95)
		if p.FloorSeconds > 0 {
			p.WallOverFlr = p.WallSeconds / p.FloorSeconds
		}
		res.Phases = append(res.Phases, p)
	}
	return res, nil
}

// gnmiPhaseRun is one phase through the driver.
type gnmiPhaseRun struct {
	wall     time.Duration
	calls    []time.Duration
	verified int // ports the target holds as the phase wants
	sets     int // Set RPCs the target accepted during the phase
}

// gnmiDriverRun configures every node's ports through the gnmi driver
// for each phase in turn, o.workers calls at once, then counts the ports
// the target holds as the phase wants and the Sets it accepted.
func gnmiDriverRun(ctx context.Context, nodes []drivers.Node, o fabricBench, user, pass string, phases []drivers.Phase) ([]gnmiPhaseRun, error) {
	tg, err := gnmiBenchTarget(nodes, o.switches, user, pass)
	if err != nil {
		return nil, err
	}
	defer tg.Close()
	settings, secrets := map[string]string{}, map[string]drivers.Secret{}
	for _, sw := range tg.Switches() {
		drivers.SwitchSettings(drivers.SwitchEndpoint{Name: sw, Address: tg.Addr(), Username: user,
			Password: drivers.NewSecret(pass)}, settings, secrets)
	}
	drv, err := gnmidrv.Open(drivers.Config{Settings: settings, Secrets: secrets})
	if err != nil {
		return nil, err
	}
	defer drv.Close()
	out := make([]gnmiPhaseRun, len(phases))
	for i, ph := range phases {
		before := targetSets(tg)
		start := time.Now()
		if out[i].calls, err = configureAll(ctx, drv, nodes, ph, o.workers); err != nil {
			return nil, err
		}
		out[i].wall = time.Since(start)
		out[i].sets = targetSets(tg) - before
		if out[i].verified, err = verifyGNMIPorts(tg, nodes, ph); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// targetSets counts the Set RPCs every switch of tg accepted.
func targetSets(tg *simgnmi.Target) int {
	n := 0
	for _, sw := range tg.Switches() {
		n += tg.Stats(sw).Sets
	}
	return n
}

// verifyGNMIPorts counts the ports the target's own state holds as
// phase's plan wants them: admin state, MTU, VLAN mode and VLANs, LAG
// membership (the LAG interface a LAG with the plan's LACP).
func verifyGNMIPorts(tg *simgnmi.Target, nodes []drivers.Node, ph drivers.Phase) (int, error) {
	count := 0
	for _, n := range nodes {
		plan, err := drivers.PortPlan(n, ph)
		if err != nil {
			return 0, err
		}
		for _, c := range plan {
			v, err := tg.Port(c.Switch, c.Port)
			if err != nil {
				return 0, err
			}
			if portHolds(v, c) && lagHolds(tg, n.Name, c, v.AggregateID) {
				count++
			}
		}
	}
	return count, nil
}

// portHolds: the port's admin state, MTU and VLANs are c's.
func portHolds(v simgnmi.PortView, c drivers.PortConfig) bool {
	if v.Enabled != c.Enabled || v.MTU != c.MTU {
		return false
	}
	if c.Mode == drivers.ModeAccess {
		return v.Mode == "ACCESS" && v.AccessVLAN == c.VLAN
	}
	tagged := slices.DeleteFunc(slices.Clone(v.TrunkVLANs), func(x int) bool { return x == v.NativeVLAN })
	slices.Sort(tagged)
	return v.Mode == "TRUNK" && v.NativeVLAN == c.VLAN && slices.Equal(tagged, c.Trunk)
}

// lagHolds: a port of no LAG is a member of none; a LAG member's LAG
// interface (named as the driver names it: node-LAG) is a LAG with c's
// LACP mode and rate.
func lagHolds(tg *simgnmi.Target, node string, c drivers.PortConfig, agg string) bool {
	if c.LAG == "" {
		return agg == ""
	}
	if agg != node+"-"+c.LAG {
		return false
	}
	l, err := tg.Port(c.Switch, agg)
	return err == nil && l.IsLAG && l.LACPMode == strings.ToUpper(c.LACP) && l.LACPInterval == strings.ToUpper(c.LACPRate)
}

// gnmiClient is a plain gNMI client of one target: no driver logic.
type gnmiClient struct {
	conn *grpc.ClientConn
	c    gpb.GNMIClient
	md   metadata.MD
}

func dialGNMI(addr, user, pass string) (*gnmiClient, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		return nil, err
	}
	return &gnmiClient{conn: conn, c: gpb.NewGNMIClient(conn), md: metadata.Pairs("username", user, "password", pass)}, nil
}

// gnmiFloorRun sends, on a fresh target, each phase's final settings as
// one SetRequest per switch (the switches at once), then for the repeat
// one Get of /interfaces per switch, timing each; the target must then
// hold every port as the phase wants.
func gnmiFloorRun(ctx context.Context, nodes []drivers.Node, switches int, user, pass string) ([]time.Duration, error) {
	tg, err := gnmiBenchTarget(nodes, switches, user, pass)
	if err != nil {
		return nil, err
	}
	defer tg.Close()
	cl, err := dialGNMI(tg.Addr(), user, pass)
	if err != nil {
		return nil, err
	}
	defer cl.conn.Close()
	ctx = metadata.NewOutgoingContext(ctx, cl.md)
	bySwitch := make([][]drivers.Node, switches)
	for i, n := range nodes {
		bySwitch[i%switches] = append(bySwitch[i%switches], n)
	}
	out := make([]time.Duration, 3)
	for i, ph := range []drivers.Phase{drivers.PhaseProduction, "", drivers.PhaseQuarantine} {
		if ph == "" { // the repeat: read every switch once
			if out[i], err = eachSwitch(switches, func(s int) error { return floorGet(ctx, cl, s) }); err != nil {
				return nil, fmt.Errorf("floor, %s: %w", phaseAgain, err)
			}
			continue
		}
		reqs := make([]*gpb.SetRequest, switches)
		for s := range switches {
			if reqs[s], err = floorSet("sw"+strconv.Itoa(s), bySwitch[s], ph); err != nil {
				return nil, err
			}
		}
		if out[i], err = eachSwitch(switches, func(s int) error { _, err := cl.c.Set(ctx, reqs[s]); return err }); err != nil {
			return nil, fmt.Errorf("floor, %s: %w", ph, err)
		}
		if v, err := verifyGNMIPorts(tg, nodes, ph); err != nil || v != 3*len(nodes) {
			return nil, fmt.Errorf("floor, %s: the target holds %d of %d ports as wanted (%v)", ph, v, 3*len(nodes), err)
		}
	}
	return out, nil
}

// floorGet reads switch s's /interfaces once.
func floorGet(ctx context.Context, cl *gnmiClient, s int) error {
	_, err := cl.c.Get(ctx, &gpb.GetRequest{Prefix: &gpb.Path{Target: "sw" + strconv.Itoa(s)}, Encoding: gpb.Encoding_JSON_IETF,
		Path: []*gpb.Path{{Elem: []*gpb.PathElem{{Name: "interfaces"}}}}})
	return err
}

// eachSwitch runs f for every switch at once and times it; the first
// error is returned.
func eachSwitch(switches int, f func(s int) error) (time.Duration, error) {
	errs := make([]error, switches)
	start := time.Now()
	var wg sync.WaitGroup
	for s := range switches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[s] = f(s)
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return took, err
		}
	}
	return took, nil
}
