package orchestrator

import (
	"context"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
)

// bmcAuth is how the node's BMC is logged in to: its power-credential
// override when it has one (user is then the override's username), else
// the design's password (user "": the endpoint's own username). The
// override is read at each call, so a rotation takes effect at the
// node's next BMC call. A failed read fails the node for good, its error
// wrapping the read's: one the step's context cut short (a cancel, the
// engine stopping) is then seen as that by the stage (stageFailed).
func (e *Engine) bmcAuth(ctx context.Context, d *design.Design, n *design.Node) (user string, pw drivers.Secret, err error) {
	if e.cfg.BMCOverride != nil {
		u, p, ok, err := e.bmcOverride(ctx, n.Metadata.Name)
		if err != nil {
			return "", drivers.Secret{}, drivers.Errorf(drivers.Permanent,
				"node %s: its BMC power-credential override: %w (write it again with PUT /api/v1/admin/nodes/%s/power-credentials, or delete it; then retry the task)",
				n.Metadata.Name, err, n.Metadata.Name)
		}
		if ok {
			return u, p, nil
		}
	}
	pw, err = e.password(ctx, d, n)
	return "", pw, err
}

// bmcOverride reads node's override within secretWait and the engine's
// life, like a secret.
func (e *Engine) bmcOverride(ctx context.Context, node string) (string, drivers.Secret, bool, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, secretWait)
	defer cancel()
	if e.ctx != nil {
		stop := context.AfterFunc(e.ctx, cancel)
		defer stop()
	}
	return e.cfg.BMCOverride(ctx, node)
}

// overridden tells, for the preflight, whether a node's BMC takes a
// power-credential override (so the design's password is not needed); a
// read that fails says no, leaving the design's password to be checked.
// Nil when the engine has no overrides.
func (e *Engine) overridden(ctx context.Context) func(node string) bool {
	if e.cfg.BMCOverride == nil {
		return nil
	}
	return func(node string) bool {
		_, _, ok, err := e.bmcOverride(ctx, node)
		return err == nil && ok
	}
}
