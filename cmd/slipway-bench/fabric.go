package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/slipway-dev/slipway/drivers"
	ovsdrv "github.com/slipway-dev/slipway/drivers/network/ovs"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/sim/ovs"
)

// bench-fabric: the ovs network driver's port-configuration time at
// scale, on real Open vSwitch (sim/ovs): generated nodes of three cabled
// ports each (a PXE NIC, two NICs in an LACP bond carrying a trunk),
// spread over the switches, configured for production and then for
// quarantine through the driver, against a floor measured in the same
// run: the same settings applied by ovs-vsctl in one transaction per
// switch, on a fresh copy of the switches.

// fabricBench are bench-fabric's settings.
type fabricBench struct {
	nodes, switches, workers int
	driver                   string // ovs | gnmi
}

// Bounds of bench-fabric's settings.
const (
	maxBenchFabricNodes    = 10_000
	maxBenchFabricSwitches = 64
	maxBenchFabricWorkers  = 256
	benchQuarantineVLAN    = 999
)

// FabricResult is bench-fabric's outcome.
type FabricResult struct {
	Driver   string        `json:"driver"` // ovs | gnmi
	Nodes    int           `json:"nodes"`
	Ports    int           `json:"ports"`
	Switches int           `json:"switches"`
	Workers  int           `json:"workers"` // ConfigurePorts calls at once
	Phases   []FabricPhase `json:"phases"`
}

// FabricPhase is one phase's figures.
type FabricPhase struct {
	Phase        string  `json:"phase"`
	WallSeconds  float64 `json:"wall_seconds"`  // every node through the driver
	MsPerNode    float64 `json:"ms_per_node"`   // wall / nodes
	MsPerPort    float64 `json:"ms_per_port"`   // wall / ports
	CallP50Ms    float64 `json:"call_p50_ms"`   // one ConfigurePorts call's latency
	CallP95Ms    float64 `json:"call_p95_ms"`   //
	FloorSeconds float64 `json:"floor_seconds"` // the same settings, one ovs-vsctl transaction per switch
	WallOverFlr  float64 `json:"wall_over_floor"`
	Verified     int     `json:"verified_ports"` // ports read back as the phase wants (ovs-vsctl; gnmi: the target's state)
	Sets         *int    `json:"sets,omitempty"` // gnmi: Set RPCs the target accepted in the phase
}

func (a *app) benchFabricCmd() *cobra.Command {
	var o fabricBench
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bench-fabric [--driver ovs|gnmi] [--nodes N] [--switches S] [--workers W] [--json]",
		Short: "Time a network driver configuring generated nodes' switch ports (ovs: real Open vSwitch, as root; gnmi: the lab's gNMI target), against a floor",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return usageErr(err)
			}
			run := runFabricBench
			if o.driver == "gnmi" {
				run = runGNMIFabricBench
			} else if err := ovs.Available(); err != nil {
				return usageErr(fmt.Errorf("%v: apt-get install openvswitch-switch iproute2 iputils-ping, and run as root", err))
			}
			res, err := run(cmd.Context(), o)
			if err != nil {
				return usageErr(err)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			res.text(a)
			return nil
		},
	}
	cmd.Flags().StringVar(&o.driver, "driver", "ovs", "network driver: ovs (real Open vSwitch) or gnmi (the lab's gNMI target)")
	cmd.Flags().IntVar(&o.nodes, "nodes", 1000, "generated nodes (3 cabled ports each)")
	cmd.Flags().IntVar(&o.switches, "switches", 16, "switches (one Open vSwitch each) the nodes are spread over")
	cmd.Flags().IntVar(&o.workers, "workers", 8, "ConfigurePorts calls at once")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

// check bounds the settings.
func (o fabricBench) check() error {
	if o.nodes < 1 || o.nodes > maxBenchFabricNodes || o.switches < 1 || o.switches > maxBenchFabricSwitches ||
		o.workers < 1 || o.workers > maxBenchFabricWorkers || (o.driver != "ovs" && o.driver != "gnmi") {
		return fmt.Errorf("--driver ovs|gnmi, --nodes 1..%d, --switches 1..%d, --workers 1..%d", maxBenchFabricNodes, maxBenchFabricSwitches, maxBenchFabricWorkers)
	}
	if perSwitch := 3 * ((o.nodes + o.switches - 1) / o.switches); o.driver == "gnmi" && perSwitch > gnmiBenchMaxPorts {
		return fmt.Errorf("--driver gnmi: %d ports on a switch, the lab's target takes %d: more --switches", perSwitch, gnmiBenchMaxPorts)
	}
	return nil
}

func (r FabricResult) text(a *app) {
	where, floor := "Open vSwitch, netdev datapath", "ovs-vsctl, one transaction per switch"
	if r.Driver == "gnmi" {
		where, floor = "the lab's gNMI target, one listener", "a plain gNMI client, one Set (repeat: one Get) per switch"
	}
	fmt.Fprintf(a.stdout, "%d nodes, %d ports on %d switches (%s), %d ConfigurePorts calls at once\n",
		r.Nodes, r.Ports, r.Switches, where, r.Workers)
	for _, p := range r.Phases {
		sets := ""
		if p.Sets != nil {
			sets = fmt.Sprintf("  %d Sets", *p.Sets)
		}
		fmt.Fprintf(a.stdout, "%-16s %7.2f s  %6.2f ms/node  %6.3f ms/port  call p50 %.1f ms p95 %.1f ms  floor %.3f s (%s)  wall/floor %.1f  %d ports verified%s\n",
			p.Phase, p.WallSeconds, p.MsPerNode, p.MsPerPort, p.CallP50Ms, p.CallP95Ms, p.FloorSeconds, floor, p.WallOverFlr, p.Verified, sets)
	}
}

// benchNodes generates n nodes: node i on switch i%switches, its pxe0
// on port "<i>x", data0 and data1 on "<i>a" and "<i>b" (bonded, LACP),
// the networks of the example site's compute profile.
func benchNodes(n, switches int) []drivers.Node {
	pxe := drivers.InterfaceNetwork{Subnet: drivers.Subnet{Name: "pxe", CIDR: "10.11.0.0/16", MTU: 1500, UntaggedVLAN: 11}, Address: "dhcp"}
	mgmt := drivers.InterfaceNetwork{Subnet: drivers.Subnet{Name: "mgmt", CIDR: "10.12.0.0/16", MTU: 1500, UntaggedVLAN: 12}}
	storage := drivers.InterfaceNetwork{Subnet: drivers.Subnet{Name: "storage", CIDR: "10.13.0.0/16", VLAN: 30, MTU: 9000}}
	out := make([]drivers.Node, n)
	for i := range out {
		sw := "sw" + strconv.Itoa(i%switches)
		p := "n" + strconv.Itoa(i)
		out[i] = drivers.Node{NodeRef: drivers.NodeRef{Name: "node" + strconv.Itoa(i)},
			Fabric: &drivers.NodeFabric{ProvisioningVLAN: 11, QuarantineVLAN: benchQuarantineVLAN, PXEInterface: "pxe"},
			Interfaces: []drivers.Interface{
				{Name: "pxe", Link: drivers.Link{Name: "pxe-link", MTU: 1500, BondMode: "disabled", Trunking: "disabled"},
					Devices: []drivers.Device{{Alias: "pxe0", Switch: sw, Port: p + "x"}}, Networks: []drivers.InterfaceNetwork{pxe}},
				{Name: "bond0", Link: drivers.Link{Name: "data-bond", MTU: 9000, BondMode: "802.3ad", LACPRate: "fast", Trunking: "802.1q", NativeNetwork: "mgmt"},
					Devices:  []drivers.Device{{Alias: "data0", Switch: sw, Port: p + "a"}, {Alias: "data1", Switch: sw, Port: p + "b"}},
					Networks: []drivers.InterfaceNetwork{mgmt, storage}},
			}}
	}
	return out
}

// benchSwitches starts one Open vSwitch per switch in dir, each with a
// bridge of its name and, for every port the nodes name on it, a veth
// end as a port (its peer beside it, down: no traffic).
func benchSwitches(ctx context.Context, dir string, nodes []drivers.Node, switches int) ([]*ovs.Switchd, error) {
	ports := map[string][]string{}
	for _, n := range nodes {
		for _, in := range n.Interfaces {
			for _, d := range in.Devices {
				ports[d.Switch] = append(ports[d.Switch], d.Port)
			}
		}
	}
	var out []*ovs.Switchd
	for s := range switches {
		name := "sw" + strconv.Itoa(s)
		sd, err := startBenchSwitch(ctx, filepath.Join(dir, name), name, ports[name])
		if sd != nil {
			out = append(out, sd)
		}
		if err != nil {
			return out, fmt.Errorf("switch %s: %w", name, err)
		}
	}
	return out, nil
}

// startBenchSwitch starts one switch with its ports (see benchSwitches).
func startBenchSwitch(ctx context.Context, dir, name string, ports []string) (*ovs.Switchd, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	sd, err := ovs.Start(ctx, dir)
	if err != nil {
		return nil, err
	}
	if err := sd.AddBridge(ctx, name); err != nil {
		return sd, err
	}
	const batch = 250 // veths per ip -batch, ports per ovs-vsctl
	for lo := 0; lo < len(ports); lo += batch {
		chunk := ports[lo:min(lo+batch, len(ports))]
		var script strings.Builder
		for _, p := range chunk {
			fmt.Fprintf(&script, "link add %s type veth peer name %sz\nlink set %s up\n", p, p, p)
		}
		f := filepath.Join(dir, "veths")
		if err := os.WriteFile(f, []byte(script.String()), 0o600); err != nil {
			return sd, err
		}
		if _, err := sd.IP(ctx, "", "-batch", f); err != nil {
			return sd, err
		}
		var args []string
		for _, p := range chunk {
			args = append(args, "--", "add-port", name, p)
		}
		if _, err := sd.Vsctl(ctx, args...); err != nil {
			return sd, err
		}
	}
	return sd, nil
}

// runFabricBench runs both phases through the driver, then the floor on
// fresh switches.
func runFabricBench(ctx context.Context, o fabricBench) (FabricResult, error) {
	res := FabricResult{Driver: "ovs", Nodes: o.nodes, Ports: 3 * o.nodes, Switches: o.switches, Workers: o.workers}
	nodes := benchNodes(o.nodes, o.switches)
	dir, err := os.MkdirTemp("", "bfab")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	phases := []drivers.Phase{drivers.PhaseProduction, drivers.PhaseQuarantine}
	walls, calls, verified, err := driverRun(ctx, filepath.Join(dir, "d"), nodes, o, phases)
	if err != nil {
		return res, err
	}
	floors, err := floorRun(ctx, filepath.Join(dir, "f"), nodes, o.switches, phases)
	if err != nil {
		return res, err
	}
	for i, ph := range phases {
		p := FabricPhase{Phase: string(ph), WallSeconds: walls[i].Seconds(), FloorSeconds: floors[i].Seconds(), Verified: verified[i]}
		p.MsPerNode = float64(walls[i].Microseconds()) / 1000 / float64(o.nodes)
		p.MsPerPort = p.MsPerNode / 3
		p.CallP50Ms, p.CallP95Ms = pctMs(calls[i], 0.50), pctMs(calls[i], 0.95)
		if p.FloorSeconds > 0 {
			p.WallOverFlr = p.WallSeconds / p.FloorSeconds
		}
		res.Phases = append(res.Phases, p)
	}
	return res, nil
}

func pctMs(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[min(int(p*float64(len(s))), len(s)-1)].Microseconds()) / 1000
}

// driverRun configures every node's ports through the ovs driver for
// each phase in turn, o.workers calls at once, timing each phase and
// each call, then counts the ports ovs-vsctl reads back as the phase
// wants.
func driverRun(ctx context.Context, dir string, nodes []drivers.Node, o fabricBench, phases []drivers.Phase) ([]time.Duration, [][]time.Duration, []int, error) {
	sws, err := benchSwitches(ctx, dir, nodes, o.switches)
	defer closeAll(sws)
	if err != nil {
		return nil, nil, nil, err
	}
	var eps []drivers.SwitchEndpoint
	for i, sd := range sws {
		name := "sw" + strconv.Itoa(i)
		eps = append(eps, drivers.SwitchEndpoint{Name: name, Address: sd.Unix, Settings: map[string]string{"bridge": name}})
	}
	drv, err := ovsdrv.New(driverspec.NetworkConfig(drivers.Config{}, eps))
	if err != nil {
		return nil, nil, nil, err
	}
	if c, ok := drv.(interface{ Close() error }); ok {
		defer c.Close()
	}
	walls := make([]time.Duration, len(phases))
	calls := make([][]time.Duration, len(phases))
	verified := make([]int, len(phases))
	for i, ph := range phases {
		start := time.Now()
		if calls[i], err = configureAll(ctx, drv, nodes, ph, o.workers); err != nil {
			return nil, nil, nil, err
		}
		walls[i] = time.Since(start)
		if verified[i], err = verifyPorts(ctx, sws, ph); err != nil {
			return nil, nil, nil, err
		}
	}
	return walls, calls, verified, nil
}

// configureAll calls ConfigurePorts for every node, workers at once; the
// first error stops the phase.
func configureAll(ctx context.Context, drv drivers.Network, nodes []drivers.Node, ph drivers.Phase, workers int) ([]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	took := make([]time.Duration, len(nodes))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t := time.Now()
				_, err := drv.ConfigurePorts(ctx, nodes[i], ph)
				took[i] = time.Since(t)
				if err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("%s: node %s: %w", ph, nodes[i].Name, err)
						cancel()
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range nodes {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return took, first
}

// verifyPorts counts, with ovs-vsctl, the ports as phase wants them: in
// production each member of a node's bond (a Port of two interfaces,
// LACP active) and each PXE port (access on the pxe network's VLAN 11);
// in quarantine every port an access port of the quarantine VLAN.
func verifyPorts(ctx context.Context, sws []*ovs.Switchd, ph drivers.Phase) (int, error) {
	count := 0
	for _, sd := range sws {
		out, err := sd.Vsctl(ctx, "--format=csv", "--no-headings", "--columns=name,tag,lacp,interfaces", "list", "Port")
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.SplitN(line, ",", 4)
			if len(f) < 4 {
				continue
			}
			name, tag, lacp := f[0], f[1], f[2]
			switch {
			case ph == drivers.PhaseQuarantine && tag == strconv.Itoa(benchQuarantineVLAN):
				count++
			case ph == drivers.PhaseProduction && lacp == "active" && strings.Count(f[3], ",") == 1:
				count += 2 // a bond of two members
			case ph == drivers.PhaseProduction && strings.HasSuffix(name, "x") && tag == "11":
				count++
			}
		}
	}
	return count, nil
}

func closeAll(sws []*ovs.Switchd) {
	for _, sd := range sws {
		_ = sd.Close()
	}
}

// floorRun applies the same settings as the driver with ovs-vsctl, one
// transaction per switch and phase (the switches at once), on fresh
// switches, and times each phase.
func floorRun(ctx context.Context, dir string, nodes []drivers.Node, switches int, phases []drivers.Phase) ([]time.Duration, error) {
	sws, err := benchSwitches(ctx, dir, nodes, switches)
	defer closeAll(sws)
	if err != nil {
		return nil, err
	}
	out := make([]time.Duration, len(phases))
	for i, ph := range phases {
		args := make([][]string, len(sws))
		for _, n := range nodes {
			s, _ := strconv.Atoi(strings.TrimPrefix(n.Interfaces[0].Devices[0].Switch, "sw"))
			args[s] = append(args[s], floorArgs(n, ph)...)
		}
		start := time.Now()
		errs := make([]error, len(sws))
		var wg sync.WaitGroup
		for s, sd := range sws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[s] = sd.Vsctl(ctx, args[s]...)
			}()
		}
		wg.Wait()
		out[i] = time.Since(start)
		for _, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("floor, %s: %w", ph, err)
			}
		}
	}
	return out, nil
}

// floorArgs are ovs-vsctl's commands setting node n's ports for phase as
// the driver does: production: the PXE port access on VLAN 11, the data
// ports one LACP bond trunking VLAN 30 with 12 native, MTU 9000;
// quarantine: every port its own access port on the quarantine VLAN.
func floorArgs(n drivers.Node, ph drivers.Phase) []string {
	pxe, data := n.Interfaces[0].Devices[0], n.Interfaces[1].Devices
	br, lag := pxe.Switch, n.Name+"-bond0"
	if ph == drivers.PhaseProduction {
		return []string{"--", "set", "Port", pxe.Port, "tag=11", "--", "set", "Interface", pxe.Port, "mtu_request=1500",
			"--", "del-port", br, data[0].Port, "--", "del-port", br, data[1].Port,
			"--", "add-bond", br, lag, data[0].Port, data[1].Port, "lacp=active", "bond_mode=balance-tcp", "other_config:lacp-time=fast",
			"vlan_mode=native-untagged", "tag=12", "trunks=12,30",
			"--", "set", "Interface", data[0].Port, "mtu_request=9000", "--", "set", "Interface", data[1].Port, "mtu_request=9000"}
	}
	q := "tag=" + strconv.Itoa(benchQuarantineVLAN)
	return []string{"--", "set", "Port", pxe.Port, q, "--", "clear", "Interface", pxe.Port, "mtu_request",
		"--", "del-port", br, lag, "--", "add-port", br, data[0].Port, q, "--", "add-port", br, data[1].Port, q}
}
