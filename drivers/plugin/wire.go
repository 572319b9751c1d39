// Package plugin runs drivers out of process with hashicorp/go-plugin over
// gRPC: Serve is what a plugin's main calls; External is the orchestrator's
// side, which starts, restarts and talks to the plugin behind the same
// interfaces as the built-in drivers.
package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	pb "github.com/slipway-dev/slipway/drivers/plugin/proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var classToWire = map[drivers.Class]pb.ErrorClass{
	drivers.Transient:         pb.ErrorClass_ERROR_CLASS_TRANSIENT,
	drivers.Permanent:         pb.ErrorClass_ERROR_CLASS_PERMANENT,
	drivers.NeedsIntervention: pb.ErrorClass_ERROR_CLASS_NEEDS_INTERVENTION,
}

var classFromWire = map[pb.ErrorClass]drivers.Class{
	pb.ErrorClass_ERROR_CLASS_TRANSIENT:          drivers.Transient,
	pb.ErrorClass_ERROR_CLASS_PERMANENT:          drivers.Permanent,
	pb.ErrorClass_ERROR_CLASS_NEEDS_INTERVENTION: drivers.NeedsIntervention,
}

// encodeArgs encodes arguments as a JSON array.
func encodeArgs(args ...any) ([]byte, error) {
	if args == nil {
		args = []any{}
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, drivers.Errorf(drivers.Permanent, "plugin: encode arguments: %w", err)
	}
	return b, nil
}

// decodeArgs decodes a JSON array into the pointers given.
func decodeArgs(b []byte, into ...any) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("decode arguments: %w", err)
	}
	if len(raw) != len(into) {
		return fmt.Errorf("decode arguments: got %d values, want %d (is the plugin built for this protocol version?)", len(raw), len(into))
	}
	for i := range raw {
		if err := json.Unmarshal(raw[i], into[i]); err != nil {
			return fmt.Errorf("decode argument %d: %w", i, err)
		}
	}
	return nil
}

// reply builds the plugin's answer: the results, or the error with its class.
func reply(err error, results ...any) (*pb.Reply, error) {
	if err != nil {
		msg := err.Error()
		var de *drivers.Error
		if errors.As(err, &de) && de.Err != nil && de.Error() == msg {
			msg = de.Err.Error() // the class travels in its own field
		}
		return &pb.Reply{Error: &pb.DriverError{Class: classToWire[drivers.Classify(err)], Message: msg}}, nil
	}
	b, err := json.Marshal(results)
	if err != nil {
		return &pb.Reply{Error: &pb.DriverError{Class: pb.ErrorClass_ERROR_CLASS_PERMANENT, Message: "plugin: encode results: " + err.Error()}}, nil
	}
	return &pb.Reply{Results: b}, nil
}

// badRequest answers a request the plugin could not decode.
func badRequest(err error) (*pb.Reply, error) {
	return reply(drivers.NewError(drivers.Permanent, fmt.Errorf("plugin: %w", err)))
}

// rpcFunc is the shape of every generated client method.
type rpcFunc[Req any] func(ctx context.Context, in Req, opts ...grpc.CallOption) (*pb.Reply, error)

// invoke calls one RPC and decodes its results into the pointers given.
func invoke[Req any](ctx context.Context, call rpcFunc[Req], req Req, results ...any) error {
	rep, err := call(ctx, req)
	if err != nil {
		return transportError(ctx, err)
	}
	if e := rep.GetError(); e != nil {
		if ctxErr := callerEnded(ctx, e.GetMessage()); ctxErr != nil {
			// The deadline reached the plugin first (gRPC carries it):
			// its error is the caller's context ending, as in-process.
			return fmt.Errorf("plugin call: %w", ctxErr)
		}
		c, ok := classFromWire[e.GetClass()]
		if !ok {
			c = drivers.Transient
		}
		return &drivers.Error{Class: c, Err: errors.New(e.GetMessage())}
	}
	if err := decodeArgs(rep.GetResults(), results...); err != nil {
		return drivers.NewError(drivers.Permanent, fmt.Errorf("plugin reply: %w", err))
	}
	return nil
}

// deadlineSkew is how far apart the caller's and the plugin's deadline
// timers may fire: the plugin's context carries the caller's deadline, and
// either side may see it pass first.
const deadlineSkew = 50 * time.Millisecond

// callerEnded is the caller's context error when the plugin's error is the
// caller's context ending: it has ended, or its deadline is (within
// deadlineSkew) what the plugin says passed. Else nil.
func callerEnded(ctx context.Context, pluginMsg string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < deadlineSkew && strings.HasSuffix(pluginMsg, context.DeadlineExceeded.Error()) {
		return context.DeadlineExceeded
	}
	return nil
}

// transportError classifies a failure of the call itself.
func transportError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("plugin call: %w", ctxErr)
	}
	switch status.Code(err) {
	case codes.Canceled:
		return fmt.Errorf("plugin call: %w", context.Canceled)
	case codes.DeadlineExceeded:
		return fmt.Errorf("plugin call: %w", context.DeadlineExceeded)
	case codes.Unimplemented:
		return drivers.Errorf(drivers.Permanent, "plugin does not implement this call: %v", err)
	}
	return drivers.NewError(drivers.Transient, fmt.Errorf("%w (the plugin may have crashed): %v", errTransport, err))
}

// errTransport marks a failure of the connection to the plugin, after
// which the plugin process is restarted on the next call.
var errTransport = errors.New("plugin call failed")

// configureRequest carries a Config across, secrets in their own map.
func configureRequest(cfg drivers.Config) *pb.ConfigureRequest {
	req := &pb.ConfigureRequest{Settings: cfg.Settings, Secrets: map[string]string{}}
	for k, v := range cfg.Secrets {
		req.Secrets[k] = v.Reveal()
	}
	return req
}

func configFromRequest(req *pb.ConfigureRequest) drivers.Config {
	cfg := drivers.Config{Settings: req.GetSettings(), Secrets: map[string]drivers.Secret{}}
	for k, v := range req.GetSecrets() {
		cfg.Secrets[k] = drivers.NewSecret(v)
	}
	return cfg
}

// call encodes args, calls the RPC and decodes the results.
func call(ctx context.Context, rpc rpcFunc[*pb.Request], args []any, results ...any) error {
	return callSecrets(ctx, rpc, args, nil, results...)
}

// callOne is call for an RPC that answers one result.
func callOne[R any](ctx context.Context, rpc rpcFunc[*pb.Request], args ...any) (R, error) {
	var r R
	err := call(ctx, rpc, args, &r)
	return r, err
}

// callSecrets is call with named credentials beside the arguments.
func callSecrets(ctx context.Context, rpc rpcFunc[*pb.Request], args []any, secrets map[string]string, results ...any) error {
	b, err := encodeArgs(args...)
	if err != nil {
		return err
	}
	err = invoke(ctx, rpc, &pb.Request{Args: b, Secrets: secrets}, results...)
	if err != nil && len(secrets) > 0 {
		return redactErr(err, slices.Collect(maps.Values(secrets))...)
	}
	return err
}

// redactErr is a plugin's error (the text it answered, a
// *drivers.Error) with every form of the credentials the call sent
// redacted (drivers.PeerText), its class kept: a plugin's error may quote
// what its peer echoed. Other errors (the transport's, the context's)
// are the caller's own and kept as they are.
func redactErr(err error, secrets ...string) error {
	if de, ok := errors.AsType[*drivers.Error](err); ok {
		return &drivers.Error{Class: de.Class, Err: errors.New(drivers.PeerText(de.Err.Error(), secrets...))}
	}
	return err
}

// The names of credentials carried beside the arguments.
const secretPowerPassword = "node.power.password"

// nodeSecrets takes the credentials out of a node for the wire.
func nodeSecrets(n drivers.Node) map[string]string {
	if n.Power == nil || n.Power.Password.IsZero() {
		return nil
	}
	return map[string]string{secretPowerPassword: n.Power.Password.Reveal()}
}

// restoreNodeSecrets puts them back on the plugin's side.
func restoreNodeSecrets(n *drivers.Node, secrets map[string]string) {
	if n.Power != nil {
		if pw, ok := secrets[secretPowerPassword]; ok {
			n.Power.Password = drivers.NewSecret(pw)
		}
	}
}

// serve decodes a request's arguments into ptrs, runs f and replies.
func serve(args []byte, ptrs []any, f func() ([]any, error)) (*pb.Reply, error) {
	if err := decodeArgs(args, ptrs...); err != nil {
		return badRequest(err)
	}
	results, err := f()
	return reply(err, results...)
}

// instance holds the factory and the configured driver of a plugin server.
type instance[T any] struct {
	factory func(drivers.Config) (T, error)
	mu      sync.Mutex
	impl    T
	set     bool
}

func (i *instance[T]) get() (T, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.set {
		var zero T
		return zero, drivers.Errorf(drivers.Permanent, "plugin: Configure was not called")
	}
	return i.impl, nil
}

func (i *instance[T]) configure(req *pb.ConfigureRequest) (*pb.Reply, error) {
	impl, err := i.factory(configFromRequest(req))
	if err != nil {
		return reply(err)
	}
	i.mu.Lock()
	i.impl, i.set = impl, true
	i.mu.Unlock()
	return reply(nil)
}

// run decodes a request's arguments into ptrs and runs f on the
// configured driver (refused before Configure).
func (i *instance[T]) run(req *pb.Request, ptrs []any, f func(d T) ([]any, error)) (*pb.Reply, error) {
	d, err := i.get()
	if err != nil {
		return reply(err)
	}
	return serve(req.GetArgs(), ptrs, func() ([]any, error) { return f(d) })
}
