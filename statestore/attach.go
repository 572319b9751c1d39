package statestore

import (
	"context"
	"slices"
	"sync"
)

// Attachment is ops that go with every Write made under a context
// (WithAttachment) while the attachment is on, in the same transaction:
// the API's idempotency record of a call ("this call changed the state")
// commits with the call's change or not at all, whatever the answer the
// caller saw. Every store here applies it (Attach in its Write); the ops
// must be Puts or Deletes, so that carrying them twice changes nothing.
type Attachment struct {
	mu  sync.Mutex
	ops []Op
	on  bool
}

// NewAttachment is an attachment of ops, on.
func NewAttachment(ops ...Op) *Attachment {
	return &Attachment{ops: slices.Clone(ops), on: true}
}

// Off stops the attachment: later Writes under its context go alone.
func (a *Attachment) Off() {
	a.mu.Lock()
	a.on = false
	a.mu.Unlock()
}

type attachmentKey struct{}

// WithAttachment is ctx with a: Writes under it carry a's ops.
func WithAttachment(ctx context.Context, a *Attachment) context.Context {
	return context.WithValue(ctx, attachmentKey{}, a)
}

// Attach is ops with the ops of ctx's attachment after them, while it is
// on (ops itself is not changed); a Write of no ops stays empty.
func Attach(ctx context.Context, ops []Op) []Op {
	a, _ := ctx.Value(attachmentKey{}).(*Attachment)
	if a == nil || len(ops) == 0 {
		return ops
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.on {
		return ops
	}
	return append(slices.Clip(ops), a.ops...)
}
