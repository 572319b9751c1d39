package gnmi

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/slipway-dev/slipway/drivers"
)

// withCredentials adds the metadata gNMI targets read the user from
// (the convention of gnmic, SONiC, EOS and SR Linux).
func withCredentials(ctx context.Context, user, password string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "username", user, "password", password)
}

// peer is what an error may quote of the switch's answer.
func (e *endpoint) peer(err error) string {
	msg := err.Error()
	if st, ok := status.FromError(err); ok {
		msg = st.Code().String() + ": " + st.Message()
	}
	return drivers.PeerText(msg, e.Password.Reveal())
}

// rpcError classifies a failed RPC to the switch: ctx's own end is
// returned as it is; credentials refused are Permanent; a switch that
// does not answer is Transient; anything else the switch refused is
// Permanent.
func (e *endpoint) rpcError(ctx context.Context, rpc string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: switch %s: %s: %w", Name, e.Name, rpc, ctx.Err())
	}
	code := status.Code(err)
	switch code {
	case codes.Unauthenticated, codes.PermissionDenied:
		return drivers.Errorf(drivers.Permanent, "%s: switch %s (%s) refused the credentials of user %q (%s); check secret switch.%s.password and setting switch.%s.username",
			Name, e.Name, e.Address, e.Username, e.peer(err), e.Name, e.Name)
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted, codes.ResourceExhausted, codes.Unknown:
		return drivers.Errorf(drivers.Transient, "%s: switch %s at %s does not answer %s (%s); check that the switch is up and serves gNMI there (setting switch.%s.address); the step is retried",
			Name, e.Name, e.Address, rpc, e.peer(err), e.Name)
	}
	return drivers.Errorf(drivers.Permanent, "%s: switch %s (%s) refused %s: %s", Name, e.Name, e.Address, rpc, e.peer(err))
}

var vlanRE = regexp.MustCompile(`(?i)\bvlan[ -]?(?:id[ =:]?)?(\d{1,4})\b`)

// setError explains a refused SetRequest: a VLAN the switch will not
// carry names the VLAN and the ports that need it.
func (e *endpoint) setError(ctx context.Context, err error, node string, phase drivers.Phase, want []drivers.PortConfig) error {
	code := status.Code(err)
	if ctx.Err() != nil || (code != codes.InvalidArgument && code != codes.FailedPrecondition && code != codes.OutOfRange && code != codes.NotFound) {
		return e.rpcError(ctx, "Set", err)
	}
	text := e.peer(err)
	if m := vlanRE.FindStringSubmatch(text); m != nil {
		v, _ := strconv.Atoi(m[1])
		var ports []string
		for _, c := range want {
			if slices.Contains(c.VLANs(), v) {
				ports = append(ports, c.Port)
			}
		}
		return drivers.Errorf(drivers.Permanent, "%s: switch %s refused VLAN %d for port %s of node %s (phase %s): %s; the switch cannot carry it: create VLAN %d on the switch or widen its range, or change the design's VLAN",
			Name, e.Name, v, orAll(ports), node, phase, text, v)
	}
	return drivers.Errorf(drivers.Permanent, "%s: switch %s refused the configuration of ports %s of node %s (phase %s): %s; correct the design or the switch, then apply again",
		Name, e.Name, portNames(want), node, phase, text)
}

func orAll(ports []string) string {
	if len(ports) == 0 {
		return "(none of the node's: the switch names another)"
	}
	return strings.Join(ports, ", ")
}

func portNames(cs []drivers.PortConfig) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Port
	}
	return strings.Join(names, ", ")
}
