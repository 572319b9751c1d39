package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// FabricViewer is what GET /fabric needs of the engine (the
// orchestrator's Engine is one); an Engine that is not one answers 501.
type FabricViewer interface {
	Fabric(ctx context.Context, d *design.Design, nodes ...string) (orchestrator.FabricView, error)
}

// maxFabricNodes bounds the node= values of one GET /fabric.
const maxFabricNodes = 1000

func (s *Server) fabricRoutes() []route {
	return []route{
		{Method: "GET", Path: v1 + "/fabric", Role: auth.RoleViewer, Response: apitypes.Fabric{},
			Query:    []param{{Name: "node", Many: true, Doc: "only these nodes' ports (at most 1000)"}},
			Problems: []int{http.StatusNotFound, http.StatusNotImplemented},
			Summary:  "the fabric: switches, the ports the design cables to nodes, each port's desired configuration for its node's phase, what the switch reports, LLDP findings", handler: s.fabric},
	}
}

// fabric: ?node= (several: any of them).
func (s *Server) fabric(c echo.Context) error {
	fv, ok := s.cfg.Engine.(FabricViewer)
	if !ok {
		return problem(http.StatusNotImplemented, "this server's engine does not read the fabric")
	}
	nodes := c.QueryParams()["node"]
	if len(nodes) > maxFabricNodes {
		return problem(http.StatusBadRequest, fmt.Sprintf("node: %d values, at most %d", len(nodes), maxFabricNodes))
	}
	ctx := c.Request().Context()
	d, err := s.currentDesignOrNil(ctx)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		if len(n) > record.MaxFilterValueLen {
			return problem(http.StatusBadRequest, fmt.Sprintf("node: a name of %d bytes, at most %d", len(n), record.MaxFilterValueLen))
		}
		if d == nil || d.Nodes[n] == nil {
			return problem(http.StatusNotFound, fmt.Sprintf("node %.80q is not in the current design", n))
		}
	}
	v, err := fv.Fabric(ctx, d, nodes...)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wireFabric(v))
}

func wireFabric(v orchestrator.FabricView) apitypes.Fabric {
	out := apitypes.Fabric{Switches: []apitypes.FabricSwitch{}, Nodes: []apitypes.FabricNode{}, Findings: []apitypes.FabricFinding{},
		Read: v.Read, ReadNote: v.ReadNote}
	for _, sw := range v.Switches {
		out.Switches = append(out.Switches, apitypes.FabricSwitch{Name: sw.Name, Site: sw.Site, Ports: wirePorts(sw.Ports),
			VLANs: append([]int{}, sw.VLANs...), Error: sw.Error})
	}
	for _, n := range v.Nodes {
		out.Nodes = append(out.Nodes, apitypes.FabricNode{Node: n.Node, Site: n.Site, Phase: string(n.Phase), Ports: wirePorts(n.Ports), Error: n.Error})
	}
	for _, f := range v.Findings {
		out.Findings = append(out.Findings, apitypes.FabricFinding(f))
	}
	return out
}

func wirePorts(ps []orchestrator.FabricPort) []apitypes.FabricPort {
	out := make([]apitypes.FabricPort, 0, len(ps))
	for _, p := range ps {
		w := apitypes.FabricPort{Switch: p.Switch, Port: p.Port, Node: p.Node, Alias: p.Alias, Interface: p.Interface, Phase: string(p.Phase),
			Desired: wirePortConfig(p.Desired), State: p.State, Diff: p.Diff, LLDP: p.LLDP}
		if o := p.Observed; o != nil {
			w.Observed = &apitypes.PortState{PortConfig: wirePortConfig(o.PortConfig), Found: o.Found, Up: o.Up}
			if nb := o.Neighbor; nb != nil {
				w.Observed.Neighbor = &apitypes.LLDPNeighbor{ChassisID: nb.ChassisID, SystemName: nb.SystemName, PortID: nb.PortID, PortDescr: nb.PortDescr}
			}
		}
		out = append(out, w)
	}
	return out
}

func wirePortConfig(c drivers.PortConfig) apitypes.PortConfig {
	return apitypes.PortConfig{Mode: c.Mode, VLAN: c.VLAN, Trunk: c.Trunk, LAG: c.LAG, LACP: c.LACP, LACPRate: c.LACPRate, MTU: c.MTU, Enabled: c.Enabled}
}
