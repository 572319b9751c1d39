package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	group "github.com/slipway-dev/slipway/internal/batch"
	"github.com/slipway-dev/slipway/orchestrator/driverspec"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/secrets"
)

// Drivers are the drivers the engine drives, by role.
type Drivers struct {
	// OOB is the Site's OOB driver (drivers.oob); OOBByType holds, by
	// name, the drivers of other OOB types the design's hardware
	// profiles name (oob.type, oob.fallback.type).
	OOB       drivers.OOB
	OOBByType map[string]drivers.OOB
	Server    drivers.Server
	Network   drivers.Network
}

// Bootstrapper is the node side of a deployment (the introspection API
// implements it). A deployment is one allocation of the node's machine:
// its ID changes after every release, so a node's token and its boot
// action reports belong to one deployment.
type Bootstrapper interface {
	// UserData returns the cloud-init user data the node is deployed
	// with; it issues the node's token for the deployment (the same
	// deployment gives the same data, however often it is asked).
	UserData(ctx context.Context, d *design.Design, node, deployment string) ([]byte, error)
	// BootstrapStatus: Done when every signalling boot action of the
	// node reported success in this deployment; Failed when one reported
	// failure, or when the node's assets could not be rendered for it;
	// InProgress otherwise.
	BootstrapStatus(ctx context.Context, d *design.Design, node, deployment string) (BootstrapProgress, error)
	// Reissue gives the node a new token for its deployment without a
	// redeploy: the previous token is revoked and the deployment's
	// reports are dropped, so BootstrapStatus waits for new ones.
	Reissue(ctx context.Context, d *design.Design, node, deployment string) (Reissued, error)
	// EndDeployment revokes the node's token: its machine was released.
	EndDeployment(ctx context.Context, node string) error
}

// BootstrapWarmer is a Bootstrapper that prepares once what its
// UserData needs of a design (the introspection API: the design's
// revision, and that it is stored). A deploying task has it warm the
// design when it starts, while its nodes commission, rather than have its
// first deploy compute it while the others wait.
type BootstrapWarmer interface {
	Warm(ctx context.Context, d *design.Design)
}

// BootstrapProgress is what BootstrapStatus found.
type BootstrapProgress struct {
	drivers.Result
	// LastReport is when the node last reported in this deployment (zero:
	// never); Issued is when its token was last issued or reissued.
	LastReport time.Time
	Issued     time.Time
	// URL is where the node reaches the introspection API.
	URL string
}

// Reissued are a node's new bootstrap credentials. Both hold the node's
// token: they go to the node (through an operator) and nowhere else.
type Reissued struct {
	// Env is the bootstrap environment file (/etc/slipway/bootstrap.env:
	// the introspection URL and the token).
	Env []byte
	// UserData is the cloud-config the node was deployed with, carrying
	// the new token.
	UserData []byte
}

// Config configures an Engine.
type Config struct {
	Store   Store
	Drivers Drivers
	// Secrets resolves the design's secret references (BMC passwords);
	// nil uses secrets.Resolve. The engine bounds each call (secretWait).
	Secrets func(ctx context.Context, ref string) (drivers.Secret, error)
	// BMCEndpoint rewrites where a node's BMC is reached (the virtual lab
	// maps the design's addresses to its loopback ports); nil keeps the
	// design's.
	BMCEndpoint func(oobType string, b drivers.BMC) drivers.BMC
	// BMCOverride is a node's power-credential override (package
	// powercreds): when ok, its username and password reach the node's
	// BMC instead of the design's. Nil: no overrides.
	BMCOverride func(ctx context.Context, node string) (username string, password drivers.Secret, ok bool, err error)
	Limits      Limits
	Retry       RetryPolicy
	// DeployRetries is how many times a failed deployment is released
	// and deployed again before the node fails (default 1).
	DeployRetries int
	// Timeouts per stage; missing stages use DefaultTimeouts. They are
	// longer than MAAS's own (30 minutes) so that MAAS's verdict, with
	// its reason, arrives first.
	Timeouts map[record.Stage]time.Duration
	// PollInterval is how often waiting nodes' machines are polled, in
	// one batched call (default 10s).
	PollInterval time.Duration
	// FullPollInterval is how often the poll reads every waiting
	// machine even when the driver's changes (drivers.ServerChanges) name
	// none of them: the safety net (default 1m scaled by TimeScale, at
	// least PollInterval).
	FullPollInterval time.Duration
	// MaxWait caps how long a waiting node sleeps before it looks again
	// itself, whatever its driver suggested (default 1m).
	MaxWait time.Duration
	// TimeScale multiplies every duration the engine waits: driver hints,
	// backoff, poll interval, timeouts (default 1; the virtual lab runs
	// its phases faster and the engine follows).
	TimeScale float64
	// SweepInterval is how often the leak and drift sweep runs while the
	// engine runs (default 10m; negative: only at start).
	SweepInterval time.Duration
	// ReleaseLeaks: the sweep releases leaked machines (default: report only).
	ReleaseLeaks bool
	// SiteProfiles are the site profiles nodes deploy with (nil: none).
	SiteProfiles SiteProfiles
	// RoCE answers the RoCE assignments of nodes whose site profile
	// enables RoCE (nil: none are configured).
	RoCE RoCEAssignments
	// Erase is the erase policy of destroy and decommission when neither
	// the task, the node, its host profile nor the Site names one (""
	// leaves it to the server driver's default).
	Erase drivers.Erase
	// Bootstrap delivers user data and reports boot actions (nil: no user
	// data, and the bootstrap stage has nothing to wait for).
	Bootstrap Bootstrapper
	// Design, when set, is design revision DesignRev as its caller (serve)
	// decoded it already: the engine reads that revision from it instead of
	// decoding and keeping a copy of its own (a 10,000-node design decoded
	// is tens of MB). Neither the engine nor its caller changes a design.
	Design    *design.Design
	DesignRev string
	// Images verifies custom images' content before a provisioner sees
	// it (package firmwarestore, on serve's image directory); nil: a
	// custom image's sync fails, saying so.
	Images ImageContent
	// Firmware verifies the images of hardware profiles' baselines and
	// gives the URL the BMCs fetch each from (package firmwarestore); nil:
	// a profile with a firmware baseline fails its node, saying so.
	Firmware FirmwareImages
	// BootstrapDeadline is how long a node at the bootstrap stage may stay
	// silent: no boot action report since the later of the stage's start,
	// its last report, its token's (re)issue and the engine's start. Then
	// it fails, saying so. 0: DefaultBootstrapDeadline scaled by TimeScale,
	// at least minBootstrapDeadline; a value given is taken as it is.
	BootstrapDeadline time.Duration
	Log               zerolog.Logger
}

// DefaultTimeouts per stage.
var DefaultTimeouts = map[record.Stage]time.Duration{
	record.StageVerify:     5 * time.Minute,
	record.StageOOBPrepare: 10 * time.Minute,
	record.StageIdentify:   30 * time.Minute, // a machine PXE-boots and enlists
	record.StageCommission: 45 * time.Minute,
	record.StageConfigure:  20 * time.Minute,
	record.StageDeploy:     60 * time.Minute, // MAAS gives up after 30
	record.StageBootstrap:  60 * time.Minute,
	record.StageReleasing:  45 * time.Minute, // erasing disks takes a while
	record.StagePower:      10 * time.Minute,
	// Firmware updates one at a time, the BMC's own reset and the
	// machine's: a GPU server's full baseline takes an hour or more.
	record.StageBaseline: 3 * time.Hour,
	// A custom image's upload into the Site's provisioner (images.go).
	record.StageImages: 2 * time.Hour,
}

// DefaultBootstrapDeadline is how long a bootstrapping node may stay
// silent at time scale 1: a real machine reports within minutes of its
// deployment (cloud-init runs the bootstrap at first boot).
const DefaultBootstrapDeadline = 20 * time.Minute

// minBootstrapDeadline floors the scaled default: a node's first report
// costs a few real HTTP round trips after its boot, whatever the time
// scale (the lab's agents answer within milliseconds; 2 s leaves room
// for a loaded test machine and lets lab tests see the deadline pass).
const minBootstrapDeadline = 2 * time.Second

// Engine runs tasks. It is safe for concurrent use.
type Engine struct {
	cfg Config
	// fellBack: nodes whose first OOB method did not answer lately (oob.go).
	fellBack fallbacks
	rec      records
	log      zerolog.Logger
	glob     sem
	prov     sem
	oob      sem

	pollLane sem        // the poller's calls (pollStatus)
	gate     *roundGate // nodes in a stage's handler at once (gate.go)
	bmcs     drivers.KeyedLocks
	// updates bounds the firmware updates running (baseline_slots.go).
	updates updateSlots
	// imgs: the image syncs running (images.go).
	imgs imageSyncs
	poll *poller

	statusOne group.Batcher[drivers.NodeRef, drivers.Machine] // status of one machine
	recon     reconcileState                                  // reconcile.go
	cons      consoles                                        // console.go

	mu      sync.Mutex
	runs    map[string]*taskRun // running tasks
	leases  map[string]string   // node → task holding it
	leaseCh chan struct{}       // closed and replaced when a lease is released
	frozen  map[string]string   // node → why it is frozen
	designs map[string]*design.Design
	wakes   map[string]chan struct{} // node → its wake-up (wake.go)
	parked  map[string]func()        // node → what wakes it, parked on a timer (park.go)

	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
	closed  bool
	started time.Time // when Start ran (a bootstrap deadline counts from it at the earliest)
}

// New returns an engine; Start resumes its unfinished tasks.
func New(cfg Config) (*Engine, error) {
	if cfg.Store == nil {
		return nil, errors.New("orchestrator: no state store")
	}
	if cfg.Secrets == nil {
		cfg.Secrets = func(_ context.Context, ref string) (drivers.Secret, error) { return secrets.Resolve(ref) }
	}
	if cfg.TimeScale <= 0 {
		cfg.TimeScale = 1
	}
	cfg.Limits = cfg.Limits.withDefaults()
	cfg.Retry = cfg.Retry.withDefaults()
	if cfg.DeployRetries == 0 {
		cfg.DeployRetries = 1
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Duration(float64(10*time.Second) * cfg.TimeScale)
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = time.Minute
	}
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = 10 * time.Minute
	}
	e := &Engine{cfg: cfg, rec: records{cfg.Store}, log: cfg.Log,
		glob: make(sem, cfg.Limits.Global), prov: make(sem, cfg.Limits.Provisioner), oob: make(sem, cfg.Limits.OOB), pollLane: make(sem, 1),
		gate: newRoundGate(cfg.Limits.Rounds),
		runs: map[string]*taskRun{}, leases: map[string]string{}, leaseCh: make(chan struct{}),
		frozen: map[string]string{}, designs: map[string]*design.Design{}, wakes: map[string]chan struct{}{}}
	if cfg.Design != nil && cfg.DesignRev != "" {
		e.designs[cfg.DesignRev] = cfg.Design
	}
	e.statusOne.Max = statusBatch
	e.updates.wake = e.wake
	e.poll = newPoller(e, cfg.PollInterval)
	return e, nil
}

// scaled applies the time scale.
func (e *Engine) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * e.cfg.TimeScale)
}

// minTimeout floors scaled stage timeouts: a stage's API calls take real
// time whatever the time scale.
const minTimeout = time.Minute

func (e *Engine) timeout(s record.Stage) time.Duration {
	if d, ok := e.cfg.Timeouts[s]; ok {
		return d
	}
	d, ok := DefaultTimeouts[s]
	if !ok {
		d = 30 * time.Minute
	}
	return max(e.scaled(d), min(d, minTimeout))
}

// bootstrapDeadline is how long a bootstrapping node may stay silent.
func (e *Engine) bootstrapDeadline() time.Duration {
	if e.cfg.BootstrapDeadline > 0 {
		return e.cfg.BootstrapDeadline
	}
	return max(e.scaled(DefaultBootstrapDeadline), minBootstrapDeadline)
}

// Start loads the engine's state and resumes every task that was queued
// or running when the process stopped; it then runs the leak and drift
// sweep, and periodically afterwards. ctx bounds the engine's life.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	e.ctx, e.stop = context.WithCancel(ctx)
	e.started = now()
	e.mu.Unlock()
	nodes, err := e.rec.nodes(ctx)
	if err != nil {
		return fmt.Errorf("load node records: %w", err)
	}
	tasks, err := e.rec.tasks(ctx)
	if err != nil {
		return fmt.Errorf("load tasks: %w", err)
	}
	live := map[string]bool{}
	for _, t := range tasks {
		if !t.Status.Finished() {
			live[t.ID] = true
		}
	}
	e.mu.Lock()
	for _, n := range nodes {
		if n.Frozen {
			e.frozen[n.Name] = n.FrozenWhy
		}
		if n.Task != "" && live[n.Task] {
			e.leases[n.Name] = n.Task
		}
	}
	e.mu.Unlock()
	if n, ok := e.cfg.Bootstrap.(ReportNotifier); ok {
		n.NotifyReports(e.wake)
	}
	e.markInterruptedSyncs(ctx)
	e.wg.Add(1)
	go func() { defer e.wg.Done(); e.poll.run(e.ctx) }()
	for _, t := range tasks {
		if !t.Status.Finished() {
			e.log.Info().Str("task", t.ID).Str("action", string(t.Action)).Msg("resuming task after restart")
			e.launch(t)
		}
	}
	e.wg.Add(1)
	go func() { defer e.wg.Done(); e.sweepLoop(e.ctx) }()
	return nil
}

// Close stops every task where it stands, without compensation: they
// resume at the next Start. It waits for the goroutines to end.
func (e *Engine) Close() {
	e.mu.Lock()
	if e.closed || e.stop == nil {
		e.closed = true
		e.mu.Unlock()
		return
	}
	e.closed = true
	e.mu.Unlock()
	e.stop()
	e.wg.Wait()
}

// design returns the resolved design of a stored revision.
func (e *Engine) design(ctx context.Context, rev string) (*design.Design, string, error) {
	e.mu.Lock()
	d := e.designs[rev]
	e.mu.Unlock()
	if d != nil {
		return d, rev, nil
	}
	r, err := e.cfg.Store.Revision(ctx, rev)
	if err != nil {
		return nil, "", err
	}
	d, err = design.DecodeShared(r.Design) // read only: shared with the control API's copy of the revision
	if err != nil {
		return nil, "", fmt.Errorf("design revision %s: %w", r.ID, err)
	}
	e.mu.Lock()
	e.designs[r.ID] = d
	e.mu.Unlock()
	return d, r.ID, nil
}

// callServer runs fn under the global and provisioner limits.
func (e *Engine) callServer(ctx context.Context, fn func(context.Context) error) error {
	if e.cfg.Drivers.Server == nil {
		return drivers.Errorf(drivers.Permanent, "no server driver configured")
	}
	s := &serverSlot{e: e}
	if err := s.take(ctx); err != nil {
		return err
	}
	defer s.give()
	// A driver that waits for another call's batch lends the slot.
	return fn(drivers.WithWaiting(ctx, func() func() { return s.lend(ctx) }))
}

// readServer is callServer for a call that only reads the provisioner
// (a verb's look at a machine before it writes its record): a transient
// error is tried again under the retry policy, as a task's calls are,
// for at most readAttempts tries, so an API call answers within seconds.
func (e *Engine) readServer(ctx context.Context, fn func(context.Context) error) error {
	const readAttempts = 3
	for attempt := 1; ; attempt++ {
		err := e.callServer(ctx, fn)
		if err == nil || ctx.Err() != nil || attempt >= min(readAttempts, e.cfg.Retry.Attempts) || !transient(err) {
			return err
		}
		e.log.Warn().Err(err).Int("attempt", attempt).Msg("provisioner read failed; trying again")
		if !sleep(ctx, e.scaled(e.cfg.Retry.backoff(attempt))) {
			return err
		}
	}
}

// transient tells whether err is a driver's error of class Transient
// (not any error Classify would call transient: a store's is not).
func transient(err error) bool {
	var de *drivers.Error
	return errors.As(err, &de) && de.Class == drivers.Transient
}

// serverSlot is a server call's slot of the global and provisioner
// limits, which the call can give back while it waits. Several
// goroutines of one call may wait at once (the MAAS driver's tags): the
// first lends the slot, the last to resume takes it back.
type serverSlot struct {
	e    *Engine
	mu   sync.Mutex // lent and the slot's giving back and taking again
	lent int        // the call's waits in progress
	held bool
}

// lend gives the slot back for a wait of the call; the returned resume
// takes it again when the call's last wait ends.
func (s *serverSlot) lend(ctx context.Context) (resume func()) {
	s.mu.Lock()
	s.lent++
	if s.lent == 1 {
		s.give()
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.lent--; s.lent == 0 {
			_ = s.take(ctx)
		}
	}
}

func (s *serverSlot) take(ctx context.Context) error {
	if err := s.e.glob.acquire(ctx); err != nil {
		return err
	}
	if err := s.e.prov.acquire(ctx); err != nil {
		s.e.glob.release()
		return err
	}
	s.held = true
	return nil
}

func (s *serverSlot) give() {
	if s.held {
		s.e.prov.release()
		s.e.glob.release()
		s.held = false
	}
}

// callBMC runs fn under the BMC's own lock, the OOB limit and the global
// limit.
func (e *Engine) callBMC(ctx context.Context, b drivers.BMC, fn func(context.Context) error) error {
	if e.cfg.Drivers.OOB == nil && len(e.cfg.Drivers.OOBByType) == 0 {
		return drivers.Errorf(drivers.Permanent, "no OOB driver configured")
	}
	unlock, err := e.bmcs.Lock(ctx, fmt.Sprintf("%s:%d", b.Address, b.Port))
	if err != nil {
		return err
	}
	defer unlock()
	if err := e.oob.acquire(ctx); err != nil {
		return err
	}
	defer e.oob.release()
	if err := e.glob.acquire(ctx); err != nil {
		return err
	}
	defer e.glob.release()
	// The calls fn makes to the BMC may share one session (power state,
	// boot device and power on: one handshake instead of three), closed
	// before the BMC's lock is given back.
	ctx, end := drivers.WithSessionScope(ctx)
	defer end()
	return fn(ctx)
}

// status asks the server driver about machines, in one call. The nodes
// that ask about their own machine at the same time (woken by the same
// poll, they move on together) are asked about together (internal/batch).
func (e *Engine) status(ctx context.Context, refs []drivers.NodeRef) ([]drivers.Machine, error) {
	if len(refs) != 1 {
		return e.statusCall(ctx, refs)
	}
	m, err := e.statusOne.Do(ctx, "", refs[0], e.statusCall)
	if err != nil {
		return nil, err
	}
	return []drivers.Machine{m}, nil
}

// pollStatus is the poller's Status call. It does not queue behind the
// nodes' calls for the provisioner limit (when many nodes move at once,
// hundreds wait there, and the poll that sees their machines' next
// change would wait with them): polls have a lane of their own, one
// call at a time.
func (e *Engine) pollStatus(ctx context.Context, refs []drivers.NodeRef) ([]drivers.Machine, error) {
	if err := e.pollLane.acquire(ctx); err != nil {
		return nil, err
	}
	defer e.pollLane.release()
	return e.cfg.Drivers.Server.Status(ctx, refs)
}

func (e *Engine) statusCall(ctx context.Context, refs []drivers.NodeRef) ([]drivers.Machine, error) {
	var ms []drivers.Machine
	err := e.callServer(ctx, func(ctx context.Context) error {
		var err error
		ms, err = e.cfg.Drivers.Server.Status(ctx, refs)
		return err
	})
	return ms, err
}

func (e *Engine) password(ctx context.Context, d *design.Design, n *design.Node) (drivers.Secret, error) {
	ref := n.OOB(d.SiteOOBDriver()).PasswordRef
	if ref == "" {
		return drivers.Secret{}, nil
	}
	pw, err := e.secret(ctx, ref)
	if err != nil {
		return drivers.Secret{}, drivers.Errorf(drivers.Permanent,
			"node %s: BMC password %s: %w (set the secret, then retry the task)", n.Metadata.Name, ref, err)
	}
	return pw, nil
}

// secretWait bounds a secret's lookup: a state store that does not answer
// (every etcd member gone) fails the node's step instead of holding it.
const secretWait = 30 * time.Second

// secret resolves ref, within secretWait and the engine's life.
func (e *Engine) secret(ctx context.Context, ref string) (drivers.Secret, error) {
	if ctx == nil { // an engine not started (tests of its parts)
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, secretWait)
	defer cancel()
	if e.ctx != nil { // a started engine: Close ends the lookup
		stop := context.AfterFunc(e.ctx, cancel)
		defer stop()
	}
	return e.cfg.Secrets(ctx, ref)
}

// serverNode is what the server driver needs of a node.
func (e *Engine) serverNode(ctx context.Context, d *design.Design, n *design.Node, machineID string) (drivers.Node, error) {
	dn := driverspec.Node(d, n, machineID)
	user, pw, err := e.bmcAuth(ctx, d, n)
	if err != nil {
		return drivers.Node{}, err
	}
	dn.Power = driverspec.Power(d, n, pw)
	if user != "" { // an override (bmcauth.go)
		dn.Power.Username = user
	}
	if err := e.withSiteProfile(ctx, d, n, &dn); err != nil { // siteprofile.go
		return drivers.Node{}, err
	}
	if e.cfg.BMCEndpoint != nil { // the provisioner reaches the BMC where the engine does
		b := e.cfg.BMCEndpoint(n.OOB(d.SiteOOBDriver()).Type, driverspec.BMC(d, n, pw))
		dn.Power.Address, dn.Power.Port = b.Address, b.Port
		// A machine that enlists itself tells the provisioner its BMC's
		// IPMI address, whatever the node is driven with.
		id := e.cfg.BMCEndpoint("ipmi", driverspec.BMC(d, n, pw))
		dn.BMCAddress = id.Address
		if id.Port != 0 {
			dn.BMCAddress = net.JoinHostPort(id.Address, strconv.Itoa(id.Port))
		}
	}
	return dn, nil
}
