package orchestrator

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/drivers"
)

// TestBMCAuthCancelledIsNotAFailure: a BMC credential lookup that the
// step's context ends (the task cancelled, the engine stopping) returns
// the context's error, which the stage takes for a cancel (stageFailed),
// not a permanent failure of the node; a lookup that fails by itself still
// fails the node for good. Failed before: a cancel during the override's
// read failed the node at baseline (CI of a9a644e, TestVerbCancelResume).
func TestBMCAuthCancelledIsNotAFailure(t *testing.T) {
	d := designtest.Example(t)
	var n *design.Node
	for _, name := range slices.Sorted(maps.Keys(d.Nodes)) {
		if n == nil && d.Nodes[name].OOB(d.SiteOOBDriver()).PasswordRef != "" {
			n = d.Nodes[name]
		}
	}
	if n == nil {
		t.Fatal("no node of the example has a BMC password reference")
	}
	blocked := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	for name, e := range map[string]*Engine{
		"override": {cfg: Config{BMCOverride: func(ctx context.Context, _ string) (string, drivers.Secret, bool, error) {
			return "", drivers.Secret{}, false, blocked(ctx)
		}}},
		"password": {cfg: Config{Secrets: func(ctx context.Context, _ string) (drivers.Secret, error) { return drivers.Secret{}, blocked(ctx) }}},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, _, err := e.bmcAuth(ctx, d, n)
		if !errors.Is(err, ctx.Err()) { // what stageFailed takes for a cancel, not a failure
			t.Errorf("%s read cut by the cancel: %v, want the context's error", name, err)
		}
	}
	gone := errors.New("no such secret")
	e := &Engine{cfg: Config{Secrets: func(context.Context, string) (drivers.Secret, error) { return drivers.Secret{}, gone }}}
	if _, _, err := e.bmcAuth(t.Context(), d, n); drivers.Classify(err) != drivers.Permanent {
		t.Errorf("a password that cannot be read: %v (class %s), want permanent", err, drivers.Classify(err))
	}
}
