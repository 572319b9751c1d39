package gnmi

import (
	"context"
	"time"

	gpb "github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Set applies a SetRequest to one switch as one transaction: deletes,
// then replaces, then updates (the order gNMI gives) on a copy of its
// state, which is kept only when the switch's rules accept the result.
func (s *service) Set(ctx context.Context, req *gpb.SetRequest) (*gpb.SetResponse, error) {
	n := len(req.GetDelete()) + len(req.GetReplace()) + len(req.GetUpdate())
	if n == 0 {
		return nil, status.Error(codes.InvalidArgument, "an empty SetRequest")
	}
	if n > maxPaths {
		return nil, status.Errorf(codes.InvalidArgument, "more than %d operations", maxPaths)
	}
	if len(req.GetUnionReplace()) > 0 {
		return nil, status.Error(codes.Unimplemented, "union_replace is not supported")
	}
	t := s.t
	t.mu.Lock()
	defer t.mu.Unlock()
	sw, results, next, err := t.apply(req)
	if err != nil {
		return nil, err
	}
	if err := t.commit(sw, next); err != nil {
		sw.stats.Refused++
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	sw.stats.Sets++
	sw.stats.SetOps += n
	return &gpb.SetResponse{Prefix: req.GetPrefix(), Response: results, Timestamp: time.Now().UnixNano()}, nil
}

// op is one operation of a SetRequest.
type op struct {
	kind gpb.UpdateResult_Operation
	path *gpb.Path
	val  *gpb.TypedValue
}

func ops(req *gpb.SetRequest) []op {
	var out []op
	for _, p := range req.GetDelete() {
		out = append(out, op{kind: gpb.UpdateResult_DELETE, path: p})
	}
	for _, u := range req.GetReplace() {
		out = append(out, op{kind: gpb.UpdateResult_REPLACE, path: u.GetPath(), val: u.GetVal()})
	}
	for _, u := range req.GetUpdate() {
		out = append(out, op{kind: gpb.UpdateResult_UPDATE, path: u.GetPath(), val: u.GetVal()})
	}
	return out
}

// apply runs req's operations on a copy of its switch's state.
func (t *Target) apply(req *gpb.SetRequest) (*switchState, []*gpb.UpdateResult, map[string]any, error) {
	var sw *switchState
	var next map[string]any
	var results []*gpb.UpdateResult
	for _, o := range ops(req) {
		el, target, err := fullPath(req.GetPrefix(), o.path)
		if err != nil {
			return nil, nil, nil, err
		}
		s, err := t.selectSwitch(target)
		if err != nil {
			return nil, nil, nil, status.Error(codes.NotFound, err.Error())
		}
		if sw == nil {
			sw, next = s, clone(s.tree).(map[string]any)
		} else if s != sw {
			return nil, nil, nil, status.Error(codes.InvalidArgument, "one SetRequest configures one switch")
		}
		if readOnly(el) {
			return nil, nil, nil, status.Errorf(codes.InvalidArgument, "%s is read only", PathString(&gpb.Path{Elem: el}))
		}
		if err := applyOp(next, el, o); err != nil {
			return nil, nil, nil, status.Errorf(codes.InvalidArgument, "%s %s: %v", o.kind, PathString(&gpb.Path{Elem: el}), err)
		}
		results = append(results, &gpb.UpdateResult{Path: o.path, Op: o.kind})
	}
	next["lldp"] = clone(sw.tree["lldp"]) // read only: kept as the switch has it
	ensurePorts(sw, next)
	return sw, results, next, nil
}

func applyOp(tree map[string]any, el []*gpb.PathElem, o op) error {
	if o.kind == gpb.UpdateResult_DELETE {
		return deleteAt(tree, el)
	}
	if o.val == nil {
		return errMissingValue
	}
	v, err := decode(o.val)
	if err != nil {
		return err
	}
	return setAt(tree, el, v, o.kind == gpb.UpdateResult_REPLACE)
}

var errMissingValue = status.Error(codes.InvalidArgument, "no value")

// ensurePorts puts back, at their defaults, the physical ports a Set
// deleted: a switch's ports are hardware; deleting one resets it.
func ensurePorts(sw *switchState, tree map[string]any) {
	ifs, err := container(tree, elems("interfaces"))
	if err != nil {
		return
	}
	l, _ := ifs["interface"].([]any)
	for p := range sw.ports {
		if findEntry(l, map[string]string{"name": p}) < 0 {
			l = append(l, newPort(p))
		}
	}
	ifs["interface"] = l
}

// Subscribe answers ONCE subscriptions: the current value at each
// subscribed path, then a sync response, then the end of the stream.
func (s *service) Subscribe(stream gpb.GNMI_SubscribeServer) error {
	req, err := stream.Recv()
	if err != nil {
		return err
	}
	sl := req.GetSubscribe()
	switch {
	case sl == nil:
		return status.Error(codes.InvalidArgument, "the first SubscribeRequest must carry a subscription list")
	case sl.GetMode() != gpb.SubscriptionList_ONCE:
		return status.Errorf(codes.Unimplemented, "mode %s is not supported: this target answers ONCE subscriptions", sl.GetMode())
	case len(sl.GetSubscription()) > maxPaths:
		return status.Errorf(codes.InvalidArgument, "more than %d subscriptions", maxPaths)
	}
	if err := checkEncoding(sl.GetEncoding()); err != nil {
		return err
	}
	notes, err := s.t.once(sl)
	if err != nil {
		return err
	}
	for _, n := range notes {
		if err := stream.Send(&gpb.SubscribeResponse{Response: &gpb.SubscribeResponse_Update{Update: n}}); err != nil {
			return err
		}
	}
	return stream.Send(&gpb.SubscribeResponse{Response: &gpb.SubscribeResponse_SyncResponse{SyncResponse: true}})
}

// once reads each subscribed path (one that holds nothing sends
// nothing).
func (t *Target) once(sl *gpb.SubscriptionList) ([]*gpb.Notification, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var notes []*gpb.Notification
	now := time.Now().UnixNano()
	for _, sub := range sl.GetSubscription() {
		el, target, err := fullPath(sl.GetPrefix(), sub.GetPath())
		if err != nil {
			return nil, err
		}
		sw, err := t.selectSwitch(target)
		if err != nil {
			return nil, status.Error(codes.NotFound, err.Error())
		}
		sw.stats.Subscribes++
		v, ok := lookup(sw.tree, el)
		if !ok {
			continue
		}
		tv, err := encode(v, el, sl.GetEncoding())
		if err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		notes = append(notes, &gpb.Notification{Timestamp: now, Prefix: &gpb.Path{Target: target},
			Update: []*gpb.Update{{Path: &gpb.Path{Elem: el}, Val: tv}}})
	}
	return notes, nil
}
