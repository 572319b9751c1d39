package plugin

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/slipway-dev/slipway/drivers"
	pb "github.com/slipway-dev/slipway/drivers/plugin/proto"
)

// TestPluginDeadlineFirstIsTheCallersDeadline: the plugin's context
// carries the caller's deadline, and its timer may fire before the
// caller's (so ctx.Err() is still nil when the reply arrives). Its
// "context deadline exceeded" is then the caller's deadline, as in
// process; any other plugin error, or one far from the deadline, keeps
// its class. (TestCancelledContextEndsPluginCallWithinOneSecond failed
// about one run in ten on this race.)
func TestPluginDeadlineFirstIsTheCallersDeadline(t *testing.T) {
	answer := func(msg string) rpcFunc[*pb.Request] {
		return func(context.Context, *pb.Request, ...grpc.CallOption) (*pb.Reply, error) {
			return &pb.Reply{Error: &pb.DriverError{Class: pb.ErrorClass_ERROR_CLASS_TRANSIENT, Message: msg}}, nil
		}
	}
	for _, tc := range []struct {
		name     string
		left     time.Duration // until the caller's deadline
		msg      string
		deadline bool
	}{
		{"plugin's timer first", 5 * time.Millisecond, "fake: ConfigurePorts: context deadline exceeded", true},
		{"deadline far away", time.Minute, "context deadline exceeded", false},
		{"another error near the deadline", 5 * time.Millisecond, "switch refused the port", false},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), tc.left)
		err := invoke(ctx, answer(tc.msg), &pb.Request{})
		cancel()
		if got := errors.Is(err, context.DeadlineExceeded); got != tc.deadline {
			t.Errorf("%s: err = %v, deadline %v, want %v", tc.name, err, got, tc.deadline)
		}
		if c := drivers.Classify(err); c != drivers.Transient {
			t.Errorf("%s: class %q, want transient", tc.name, c)
		}
	}
}
