package drivers

import "context"

type waitingKey struct{}

// WithWaiting returns a context whose calls can lend what they hold while
// they wait: lend gives back, for the time of a wait, what the caller took
// to make the call (the engine's slot of its provisioner limit), and
// returns the function that takes it again.
func WithWaiting(ctx context.Context, lend func() (resume func())) context.Context {
	return context.WithValue(ctx, waitingKey{}, lend)
}

// Waiting tells the caller of a driver method that the method is about to
// wait for something other than its own request (another call's batch
// that will carry its request too), so that the slot it holds serves
// others meanwhile. Call the returned function when the wait ends: it may
// block until a slot is free again. A no-op without WithWaiting.
func Waiting(ctx context.Context) (resume func()) {
	if lend, ok := ctx.Value(waitingKey{}).(func() func()); ok {
		return lend()
	}
	return func() {}
}
