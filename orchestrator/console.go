package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Serial consoles for on-call: the engine attaches to a node's console
// through the first of its OOB methods whose driver has one (the IPMI
// driver's Serial over LAN; for a Redfish-managed node, its ipmi
// fallback), one console per node, read-only unless asked otherwise.
// Attaching and detaching are events of the node; typed characters are
// never recorded, only counted.

// MaxConsoleInput bounds one ConsoleInput call.
const MaxConsoleInput = 4096

// consoleSession is an attached console.
type consoleSession struct {
	who   string
	since time.Time
	in    chan []byte // nil: read-only
	typed int
}

// consoles are the attached consoles, by node.
type consoles struct {
	mu sync.Mutex
	by map[string]*consoleSession
}

func (c *consoles) take(node string, s *consoleSession) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]*consoleSession{}
	}
	if h := c.by[node]; h != nil {
		return fmt.Errorf("%w: the console of node %s is attached by %s since %s: one console per node; ask them to detach",
			ErrConflict, node, h.who, h.since.Format(time.RFC3339))
	}
	c.by[node] = s
	return nil
}

func (c *consoles) drop(node string, s *consoleSession) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by[node] == s {
		delete(c.by, node)
	}
	return s.typed
}

// Console attaches to node's serial console and copies what the machine
// writes to out until ctx is done (nil) or the console ends (an error);
// with readWrite, ConsoleInput types at it. attached (if set) is called
// once the BMC accepted the console, before any output. ErrNotFound for a node the
// current design lacks; ErrConflict when the node has no console this
// engine can attach to, or it is attached already (here or elsewhere).
func (e *Engine) Console(ctx context.Context, node, who string, readWrite bool, out io.Writer, attached func()) error {
	d := e.currentDesign(ctx)
	if d == nil {
		return fmt.Errorf("%w: no design is stored: apply one first", ErrConflict)
	}
	n, ok := d.Nodes[node]
	if !ok {
		return fmt.Errorf("%w: node %.80q is not in the current design", ErrNotFound, node)
	}
	ts, err := e.oobTargets(ctx, d, n)
	if err != nil {
		return err
	}
	t, con, err := consoleTarget(node, ts)
	if err != nil {
		return err
	}
	s := &consoleSession{who: orDefault(who, "unknown"), since: now()}
	if readWrite {
		s.in = make(chan []byte, 16)
	}
	if err := e.cons.take(node, s); err != nil {
		return err
	}
	mode := map[bool]string{false: "read-only", true: "read-write"}[readWrite]
	e.consoleEvent(ctx, node, "console attached by %s (%s) over %s, BMC %s:%d", s.who, mode, t.typ, t.bmc.Address, t.bmc.Port)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(e.ctx, stop)()
	err = con.Console(ctx, t.bmc, drivers.ConsoleIO{Out: out, In: s.in, Attached: attached})
	typed := e.cons.drop(node, s)
	e.consoleEvent(context.WithoutCancel(ctx), node, "console detached by %s after %s (%d characters typed)%s",
		s.who, time.Since(s.since).Round(time.Second), typed, errSuffix(err))
	if errors.Is(err, drivers.ErrConsoleBusy) {
		return fmt.Errorf("%w: node %s: %v: another tool holds it (e.g. ipmitool sol activate); end it there (ipmitool sol deactivate) and attach again",
			ErrConflict, node, err)
	}
	return err
}

// consoleTarget is the first OOB method whose driver has a console.
func consoleTarget(node string, ts []oobTarget) (oobTarget, drivers.OOBConsole, error) {
	var types []string
	for _, t := range ts {
		if c, ok := t.drv.(drivers.OOBConsole); ok {
			return t, c, nil
		}
		types = append(types, t.typ)
	}
	return oobTarget{}, nil, fmt.Errorf("%w: node %s: none of its OOB methods (%v) offers a serial console Slipway can attach to "+
		"(Serial over LAN needs ipmi; a Redfish BMC's console is SSH, not carried here): give its hardware profile an ipmi oob.fallback, "+
		"or use the vendor's console", ErrConflict, node, types)
}

// ConsoleInput types data at node's console, attached read-write.
func (e *Engine) ConsoleInput(ctx context.Context, node string, data []byte) error {
	if len(data) > MaxConsoleInput {
		return fmt.Errorf("console input of node %s: %d bytes at once; at most %d (the API refuses more before this)", node, len(data), MaxConsoleInput)
	}
	e.cons.mu.Lock()
	s := e.cons.by[node]
	if s != nil && s.in != nil {
		s.typed += len(data)
	}
	e.cons.mu.Unlock()
	switch {
	case s == nil:
		return fmt.Errorf("%w: no console of node %s is attached: attach one read-write first", ErrConflict, node)
	case s.in == nil:
		return fmt.Errorf("%w: the console of node %s is attached read-only (by %s)", ErrConflict, node, s.who)
	}
	select {
	case s.in <- append([]byte(nil), data...):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Engine) consoleEvent(ctx context.Context, node, format string, args ...any) {
	var b batch
	b.event(record.Event{Time: now(), Node: node, Level: "info", Kind: "console", Message: fmt.Sprintf(format, args...)})
	if err := e.rec.write(ctx, &b); err != nil {
		e.log.Warn().Err(err).Str("node", node).Msg("console event not recorded")
	}
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}
