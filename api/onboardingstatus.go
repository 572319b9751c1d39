package api

import (
	"context"
	"errors"

	"github.com/slipway-dev/slipway/onboarding"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// statusReleased is an onboarding whose nodes a later workflow released
// (destroy_nodes) or deleted (decommission): no longer deployed, by
// request.
const statusReleased = "released"

// nodeLookup returns a node's record; ok is false when it has none yet.
type nodeLookup func(ctx context.Context, name string) (rec record.NodeRecord, ok bool, err error)

// engineNode looks each node up in the engine.
func (s *Server) engineNode(ctx context.Context, name string) (record.NodeRecord, bool, error) {
	n, err := s.cfg.Engine.Node(ctx, name)
	if errors.Is(err, orchestrator.ErrNotFound) {
		return n, false, nil
	}
	return n, err == nil, err
}

// nodeIndex reads every node record once, for a listing.
func (s *Server) nodeIndex(ctx context.Context) (nodeLookup, error) {
	ns, err := s.cfg.Engine.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]record.NodeRecord, len(ns))
	for _, n := range ns {
		byName[n.Name] = n
	}
	return func(_ context.Context, name string) (record.NodeRecord, bool, error) {
		n, ok := byName[name]
		return n, ok, nil
	}, nil
}

// onboardingStatus is an onboarding's status. While its deploy task runs
// it is the task's; after that it follows its nodes, whose records say
// where each machine is now, whichever workflow moved it there last (a
// rerun of another task, a new deploy, a destroy): see nodeStatus.
func onboardingStatus(ctx context.Context, r onboarding.Record, task record.TaskStatus, nodes nodeLookup) (string, error) {
	if !task.Finished() {
		return string(task), nil
	}
	parts := make(map[string]bool)
	for _, name := range r.Nodes() {
		n, ok, err := nodes(ctx, name)
		if err != nil {
			return "", err
		}
		st := string(task) // no record yet: the task never got to it
		if ok {
			st = nodeStatus(n.LifecycleState(), task)
		}
		parts[st] = true
	}
	return combineStatus(parts, string(task)), nil
}

// nodeStatus is what a node's lifecycle state means for its onboarding;
// a node no workflow has moved past the onboarding's task (new, or a
// state unknown to this build) keeps the task's status.
func nodeStatus(l record.Lifecycle, task record.TaskStatus) string {
	switch l {
	case record.LifecycleDeployed:
		return string(record.TaskSucceeded)
	case record.LifecycleDeploying, record.LifecyclePreparing, record.LifecycleReleasing:
		return string(record.TaskRunning)
	case record.LifecycleFailed:
		return string(record.TaskFailed)
	case record.LifecycleCancelled:
		return string(record.TaskCancelled)
	case record.LifecycleReleased, record.LifecycleDeleted, record.LifecycleReady:
		return statusReleased
	}
	return string(task)
}

// combineStatus is the status of an onboarding whose nodes are in the
// states of parts: theirs when they agree; else running while any is,
// partially_succeeded when some are deployed, then failed, cancelled.
func combineStatus(parts map[string]bool, task string) string {
	if len(parts) == 1 {
		for st := range parts {
			return st
		}
	}
	for _, st := range []string{string(record.TaskRunning), string(record.TaskSucceeded), string(record.TaskFailed), string(record.TaskCancelled), statusReleased} {
		if parts[st] {
			if st == string(record.TaskSucceeded) {
				return string(record.TaskPartiallySucceeded)
			}
			return st
		}
	}
	return task
}
