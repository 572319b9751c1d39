package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

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
	FabricPage(ctx context.Context, d *design.Design, q orchestrator.FabricQuery) (orchestrator.FabricPage, error)
}

// maxFabricNodes bounds the node= (and switch=) values of one GET /fabric.
const maxFabricNodes = 1000

func (s *Server) fabricRoutes() []route {
	return []route{
		{Method: "GET", Path: v1 + "/fabric", Role: auth.RoleViewer, Response: apitypes.Fabric{},
			Query: []param{{Name: "node", Many: true, Doc: "only these nodes' ports (at most 1000)"},
				{Name: "switch", Many: true, Doc: "only these switches' ports (at most 1000)"},
				{Name: "after", Doc: "the previous page's next: the ports after it"},
				{Name: "limit", Type: "integer", Min: ptr(1.0), Max: ptr(float64(orchestrator.MaxFabricPage)), Doc: "ports in the page (default 1000)"}},
			Problems: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusNotImplemented},
			Summary: "the fabric, a page of ports at a time: each port the design cables to a node once (by switch, then port) with its desired configuration for its node's phase, " +
				"what the switch reports and the LLDP finding; the switches with their port counts and VLANs", handler: s.fabric},
	}
}

// fabric: ?node= and ?switch= (several: any of them), ?after=, ?limit=.
func (s *Server) fabric(c echo.Context) error {
	fv, ok := s.cfg.Engine.(FabricViewer)
	if !ok {
		return problem(http.StatusNotImplemented, "this server's engine does not read the fabric")
	}
	ctx := c.Request().Context()
	d, err := s.currentDesignOrNil(ctx)
	if err != nil {
		return err
	}
	q, err := fabricQuery(c, d)
	if err != nil {
		return err
	}
	pg, err := fv.FabricPage(ctx, d, q)
	if errors.Is(err, orchestrator.ErrFabricQuery) {
		return problem(http.StatusBadRequest, err.Error())
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, wireFabric(pg))
}

// fabricQuery is a GET /fabric's query, checked against d.
func fabricQuery(c echo.Context, d *design.Design) (orchestrator.FabricQuery, error) {
	q := orchestrator.FabricQuery{Nodes: c.QueryParams()["node"], Switches: c.QueryParams()["switch"], After: c.QueryParam("after")}
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > orchestrator.MaxFabricPage {
			return q, problem(http.StatusBadRequest, fmt.Sprintf("limit: want a number from 1 to %d", orchestrator.MaxFabricPage))
		}
		q.Limit = n
	}
	for _, f := range []struct {
		what string
		vs   []string
	}{{"node", q.Nodes}, {"switch", q.Switches}} {
		what, vs := f.what, f.vs
		if len(vs) > maxFabricNodes {
			return q, problem(http.StatusBadRequest, fmt.Sprintf("%s: %d values, at most %d", what, len(vs), maxFabricNodes))
		}
		for _, v := range vs {
			if len(v) > record.MaxFilterValueLen {
				return q, problem(http.StatusBadRequest, fmt.Sprintf("%s: a name of %d bytes, at most %d", what, len(v), record.MaxFilterValueLen))
			}
		}
	}
	for _, n := range q.Nodes {
		if d == nil || d.Nodes[n] == nil {
			return q, problem(http.StatusNotFound, fmt.Sprintf("node %.80q is not in the current design", n))
		}
	}
	for _, sw := range q.Switches {
		if d == nil || !cabledSwitch(d, sw) {
			return q, problem(http.StatusNotFound, fmt.Sprintf("switch %.80q is not in the current design's fabric or cabling", sw))
		}
	}
	return q, nil
}

// cabledSwitch reports whether d declares switch sw or cables a node to it.
func cabledSwitch(d *design.Design, sw string) bool {
	for _, s := range d.AllSwitches() {
		if s.Name == sw {
			return true
		}
	}
	for _, n := range d.Nodes {
		for _, c := range n.Spec.Cabling {
			if c.Switch == sw {
				return true
			}
		}
	}
	return false
}

func wireFabric(pg orchestrator.FabricPage) apitypes.Fabric {
	out := apitypes.Fabric{Switches: []apitypes.FabricSwitch{}, Ports: wirePorts(pg.Ports), Unplanned: []apitypes.FabricNode{},
		Total: pg.Total, Next: pg.Next, Read: pg.Read, ReadNote: pg.ReadNote}
	for _, sw := range pg.Switches {
		out.Switches = append(out.Switches, apitypes.FabricSwitch{Name: sw.Name, Site: sw.Site, Ports: sw.Ports, VLANs: append([]int{}, sw.VLANs...), Error: sw.Error})
	}
	for _, n := range pg.Unplanned {
		out.Unplanned = append(out.Unplanned, apitypes.FabricNode{Node: n.Node, Site: n.Site, Phase: string(n.Phase), Error: n.Error})
	}
	return out
}

func wirePorts(ps []orchestrator.FabricPort) []apitypes.FabricPort {
	out := make([]apitypes.FabricPort, 0, len(ps))
	for _, p := range ps {
		w := apitypes.FabricPort{Switch: p.Switch, Port: p.Port, Node: p.Node, Alias: p.Alias, Interface: p.Interface, Phase: string(p.Phase),
			Desired: wirePortConfig(p.Desired), State: p.State, Diff: p.Diff, Finding: p.Finding, LLDP: p.LLDP}
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
