package server

import (
	"context"
	"errors"
	"io"
	"sync/atomic"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// haEngine is the engine a replica's control API uses: the leading one
// while the replica leads, else one never started that answers reads from
// the shared store. A mutating call reaches it only when the replica
// leads (a standby forwards them); one that arrives while the leadership
// is being taken up or given up is refused, never run on the reader.
type haEngine struct {
	reader *orchestrator.Engine
	cur    atomic.Pointer[orchestrator.Engine]
}

// errNotLeading: this replica does not run the engine now.
var errNotLeading = errors.New("this replica does not run the engine now (the leadership is changing hands): send the call again")

func (h *haEngine) set(e *orchestrator.Engine) { h.cur.Store(e) }

// read is the engine that answers a read.
func (h *haEngine) read() *orchestrator.Engine {
	if e := h.cur.Load(); e != nil {
		return e
	}
	return h.reader
}

// leading is the running engine, or errNotLeading.
func (h *haEngine) leading() (*orchestrator.Engine, error) {
	if e := h.cur.Load(); e != nil {
		return e, nil
	}
	return nil, &unavailable{errNotLeading}
}

func (h *haEngine) Submit(ctx context.Context, req record.Request) (record.Task, error) {
	return onLeader(h, func(e *orchestrator.Engine) (record.Task, error) { return e.Submit(ctx, req) })
}

func (h *haEngine) Task(ctx context.Context, id string) (record.Task, []record.NodeResult, error) {
	return h.read().Task(ctx, id)
}

func (h *haEngine) Tasks(ctx context.Context) ([]record.Task, error) {
	return h.read().Tasks(ctx)
}

func (h *haEngine) TaskVerb(ctx context.Context, id string, v record.Verb, who string) (record.Task, error) {
	return onLeader(h, func(e *orchestrator.Engine) (record.Task, error) { return e.TaskVerb(ctx, id, v, who) })
}

func (h *haEngine) Node(ctx context.Context, name string) (record.NodeRecord, error) {
	return h.read().Node(ctx, name)
}

func (h *haEngine) Nodes(ctx context.Context) ([]record.NodeRecord, error) {
	return h.read().Nodes(ctx)
}

// ImageStatuses answers GET /api/v1/images on any replica: the records
// are the shared store's; the reader reads the Sites' provisioners too.
func (h *haEngine) ImageStatuses(ctx context.Context, d *design.Design) ([]orchestrator.ImageStatus, error) {
	return h.read().ImageStatuses(ctx, d)
}

// The API lists images through the engine it is given (501 otherwise).
var _ api.ImageViewer = (*haEngine)(nil)

func (h *haEngine) LastEvent(ctx context.Context) (uint64, error) { return h.read().LastEvent(ctx) }

func (h *haEngine) Events(ctx context.Context, after uint64, limit int, task, node string) ([]record.Event, error) {
	return h.read().Events(ctx, after, limit, task, node)
}

// onLeader runs a mutating call with the leading engine.
func onLeader[T any](h *haEngine, fn func(e *orchestrator.Engine) (T, error)) (T, error) {
	e, err := h.leading()
	if err != nil {
		var zero T
		return zero, err
	}
	return fn(e)
}

func (h *haEngine) Adopt(ctx context.Context, node, revision, who string) (record.NodeRecord, error) {
	return onLeader(h, func(e *orchestrator.Engine) (record.NodeRecord, error) {
		return e.Adopt(ctx, node, revision, who)
	})
}

func (h *haEngine) AdoptMachine(ctx context.Context, node, machineID, revision, who string) (record.NodeRecord, error) {
	return onLeader(h, func(e *orchestrator.Engine) (record.NodeRecord, error) {
		return e.AdoptMachine(ctx, node, machineID, revision, who)
	})
}

func (h *haEngine) MarkManual(ctx context.Context, node, why, who string) (record.NodeRecord, error) {
	return onLeader(h, func(e *orchestrator.Engine) (record.NodeRecord, error) {
		return e.MarkManual(ctx, node, why, who)
	})
}

func (h *haEngine) ReleaseManual(ctx context.Context, node, who string) (record.NodeRecord, error) {
	return onLeader(h, func(e *orchestrator.Engine) (record.NodeRecord, error) { return e.ReleaseManual(ctx, node, who) })
}

// Plan is read only: any replica plans.
func (h *haEngine) Plan(ctx context.Context, d *design.Design, id string) (record.Plan, error) {
	return h.read().Plan(ctx, d, id)
}

func (h *haEngine) Rebootstrap(ctx context.Context, node, who string) (record.Rebootstrapped, error) {
	return onLeader(h, func(e *orchestrator.Engine) (record.Rebootstrapped, error) {
		return e.Rebootstrap(ctx, node, who)
	})
}

func (h *haEngine) Console(ctx context.Context, node, who string, readWrite bool, out io.Writer, attached func()) error {
	e, err := h.leading()
	if err != nil {
		return err
	}
	return e.Console(ctx, node, who, readWrite, out, attached)
}

func (h *haEngine) ConsoleInput(ctx context.Context, node string, data []byte) error {
	e, err := h.leading()
	if err != nil {
		return err
	}
	return e.ConsoleInput(ctx, node, data)
}

// unavailable is an error the API answers 503 (api.Unavailable).
type unavailable struct{ err error }

func (u *unavailable) Error() string     { return u.err.Error() }
func (u *unavailable) Unwrap() error     { return u.err }
func (u *unavailable) Unavailable() bool { return true }

// NotRun: the call was refused before anything of it ran (the API says
// so, and the client sends it again).
func (u *unavailable) NotRun() bool { return errors.Is(u.err, errNotLeading) }
