package drivers

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Status is the state of a step after one call.
type Status string

// Step statuses.
const (
	StatusDone       Status = "done"
	StatusInProgress Status = "in-progress"
	StatusFailed     Status = "failed"
)

// Result is what a step returns when the call itself worked. "Still
// working" (InProgress, with when to look again) and "failed" (with the
// reason, final for this attempt) are distinct values, never errors.
type Result struct {
	Status     Status        `json:"status"`
	RetryAfter time.Duration `json:"retry_after,omitempty"` // InProgress: look again after this
	Message    string        `json:"message,omitempty"`     // what was done, what is awaited, or why it failed
}

// Done reports a step that reached its goal.
func Done(format string, args ...any) Result {
	return Result{Status: StatusDone, Message: fmt.Sprintf(format, args...)}
}

// InProgress reports a step that is under way; call again after d.
func InProgress(d time.Duration, format string, args ...any) Result {
	return Result{Status: StatusInProgress, RetryAfter: d, Message: fmt.Sprintf(format, args...)}
}

// Failed reports a step that cannot reach its goal as things stand.
func Failed(format string, args ...any) Result {
	return Result{Status: StatusFailed, Message: fmt.Sprintf(format, args...)}
}

// Valid reports whether r is well formed.
func (r Result) Valid() bool {
	switch r.Status {
	case StatusDone:
		return r.RetryAfter == 0
	case StatusInProgress:
		return r.RetryAfter > 0
	case StatusFailed:
		return r.Message != "" && r.RetryAfter == 0
	}
	return false
}

// Class says what a caller should do about an error.
type Class string

// Error classes.
const (
	// Transient: retry with backoff (timeouts, connection resets, a
	// crashed plugin, a busy provisioner).
	Transient Class = "transient"
	// Permanent: stop and record the reason (bad credentials, an image that
	// does not exist, a request the provisioner refuses).
	Permanent Class = "permanent"
	// NeedsIntervention: freeze the node until an operator acts (hardware
	// fault, a machine in a state only a person can resolve).
	NeedsIntervention Class = "needs-intervention"
)

// Error is a classified driver error.
type Error struct {
	Class Class
	Err   error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.Class, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// NewError classifies err. A nil err gives nil.
func NewError(c Class, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Class: c, Err: err}
}

// Errorf returns a classified error built like fmt.Errorf.
func Errorf(c Class, format string, args ...any) error {
	return &Error{Class: c, Err: fmt.Errorf(format, args...)}
}

// Classify returns the class of err: the class it carries, Transient for a
// deadline, Permanent for a cancellation (the caller gave up), and
// Transient for anything unclassified, so that the engine's retry budget,
// not a guess, decides when to stop.
func Classify(err error) Class {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Class
	case errors.Is(err, context.DeadlineExceeded):
		return Transient
	case errors.Is(err, context.Canceled):
		return Permanent
	}
	return Transient
}
