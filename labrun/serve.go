package labrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/slipway-dev/slipway/sim/lab"
)

// Serve runs the lab on its own, for an engine in another process
// (`orchestrator lab`): it starts the lab of cfg, serves AuditHandler at
// AuditPath, writes the lab's Info as one JSON line to out (where its
// MAAS, BMCs and Redfish services answer) and runs until ctx ends.
func Serve(ctx context.Context, cfg lab.Config, out io.Writer) error {
	lb, err := lab.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer lb.Close()
	lb.Handle(AuditPath, AuditHandler(lb))
	b, err := json.Marshal(lb.Info())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s\n", b)
	cfg.Log.Info().Int("machines", len(lb.Machines())).Msg("virtual lab running; interrupt to stop")
	<-ctx.Done()
	return nil
}
