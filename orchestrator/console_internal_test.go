package orchestrator

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

type plainOOB struct{ drivers.OOB }

type consoleOOB struct{ drivers.OOB }

func (consoleOOB) Console(context.Context, drivers.BMC, drivers.ConsoleIO) error { return nil }

// The console goes through the first OOB method whose driver has one: a
// Redfish node's ipmi fallback; a node with none is refused, saying what
// to do.
func TestConsoleTarget(t *testing.T) {
	rf := oobTarget{typ: "redfish", drv: plainOOB{}}
	ipmi := oobTarget{typ: "ipmi", drv: consoleOOB{}}
	got, _, err := consoleTarget("gpu-1", []oobTarget{rf, ipmi})
	if err != nil || got.typ != "ipmi" {
		t.Fatalf("redfish with an ipmi fallback: %v %v", got.typ, err)
	}
	_, _, err = consoleTarget("gpu-1", []oobTarget{rf})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "ipmi oob.fallback") || !strings.Contains(err.Error(), "[redfish]") {
		t.Fatalf("redfish only: %v", err)
	}
}

// One console per node: a second take names who holds it; a drop lets
// the next one in.
func TestConsolesOnePerNode(t *testing.T) {
	var c consoles
	a, b := &consoleSession{who: "alice"}, &consoleSession{who: "bob"}
	if err := c.take("n1", a); err != nil {
		t.Fatal(err)
	}
	if err := c.take("n1", b); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "attached by alice") {
		t.Fatalf("second take: %v", err)
	}
	if err := c.take("n2", b); err != nil {
		t.Fatalf("another node: %v", err)
	}
	c.drop("n1", a)
	if err := c.take("n1", b); err != nil {
		t.Fatalf("after the drop: %v", err)
	}
}
