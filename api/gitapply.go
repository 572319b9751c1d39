package api

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/gitsync"
)

// GitApplier is the gitsync.Applier serve gives its follower: each
// commit's design applied through ApplyDir, the Sites' destructive
// policy deciding what waits for an approval. Set Srv once the API is
// built.
type GitApplier struct {
	Srv           atomic.Pointer[Server]
	TrustBindings bool // the git block's trust_bindings
}

// ApplyDir applies req through the control API.
func (a *GitApplier) ApplyDir(ctx context.Context, req gitsync.ApplyRequest) (gitsync.ApplyResult, error) {
	srv := a.Srv.Load()
	if srv == nil {
		return gitsync.ApplyResult{}, errors.New("the control API is not up yet")
	}
	out, err := srv.ApplyDir(ctx, DirApply{Dir: req.Dir, Roots: req.Roots, GitCommit: req.Commit, GitAuthor: req.Author,
		GitMessage: req.Message, Approve: req.Approve, Actor: req.Actor, TrustBindings: a.TrustBindings, SitePolicy: true})
	if err != nil {
		return gitsync.ApplyResult{}, err
	}
	res := gitsync.ApplyResult{Revision: out.Revision, Result: out.Result, Destructive: out.Held, Approve: out.Approve, Bindings: out.HeldBindings}
	for _, f := range out.Findings {
		if f.Severity == design.SeverityError {
			res.Findings = append(res.Findings, fmt.Sprintf("%s:%d: %s", f.File, f.Line, f.Message))
		}
	}
	return res, nil
}
