package lab

import (
	"context"
	"strconv"

	"github.com/slipway-dev/slipway/sim/bmc"
)

// A lab's BMCs share 127.0.0.1: an IPMI BMC's UDP port and a Redfish
// service's TCP port can be the same number, and a power address
// (127.0.0.1:port, as MAAS and the engine name a BMC) then names two
// machines: at 1,000 Redfish machines a dozen collided and the engine's
// identify found another node's machine. A BMC whose port another BMC of
// the lab answers at is started again on another port.

// maxPortTries bounds the starts of one BMC.
const maxPortTries = 16

// redfishListen is the address a Redfish service listens on at its
// try-th start (tests force a collision).
var redfishListen = func(_ *Lab, _ int) string { return "127.0.0.1:0" }

// portTaken: a BMC of the lab answers at 127.0.0.1:port already, over
// either protocol. Called with l.mu held.
func (l *Lab) portTaken(port int) bool {
	_, ok := l.byPower["127.0.0.1:"+strconv.Itoa(port)]
	return ok
}

// startIPMI starts a machine's IPMI BMC on a port no other BMC of the
// lab answers at.
func (l *Lab) startIPMI(ctx context.Context, m *Machine, o bmc.Options) (*bmc.BMC, error) {
	for try := 1; ; try++ {
		b, err := bmc.Start(ctx, m, o)
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		taken := l.portTaken(b.Addr().Port)
		l.mu.Unlock()
		if !taken || try >= maxPortTries {
			return b, nil
		}
		_ = b.Close()
	}
}
