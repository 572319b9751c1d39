// Package oobctl drives one node's BMC from this host, as the design
// describes it, without the engine: it chooses the node's OOB method,
// builds the driver's BMC (address, port, protocol, credentials resolved
// from their reference) and runs one power or boot action until the
// driver says it is done. The CLI's `power --design` calls it; the engine
// has its own path (orchestrator's OOB steps).
//
// Known gap: the per-node power-credential overrides (package powercreds,
// kept in the server's secret store) are not read here; the design's
// oob.credentials are used.
package oobctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/secrets"
)

// Actions are the actions Run knows.
var Actions = []string{"status", "on", "off", "cycle", "pxe"}

// ErrNoAddress: neither the design nor Options.Addr gives the BMC an
// address.
var ErrNoAddress = errors.New("no BMC address (oob.address)")

// UsageError is an option the caller gave that does not fit the design
// (Option names the Options field: node, oob or bmc).
type UsageError struct {
	Option, Value string
	Err           error
}

func (e *UsageError) Error() string { return e.Option + " " + e.Value + ": " + e.Err.Error() }

func (e *UsageError) Unwrap() error { return e.Err }

func usage(option, value string, err error) error {
	return &UsageError{Option: option, Value: value, Err: err}
}

// Options choose the node's BMC and override what the design says of it.
type Options struct {
	Node   string
	Method string // "" (the node's first OOB method), "fallback", or a method's type
	Addr   string // HOST:PORT over the design's oob.address ("" keeps it)
	CAFile string // PEM file of an HTTPS BMC's CA over the design's oob.caFile ("" keeps it)
	// Persistent and EFI override the hardware profile's pxe.persistent
	// and bootMode for pxe; nil keeps the profile's.
	Persistent, EFI *bool
}

// Target is a node's BMC as Resolve built it: the OOB driver's name, the
// BMC (with its password) and the boot device pxe sets.
type Target struct {
	Node   string
	Driver string
	BMC    drivers.BMC
	Boot   drivers.BootDevice
}

// Resolve builds the node's Target from the design and the options,
// resolving the BMC password's reference (env:, file:, secret:).
func Resolve(d *design.Design, o Options) (Target, error) {
	n := d.Nodes[o.Node]
	if n == nil {
		return Target{}, usage("node", o.Node, errors.New("the design has no such node"))
	}
	ep, err := endpoint(d, n, o)
	if err != nil {
		return Target{}, err
	}
	ref := ep.PasswordRef
	if ref == "" {
		return Target{}, fmt.Errorf("node %s has no BMC password reference (oob.credentials.password)", o.Node)
	}
	pw, err := secrets.Resolve(ref)
	if err != nil {
		return Target{}, fmt.Errorf("node %s: BMC password %s: %w", o.Node, ref, err)
	}
	t := Target{Node: o.Node, Driver: ep.Type, BMC: driverspec.BMCAt(n, ep, pw), Boot: drivers.BootDevice{Device: "pxe"}}
	if o.CAFile != "" {
		t.BMC.CAFile, t.BMC.Fingerprint = o.CAFile, ""
	}
	// pxe: the hardware profile's boot mode and PXE persistence, unless
	// the options say otherwise.
	if hw := n.Spec.Hardware; hw != nil {
		t.Boot.EFI, t.Boot.Persistent = hw.BootMode == "uefi", hw.PXE.Persistent
	}
	if o.EFI != nil {
		t.Boot.EFI = *o.EFI
	}
	if o.Persistent != nil {
		t.Boot.Persistent = *o.Persistent
	}
	if err := overrideAddress(&t.BMC, o); err != nil {
		return Target{}, err
	}
	return t, nil
}

// endpoint is the node's OOB method o.Method names: its first (the
// default), or its hardware profile's fallback.
func endpoint(d *design.Design, n *design.Node, o Options) (design.OOBEndpoint, error) {
	first := n.OOB(d.SiteOOBDriver())
	fb, hasFallback := n.OOBFallback()
	switch {
	case o.Method == "" || o.Method == first.Type:
		return first, nil
	case hasFallback && (o.Method == "fallback" || o.Method == fb.Type):
		return fb, nil
	case hasFallback:
		return design.OOBEndpoint{}, usage("oob", o.Method, fmt.Errorf("node %s's BMC methods are %s, then %s (or say fallback)", o.Node, first.Type, fb.Type))
	}
	return design.OOBEndpoint{}, usage("oob", o.Method, fmt.Errorf("node %s has one BMC method, %s (its hardware profile names no oob.fallback)", o.Node, first.Type))
}

// overrideAddress applies o.Addr; the BMC must have an address after it.
func overrideAddress(bmc *drivers.BMC, o Options) error {
	if o.Addr != "" {
		host, port, err := splitHostPort(o.Addr)
		if err != nil {
			return usage("bmc", strconv.Quote(o.Addr), err)
		}
		bmc.Address, bmc.Port = host, port
	}
	if bmc.Address == "" {
		return fmt.Errorf("node %s has %w", o.Node, ErrNoAddress)
	}
	return nil
}

// splitHostPort splits HOST:PORT, the port from 1 to 65535.
func splitHostPort(s string) (string, int, error) {
	host, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 || host == "" {
		return "", 0, errors.New("write HOST:PORT with a port from 1 to 65535")
	}
	return host, port, nil
}

// Run runs the action (one of Actions) on the target's BMC with its OOB
// driver and answers the result's message (for status, the power state);
// progress reports each InProgress result while it waits.
func Run(ctx context.Context, oob drivers.OOB, t Target, action string, progress func(drivers.Result)) (string, error) {
	bmc := t.BMC
	if action == "status" {
		p, err := oob.PowerStatus(ctx, bmc)
		if err != nil {
			return "", fmt.Errorf("power status of %s: %w", t.Node, err)
		}
		return string(p), nil
	}
	step := map[string]func(context.Context) (drivers.Result, error){
		"on":    func(ctx context.Context) (drivers.Result, error) { return oob.PowerOn(ctx, bmc) },
		"off":   func(ctx context.Context) (drivers.Result, error) { return oob.PowerOff(ctx, bmc) },
		"cycle": func(ctx context.Context) (drivers.Result, error) { return oob.PowerCycle(ctx, bmc) },
		"pxe":   func(ctx context.Context) (drivers.Result, error) { return oob.SetBootDevice(ctx, bmc, t.Boot) },
	}[action]
	if step == nil {
		return "", fmt.Errorf("power %s of %s: no such action (want one of %v)", action, t.Node, Actions)
	}
	r, err := untilDone(ctx, step, progress)
	if err != nil {
		return "", fmt.Errorf("power %s of %s: %w", action, t.Node, err)
	}
	if r.Status == drivers.StatusFailed {
		return "", fmt.Errorf("power %s of %s failed: %s", action, t.Node, r.Message)
	}
	return r.Message, nil
}

// untilDone calls step until it is Done or Failed, waiting as InProgress
// asks; progress reports each InProgress result.
func untilDone(ctx context.Context, step func(context.Context) (drivers.Result, error), progress func(drivers.Result)) (drivers.Result, error) {
	for {
		r, err := step(ctx)
		if err != nil || r.Status != drivers.StatusInProgress {
			return r, err
		}
		progress(r)
		t := time.NewTimer(r.RetryAfter)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return r, fmt.Errorf("still in progress (%s): %w", r.Message, ctx.Err())
		}
	}
}
