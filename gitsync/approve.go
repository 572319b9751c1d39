package gitsync

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrNotHeld: the approval names no commit held for approval.
var ErrNotHeld = errors.New("not held")

// ErrBadCommit: the approval's commit is not a commit ID.
var ErrBadCommit = errors.New("not a commit ID")

// ErrNeedsAdmin: the held commit changes credential bindings, and the
// approver may not (POST /designs asks an admin for such a change).
var ErrNeedsAdmin = errors.New("needs an admin")

// Approve applies the held commit named by commit (its ID or a prefix of
// at least 7 hex digits) with what it was held for approved, and only
// that (a plan that now does more is held again); who is recorded as the
// actor, bindings says whether they may approve a credential binding
// change. The event says what happened.
func (f *Follower) Approve(ctx context.Context, commit, who string, bindings bool) (Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := f.status.load(ctx)
	if err != nil {
		return Event{}, err
	}
	if err := checkHeld(st.Held, commit); err != nil {
		return Event{}, err
	}
	held := *st.Held
	if held.Bindings && !bindings {
		return Event{}, fmt.Errorf("commit %s: %w: it changes credential bindings (orchestrator git status lists the change): an admin approves it",
			short(held.Commit), ErrNeedsAdmin)
	}
	ev := Event{Time: now(), Trigger: "approve", Commit: held.Commit}
	r, err := f.open(ctx)
	if err != nil {
		return ev, err
	}
	defer r.close()
	if !r.has(ctx, held.Commit) {
		if err := r.fetch(ctx, DefaultDepth, 0); err != nil {
			return ev, err
		}
		if !r.has(ctx, held.Commit) {
			return ev, fmt.Errorf("commit %s is no longer on branch %s of %s: nothing applied", short(held.Commit), f.cfg.Branch, Redacted(f.cfg.URL))
		}
	}
	f.applyCommit(ctx, r, &st, &ev, held.Commit, held.Approval, clip(who, 64)+" approving "+short(held.Commit))
	st.event(ev)
	f.logEvent(ev)
	if err := f.status.save(context.WithoutCancel(ctx), st); err != nil { // the caller gone: still said
		return ev, err
	}
	return ev, nil
}

// checkHeld says whether commit names the held commit.
func checkHeld(h *Held, commit string) error {
	if len(commit) < 7 || len(commit) > 64 || strings.Trim(commit, "0123456789abcdef") != "" {
		return fmt.Errorf("commit %.70q: %w: want 7 to 64 lowercase hex digits of the held commit", commit, ErrBadCommit)
	}
	if h == nil {
		return fmt.Errorf("commit %s: %w: no commit is held for approval (GET /api/v1/git/status)", commit, ErrNotHeld)
	}
	if !strings.HasPrefix(h.Commit, commit) {
		return fmt.Errorf("commit %s: %w: the commit held for approval is %s", commit, ErrNotHeld, h.Commit)
	}
	return nil
}
