package demo

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/internal/progress"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	secretstore "github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
	simrf "github.com/slipway-dev/slipway/sim/redfish"
	"github.com/slipway-dev/slipway/statestore"
)

// stages are the deploy workflow's stages in the order the progress
// shows them.
var stages = []record.Stage{record.StagePending, record.StageBaseline, record.StageOOBPrepare, record.StageIdentify,
	record.StageCommission, record.StageAsBuilt, record.StageConfigure, record.StageImages, record.StageDeploy, record.StageBootstrap,
	record.StageDeployed}

// Run is the outcome of a demo deployment. The outcome counts come
// from the lab (labrun.Audit: the machines, their node agents and the
// simulated MAAS), not from the engine's task results, which only
// engine_deployed reports.
type Run struct {
	Store                string  `json:"store"`                 // bolt or etcd (--store)
	EtcdPrefix           string  `json:"etcd_prefix,omitempty"` // where the state is in etcd
	Nodes                int     `json:"nodes"`
	Deployed             int     `json:"deployed"`        // the lab's: agents reported every boot action a success
	EngineDeployed       int     `json:"engine_deployed"` // the engine's task results, for comparison
	Failed               int     `json:"failed"`
	Stuck                int     `json:"stuck"`
	Leaked               int     `json:"leaked"`
	DuplicateDeploys     int     `json:"duplicate_deploys"`
	DuplicateAllocations int     `json:"duplicate_allocations"` // the older, weaker measure
	WallSeconds          float64 `json:"wall_seconds"`
	// FloorSeconds is a lower bound of the wall time from the lab's own
	// durations: the longest time any machine spent in the lab's phases
	// during the deployment (lab.Timeline.Floor) plus its BMC's baseline
	// work (BaselineFloor: updates, BMC resets, volume builds), and no
	// less than each Site's update time over its maxParallel.
	FloorSeconds       float64        `json:"floor_seconds"`
	WallOverFloor      float64        `json:"wall_over_floor"`
	MAASRequests       int            `json:"maas_requests"`
	MAASRequestsByKind map[string]int `json:"maas_requests_by_kind"`
	// Gaps is where the wall time beyond the floor went: the machines'
	// timelines against the engine's transitions (GapStats).
	Gaps GapStats `json:"gaps"`
	// Sites count, per MAAS region of the lab (a design with several
	// Sites), the machines it holds Deployed and the requests it answered.
	Sites []SiteCount `json:"sites,omitempty"`
	// Failures are the engine's reasons for the nodes it did not deploy
	// (the first 20).
	Failures []NodeFailure `json:"failures,omitempty"`
	// Fabric is the connectivity measured with real packets on the
	// design's switch fabric in Open vSwitch (nil: no fabric).
	Fabric *Connectivity `json:"fabric,omitempty"`
	// Baselines: what the baseline stage changed on each node whose
	// hardware profile has a baseline (baseline.go).
	Baselines []BaselineCount `json:"baselines,omitempty"`
	// BaselineWallSeconds: from the task's start until the last node
	// left the baseline stage (the engine's transitions);
	// BaselineFloorSeconds: the least that can take by the lab's own
	// durations (max(one BMC's baseline work, each Site's update time
	// over its maxParallel)).
	BaselineWallSeconds  float64 `json:"baseline_wall_seconds,omitempty"`
	BaselineFloorSeconds float64 `json:"baseline_floor_seconds,omitempty"`
	// BMCDurations are the lab BMCs' durations the floor counts (of one
	// of them: the lab gives every BMC the same).
	BMCDurations *simrf.Durations `json:"bmc_durations,omitempty"`
	// Images: the image each deployed machine runs against its design's,
	// and each MAAS region's uploads, counted by the lab (images.go).
	Images *ImageCount `json:"images,omitempty"`

	results []record.NodeResult
	reports int // boot action reports the node agents sent
	agents  int // machines whose agent finished
	task    record.Task
	// notDeployed are the machines the lab counts failed or stuck.
	notDeployed []string
}

// NodeFailure is a node the engine did not deploy, and why.
type NodeFailure struct {
	Node   string `json:"node"`
	Stage  string `json:"stage"`
	Reason string `json:"reason"`
}

// prepareSite runs prepare_site to its end.
func (o *Options) prepareSite(ctx context.Context, e *orchestrator.Engine, revision string, show bool) error {
	site, err := e.Submit(ctx, record.Request{Action: record.ActionPrepareSite, Revision: revision, Requester: "demo"})
	if err != nil {
		return err
	}
	if site, err = e.Wait(ctx, site.ID); err != nil {
		return err
	}
	if site.Status != record.TaskSucceeded {
		return fmt.Errorf("prepare_site %s: %s", site.Status, site.Message)
	}
	if show {
		fmt.Fprintf(o.Out, "prepare_site: %s\n\n", site.Message)
	}
	return nil
}

// showLab says where the lab runs and which secrets it set.
func (o *Options) showLab(ctx context.Context, env *labrun.Env, scale float64) {
	info := env.Lab.Info()
	fmt.Fprintf(o.Out, "virtual lab: simulated MAAS at %s, %d machines with simulated BMCs on 127.0.0.1; time runs %gx faster\n",
		info.MAASURL, len(info.BMCs), 1/scale)
	var redfish []string
	for _, b := range info.BMCs {
		if b.RedfishURL != "" {
			redfish = append(redfish, b.Node+" "+b.RedfishURL)
		}
	}
	if len(redfish) > 0 {
		fmt.Fprintf(o.Out, "BMCs that speak Redfish too (their profile says oob.type redfish; IPMI is the fallback): %s; lab CA %s\n",
			strings.Join(redfish, ", "), info.RedfishCAFile)
	}
	if stored, err := env.SecretStore.List(ctx); err == nil {
		names := make([]string, len(stored))
		for i, s := range stored {
			names[i] = s.Name
		}
		fmt.Fprintf(o.Out, "secrets the lab set, encrypted in the state database (as `orchestrator secret set` does): %s\n", strings.Join(names, ", "))
	}
}

// watchTask waits for the demo's deploy task, drawing its progress
// when show is set, and returns its per-node results.
func (o *Options) watchTask(ctx context.Context, e *orchestrator.Engine, id string, start time.Time, show bool) ([]record.NodeResult, error) {
	var r *progress.Renderer
	if show {
		f, ok := o.Out.(*os.File)
		r = progress.New(o.Out, ok && progress.IsTerminal(f))
	}
	done := make(chan error, 1)
	go func() { _, err := e.Wait(ctx, id); done <- err }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for waiting := true; ; {
		select {
		case err := <-done:
			if err != nil {
				return nil, err
			}
			waiting = false
		case <-tick.C:
		}
		_, res, err := e.Task(ctx, id)
		if err != nil {
			return nil, err
		}
		if r != nil && waiting {
			r.Update(Snapshot(res, time.Since(start)))
		} else if r != nil {
			r.Finish(Snapshot(res, time.Since(start)))
		}
		if !waiting {
			return res, nil
		}
	}
}

// Options describe a demo deployment.
type Options struct {
	Design *design.Design
	Store  statestore.Store
	// StatePath is the state database's path: the operator's secret key
	// file is beside it (else SLIPWAY_SECRET_KEY), and the lab's secrets
	// are stored under that key.
	StatePath string
	TimeScale float64      // the lab's and the engine's
	Faults    *maas.Faults // the MAAS and BMC faults to inject (nil: none)
	// Show draws the progress and says where the lab runs, on Out.
	Show bool
	Out  io.Writer // progress and the lab's whereabouts
	Err  io.Writer // the dashboard's address and token
	Log  zerolog.Logger
	// Dashboard serves the control API and the web dashboard beside the
	// deployment.
	Dashboard Dashboard
	// NewNetwork builds the driver of the design's switch fabric, which
	// the demo runs in Open vSwitch (fabric_demo.go); NoFabric deploys
	// with the noop network driver instead.
	NewNetwork NewNetwork
	NoFabric   bool
}

// Deploy starts the lab from o.Design, prepares the site and deploys
// every node with the engine, showing progress when o.Show is set, and
// counts the outcome from the lab.
func Deploy(ctx context.Context, o Options) (Run, error) {
	d, store, state, scale, faults, show, dash := o.Design, o.Store, o.StatePath, o.TimeScale, o.Faults, o.Show, o.Dashboard
	var out Run
	// The lab's secrets go into the state's encrypted secret store under
	// the operator's key (the key file next to the state database, or
	// SLIPWAY_SECRET_KEY): a secret the site needs and the lab does not
	// set is missing, as it would be at a real site.
	key, src, err := secretstore.LoadKey(filepath.Join(filepath.Dir(state), secretstore.DefaultKeyFile))
	if err != nil {
		return out, fmt.Errorf("secret key %s: %w", src, err)
	}
	fab, err := o.startFabric(ctx, d) // nil: no fabric
	if err != nil {
		return out, err
	}
	defer fab.Close()
	env, err := labrun.Start(ctx, labrun.Options{Design: d, Store: store, TimeScale: scale, Faults: faults, Seed: 1, Log: o.Log,
		SecretKey: key, Network: fab.Network()})
	if err != nil {
		return out, err
	}
	defer env.Close()
	if show {
		o.showLab(ctx, env, scale)
	}
	e, err := env.Engine(ctx)
	if err != nil {
		return out, err
	}
	defer e.Close()
	stopDash, err := o.dashboard(ctx, env, e, store) // dashboard.go
	if err != nil {
		return out, err
	}
	defer stopDash()
	if err := o.prepareSite(ctx, e, env.Revision, show); err != nil {
		return out, err
	}
	before, beforeKinds := labrun.RequestCounts(env.Lab)
	bmcs := SnapshotLab(env.Lab) // what the baseline stage changes (baseline.go)
	start := time.Now()
	task, err := e.Submit(ctx, record.Request{Action: record.ActionDeployNodes, Revision: env.Revision, Requester: "demo"})
	if err != nil {
		return out, err
	}
	if out.results, err = o.watchTask(ctx, e, task.ID, start, show); err != nil {
		return out, err
	}
	if err := out.measure(ctx, env, e, task.ID, start, before, beforeKinds); err != nil {
		return out, err
	}
	if err := out.baselines(ctx, env, e, task.ID, d, bmcs, start); err != nil {
		return out, err
	}
	if err := out.images(ctx, env, e, d); err != nil { // images.go
		return out, err
	}
	if fab != nil {
		if out.Fabric, err = fab.measure(ctx, e, env.Revision, out.notDeployed); err != nil {
			return out, fmt.Errorf("the demo's switch fabric: %w", err)
		}
	}
	out.log(o.Log)
	dash.wait(ctx, o.Err)
	return out, nil
}

// measure fills the run's figures once its deploy task (id, submitted
// at start) ended: the outcome from the lab's audit, where the time went,
// the MAAS requests beyond the counts before.
func (out *Run) measure(ctx context.Context, env *labrun.Env, e *orchestrator.Engine, id string, start time.Time, before int, beforeKinds map[string]int) error {
	var err error
	if out.task, _, err = e.Task(ctx, id); err != nil {
		return err
	}
	out.WallSeconds = time.Since(start).Seconds()
	aud, err := env.Audit(ctx, e)
	if err != nil {
		return err
	}
	out.count(aud, env.Lab.Machines(), start)
	recs, err := e.Nodes(ctx)
	if err != nil {
		return err
	}
	byName := make(map[string]record.NodeRecord, len(recs))
	for _, r := range recs {
		byName[r.Name] = r
	}
	out.Gaps = gaps(env.Lab.Machines(), byName, start)
	out.MAASRequests = aud.MAASRequests - before
	out.Sites = siteCounts(env.Lab)
	out.MAASRequestsByKind = since(aud.MAASRequestsByKind, beforeKinds)
	return nil
}

// SiteCount is one MAAS region's share of a run, from the region's state.
type SiteCount struct {
	Site         string `json:"site"`
	Deployed     int    `json:"deployed"`
	MAASRequests int    `json:"maas_requests"`
}

// siteCounts reads each region of a lab with several (nil with one).
func siteCounts(lb *lab.Lab) []SiteCount {
	regions := lb.Regions()
	if len(regions) < 2 {
		return nil
	}
	out := make([]SiteCount, 0, len(regions))
	for _, r := range regions {
		c := SiteCount{Site: r.Site, MAASRequests: r.MAAS.Stats().Snapshot().Total}
		for _, m := range r.MAAS.Machines() {
			if m.Status == "Deployed" {
				c.Deployed++
			}
		}
		out = append(out, c)
	}
	return out
}

// log logs the run's counts.
func (out Run) log(l zerolog.Logger) {
	l.Info().Int("nodes", out.Nodes).Int("deployed", out.Deployed).Int("engine_deployed", out.EngineDeployed).
		Int("failed", out.Failed).Int("stuck", out.Stuck).Int("leaked", out.Leaked).Int("duplicate_deploys", out.DuplicateDeploys).
		Float64("wall_seconds", out.WallSeconds).Float64("floor_seconds", out.FloorSeconds).Msg("demo deployment audited by the lab")
}

// count fills the outcome counts from the lab's audit, the floor from
// the machines' timelines since start, and the engine's own count.
func (out *Run) count(aud labrun.Audit, machines []*lab.Machine, start time.Time) {
	out.Nodes = len(out.results)
	for _, res := range out.results {
		if res.Outcome == record.OutcomeSucceeded && res.Stage == record.StageDeployed {
			out.EngineDeployed++
		} else if len(out.Failures) < 20 {
			out.Failures = append(out.Failures, NodeFailure{Node: res.Node, Stage: string(res.Stage), Reason: res.Reason})
		}
	}
	out.Deployed, out.Failed, out.Stuck = aud.Deployed, len(aud.Failed), len(aud.Stuck)
	out.notDeployed = append(slices.Clone(aud.Failed), aud.Stuck...)
	out.Leaked, out.DuplicateDeploys, out.DuplicateAllocations = len(aud.Leaked), aud.DuplicateDeploys, aud.DuplicateAllocations
	var floor time.Duration
	for _, m := range machines {
		floor = max(floor, m.Timeline().Since(start).Floor())
		b := m.Bootstrap()
		if b.State == lab.BootstrapDone {
			out.agents++
		}
		for _, r := range b.Reports {
			if r.Status == "success" {
				out.reports++
			}
		}
	}
	out.FloorSeconds = floor.Seconds()
	if out.FloorSeconds > 0 {
		out.WallOverFloor = math.Round(out.WallSeconds/out.FloorSeconds*1000) / 1000
	}
}

// since subtracts the counts before from the counts after.
func since(after, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// OK: every node deployed by the lab's count, nothing leaked or deployed
// twice, and the fabric's connectivity (when measured) as the design says.
func (out Run) OK() bool {
	return out.Deployed == out.Nodes && out.Leaked == 0 && out.DuplicateDeploys == 0 && out.DuplicateAllocations == 0 &&
		(out.Fabric == nil || out.Fabric.Pass) && out.imagesOK()
}

// Snapshot counts a task's nodes in each stage of the deploy workflow, in
// the order its progress shows them: what the demo and `tasks --follow`
// draw.
func Snapshot(res []record.NodeResult, elapsed time.Duration) progress.Snapshot {
	count := map[record.Stage]int{}
	s := progress.Snapshot{Total: len(res), Elapsed: elapsed}
	for _, r := range res {
		switch r.Outcome {
		case record.OutcomeSucceeded:
			s.Done++
			count[r.Stage]++
		case record.OutcomeFailed, record.OutcomeCancelled, record.OutcomeManual:
			s.Failed = append(s.Failed, progress.Failure{Node: r.Node, Stage: string(r.Stage), Reason: r.Reason})
		default:
			count[r.Stage]++
		}
	}
	for _, st := range stages {
		s.Stages = append(s.Stages, progress.Stage{Name: string(st), Count: count[st]})
	}
	return s
}

// Summary writes the per-node table and the totals to w.
func (run Run) Summary(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nNODE\tSTAGE\tOUTCOME\tFAILED CALLS\tTIME\tREASON")
	for _, r := range run.results {
		took := ""
		if !r.Started.IsZero() && !r.Finished.IsZero() {
			took = r.Finished.Sub(r.Started).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", r.Node, r.Stage, r.Outcome, r.Attempts, took, r.Reason)
	}
	_ = tw.Flush()
	if run.task.Status != record.TaskSucceeded {
		fmt.Fprintf(w, "\n%s %s: %s\n", run.task.Action, run.task.Status, run.task.Message)
	}
	fmt.Fprintf(w, "\n%d of %d nodes deployed, %d failed, %d stuck (counted by the lab; the engine says %d deployed); %d leaked machines, %d duplicate deploys\n",
		run.Deployed, run.Nodes, run.Failed, run.Stuck, run.EngineDeployed, run.Leaked, run.DuplicateDeploys)
	fmt.Fprintf(w, "%d nodes fetched their data and assets from the introspection API and reported %d boot actions\n", run.agents, run.reports)
	fmt.Fprintf(w, "wall time %.2fs against a floor of %.2fs (the longest a machine waited in the lab's phases and its BMC's baseline work), %.2fx; %d MAAS requests (%.1f per node)\n",
		run.WallSeconds, run.FloorSeconds, run.WallOverFloor, run.MAASRequests, float64(run.MAASRequests)/float64(max(run.Nodes, 1)))
	for _, s := range run.Sites {
		fmt.Fprintf(w, "site %s: its MAAS region holds %d machines Deployed and answered %d requests\n", s.Site, s.Deployed, s.MAASRequests)
	}
	run.imagesText(w) // images.go
	if run.Store == "etcd" {
		fmt.Fprintf(w, "the engine's state is in etcd under %s\n", run.EtcdPrefix)
	}
	run.baselineText(w)
	if run.Fabric != nil {
		fmt.Fprintln(w, "\nthe switch fabric: every cabled port configured in Open vSwitch by the network driver; connectivity measured with real packets (ping between the nodes' network namespaces)")
		run.Fabric.Text(w)
	}
}
