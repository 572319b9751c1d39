package driverstest

// The suite's own tests: broken drivers (fakes behind a wrapper that breaks
// one rule) run through the suite under a recorder standing in for
// testing.T, which must catch each of them; the sound drivers must pass
// under the recorder too.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/drivers/network/noop"
)

// record collects the failures of a suite run.
type record struct {
	mu       sync.Mutex
	failures []string
}

// recorder is a tb that records instead of failing the real test. Like
// testing.T, it runs each subtest in its own goroutine so that Fatalf and
// FailNow can end it with runtime.Goexit.
type recorder struct {
	rec    *record
	name   string
	failed atomic.Bool
}

func (r *recorder) Helper()                   {}
func (r *recorder) Logf(string, ...any)       {}
func (r *recorder) Errorf(f string, a ...any) { r.fail(fmt.Sprintf(f, a...)) }
func (r *recorder) Fatalf(f string, a ...any) { r.fail(fmt.Sprintf(f, a...)); runtime.Goexit() }
func (r *recorder) FailNow()                  { r.failed.Store(true); runtime.Goexit() }

func (r *recorder) fail(msg string) {
	r.failed.Store(true)
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	r.rec.failures = append(r.rec.failures, r.name+": "+msg)
}

func (r *recorder) Run(name string, f func(tb)) bool {
	sub := &recorder{rec: r.rec, name: r.name + "/" + name}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(sub)
	}()
	<-done
	if sub.failed.Load() {
		r.failed.Store(true)
	}
	return !sub.failed.Load()
}

// record runs suite under a recorder and returns its failures.
func recordRun(suite func(tb)) []string {
	root := &recorder{rec: &record{}, name: "suite"}
	root.Run("run", suite)
	root.rec.mu.Lock()
	defer root.rec.mu.Unlock()
	return root.rec.failures
}

var goodBMC = drivers.BMC{Node: "n1", Address: "10.0.0.1", Username: "admin", Password: drivers.NewSecret("good-pass-91b2")}

func goodNode() drivers.Node {
	n := NetworkNode()
	n.Name, n.Hostname = "n1", "n1"
	return n
}

// --- broken OOB drivers ---

// ctxBlindOOB never looks at its context.
type ctxBlindOOB struct{ drivers.OOB }

func (d ctxBlindOOB) Probe(_ context.Context, b drivers.BMC) (drivers.BMCInfo, error) {
	return d.OOB.Probe(context.Background(), b)
}
func (d ctxBlindOOB) PowerStatus(_ context.Context, b drivers.BMC) (drivers.PowerState, error) {
	return d.OOB.PowerStatus(context.Background(), b)
}
func (d ctxBlindOOB) PowerOn(_ context.Context, b drivers.BMC) (drivers.Result, error) {
	return d.OOB.PowerOn(context.Background(), b)
}
func (d ctxBlindOOB) PowerOff(_ context.Context, b drivers.BMC) (drivers.Result, error) {
	return d.OOB.PowerOff(context.Background(), b)
}
func (d ctxBlindOOB) PowerCycle(_ context.Context, b drivers.BMC) (drivers.Result, error) {
	return d.OOB.PowerCycle(context.Background(), b)
}
func (d ctxBlindOOB) SetBootDevice(_ context.Context, b drivers.BMC, dev drivers.BootDevice) (drivers.Result, error) {
	return d.OOB.SetBootDevice(context.Background(), b, dev)
}

// retryDoneOOB returns Done with a RetryAfter from PowerOn.
type retryDoneOOB struct{ drivers.OOB }

func (d retryDoneOOB) PowerOn(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	r, err := d.OOB.PowerOn(ctx, b)
	if err == nil {
		r.RetryAfter = time.Second
	}
	return r, err
}

// leakyOOB puts the password into PowerOn's messages and its errors.
type leakyOOB struct{ drivers.OOB }

func (d leakyOOB) PowerOn(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	r, err := d.OOB.PowerOn(ctx, b)
	if err != nil {
		return r, fmt.Errorf("%w (ipmitool -P %s)", err, b.Password.Reveal())
	}
	r.Message += " with password " + b.Password.Reveal()
	return r, nil
}

// strictOOB fails a PowerOn of a machine that is on.
type strictOOB struct{ drivers.OOB }

func (d strictOOB) PowerOn(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	r, err := d.OOB.PowerOn(ctx, b)
	if err == nil && strings.Contains(r.Message, "already") {
		return drivers.Failed("machine is already on"), nil
	}
	return r, err
}

// unclassifiedOOB strips the class (and the context error) off PowerOn's
// and PowerStatus's errors.
type unclassifiedOOB struct{ drivers.OOB }

func strip(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(err.Error())
}

func (d unclassifiedOOB) PowerOn(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	r, err := d.OOB.PowerOn(ctx, b)
	return r, strip(err)
}
func (d unclassifiedOOB) PowerStatus(ctx context.Context, b drivers.BMC) (drivers.PowerState, error) {
	p, err := d.OOB.PowerStatus(ctx, b)
	return p, strip(err)
}

// trustingOOB talks to the BMC with the good password whatever it is given.
type trustingOOB struct{ drivers.OOB }

func (d trustingOOB) Probe(ctx context.Context, b drivers.BMC) (drivers.BMCInfo, error) {
	b.Password = goodBMC.Password
	return d.OOB.Probe(ctx, b)
}
func (d trustingOOB) PowerOn(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	b.Password = goodBMC.Password
	return d.OOB.PowerOn(ctx, b)
}

// slowOOB's PowerStatus takes a while and ignores its context.
type slowOOB struct{ drivers.OOB }

const slowCall = 150 * time.Millisecond

func (d slowOOB) PowerStatus(_ context.Context, b drivers.BMC) (drivers.PowerState, error) {
	time.Sleep(slowCall)
	return d.OOB.PowerStatus(context.Background(), b)
}

// --- broken server drivers ---

// stuckServer's Commission never ends.
type stuckServer struct{ drivers.Server }

func (d stuckServer) Commission(ctx context.Context, _ drivers.NodeRef) (drivers.Result, error) {
	if err := ctx.Err(); err != nil {
		return drivers.Result{}, err
	}
	return drivers.InProgress(time.Millisecond, "commissioning"), nil
}

// forgetfulServer gives a new MachineID on every IdentifyNode.
type forgetfulServer struct {
	drivers.Server
	n *atomic.Int64
}

func (d forgetfulServer) IdentifyNode(ctx context.Context, n drivers.Node) (drivers.Machine, drivers.Result, error) {
	m, r, err := d.Server.IdentifyNode(ctx, n)
	if err == nil {
		m.MachineID = fmt.Sprintf("%s-%d", m.MachineID, d.n.Add(1))
	}
	return m, r, err
}

// eagerServer's Recover always succeeds.
type eagerServer struct{ drivers.Server }

func (d eagerServer) Recover(ctx context.Context, _ drivers.NodeRef, a drivers.Recovery) (drivers.Result, error) {
	if err := ctx.Err(); err != nil {
		return drivers.Result{}, err
	}
	return drivers.Done("recovered with %s", a), nil
}

// terseServer's Status leaves out unknown nodes.
type terseServer struct{ drivers.Server }

func (d terseServer) Status(ctx context.Context, refs []drivers.NodeRef) ([]drivers.Machine, error) {
	ms, err := d.Server.Status(ctx, refs)
	var out []drivers.Machine
	for _, m := range ms {
		if m.MachineID != "" {
			out = append(out, m)
		}
	}
	return out, err
}

// --- broken network drivers ---

// blankNetwork's ConfigurePorts returns a zero Result.
type blankNetwork struct{ drivers.Network }

func (d blankNetwork) ConfigurePorts(ctx context.Context, n drivers.Node, p drivers.Phase) (drivers.Result, error) {
	_, err := d.Network.ConfigurePorts(ctx, n, p)
	return drivers.Result{}, err
}

// laxNetwork accepts any phase.
type laxNetwork struct{ drivers.Network }

func (d laxNetwork) ConfigurePorts(ctx context.Context, n drivers.Node, p drivers.Phase) (drivers.Result, error) {
	if err := ctx.Err(); err != nil {
		return drivers.Result{}, err
	}
	if p != drivers.PhaseProduction && p != drivers.PhaseProvisioning {
		return drivers.Done("configured %s", p), nil
	}
	return d.Network.ConfigurePorts(ctx, n, p)
}

func oobSuite(wrap func(drivers.OOB) drivers.OOB) func(tb) {
	return func(h tb) {
		runOOB(h, func(tb) (drivers.OOB, drivers.BMC) { return wrap(fake.NewOOB(fake.Script{Polls: 1})), goodBMC })
	}
}

func serverSuite(wrap func(drivers.Server) drivers.Server) func(tb) {
	return func(h tb) {
		runServer(h, func(tb) drivers.Server { return wrap(fake.NewServer(fake.Script{Polls: 1})) }, goodNode())
	}
}

func networkSuite(wrap func(drivers.Network) drivers.Network) func(tb) {
	return func(h tb) {
		runNetwork(h, func(tb) drivers.Network { return wrap(fake.NewNetwork(fake.Script{Polls: 1})) })
	}
}

func TestSuiteCatchesBrokenDrivers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		suite func(tb)
		bound time.Duration // cancelBound for this case; 0 = default
		want  []string      // each must be in some failure
	}{
		{
			name:  "OOB ignoring its context",
			suite: oobSuite(func(d drivers.OOB) drivers.OOB { return ctxBlindOOB{d} }),
			want: []string{
				"CancelledContext: PowerOn with a cancelled context: returned no error",
				"ExpiredDeadline: SetBootDevice with an expired deadline: returned no error",
				"CancelledContext: Probe with a cancelled context: returned no error",
			},
		},
		{
			name:  "OOB returning Done with a RetryAfter",
			suite: oobSuite(func(d drivers.OOB) drivers.OOB { return retryDoneOOB{d} }),
			want:  []string{"PowerSequence: PowerOn (call 1): returned an invalid Result"},
		},
		{
			name:  "OOB revealing the password",
			suite: oobSuite(func(d drivers.OOB) drivers.OOB { return leakyOOB{d} }),
			want: []string{
				"PowerSequence: PowerOn (call 1): message reveals a password",
				"WrongPassword: PowerOn with a wrong password: message reveals a password",
			},
		},
		{
			name:  "OOB whose PowerOn is not idempotent",
			suite: oobSuite(func(d drivers.OOB) drivers.OOB { return strictOOB{d} }),
			want:  []string{"Idempotent: PowerOn after Done: got failed"},
		},
		{
			name:  "OOB returning unclassified errors",
			suite: oobSuite(func(d drivers.OOB) drivers.OOB { return unclassifiedOOB{d} }),
			want: []string{
				"WrongPassword: PowerOn with a wrong password: error",
				"carries no class",
				"CancelledContext: PowerStatus with a cancelled context: error \"context canceled\" is neither context canceled nor classified",
			},
		},
		{
			name:  "OOB accepting a wrong password",
			suite: oobSuite(func(d drivers.OOB) drivers.OOB { return trustingOOB{d} }),
			want: []string{
				"WrongPassword: Probe with a wrong password:",
				"WrongPassword: PowerOn with a wrong password: got done",
			},
		},
		{
			name:  "OOB call outliving its cancelled context",
			suite: oobSuite(func(d drivers.OOB) drivers.OOB { return slowOOB{d} }),
			bound: slowCall / 3,
			want: []string{
				"CancelledContext: PowerStatus with a cancelled context: did not return within",
				"CancelDuringCall: PowerStatus: did not return within",
			},
		},
		{
			name:  "server step that never ends",
			suite: serverSuite(func(d drivers.Server) drivers.Server { return stuckServer{d} }),
			want:  []string{"Lifecycle: Commission: did not reach Done after 200 polls"},
		},
		{
			name: "server forgetting its machines",
			suite: serverSuite(func(d drivers.Server) drivers.Server {
				return forgetfulServer{d, new(atomic.Int64)}
			}),
			want: []string{
				"Lifecycle: IdentifyNode after Done: MachineID",
				"Concurrent: concurrent IdentifyNode: goroutine",
			},
		},
		{
			name:  "server recovering anything",
			suite: serverSuite(func(d drivers.Server) drivers.Server { return eagerServer{d} }),
			want:  []string{"Lifecycle: Recover with an action that does not apply: got done"},
		},
		{
			name:  "server Status leaving out unknown nodes",
			suite: serverSuite(func(d drivers.Server) drivers.Server { return terseServer{d} }),
			want:  []string{"Lifecycle: Status of 2 nodes: 1 machines"},
		},
		{
			name:  "network returning a zero Result",
			suite: networkSuite(func(d drivers.Network) drivers.Network { return blankNetwork{d} }),
			want:  []string{"ConfigurePorts: ConfigurePorts(provisioning) (call 1): returned an invalid Result"},
		},
		{
			name:  "network accepting any phase",
			suite: networkSuite(func(d drivers.Network) drivers.Network { return laxNetwork{d} }),
			want:  []string{"UnknownPhase: ConfigurePorts of an unknown phase: got done"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.bound != 0 {
				old := cancelBound
				cancelBound = tc.bound
				defer func() { cancelBound = old }()
			}
			failures := recordRun(tc.suite)
			if len(failures) == 0 {
				t.Fatal("the suite passed a broken driver")
			}
			all := strings.Join(failures, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("no failure contains %q; failures:\n%s", w, all)
				}
			}
			t.Logf("%d failures, e.g. %s", len(failures), failures[0])
		})
	}
}

// TestRecorderPassesSoundDrivers checks the recorder itself: sound drivers
// produce no failure under it.
func TestRecorderPassesSoundDrivers(t *testing.T) {
	same := func(d drivers.OOB) drivers.OOB { return d }
	for name, suite := range map[string]func(tb){
		"OOB":     oobSuite(same),
		"server":  serverSuite(func(d drivers.Server) drivers.Server { return d }),
		"network": networkSuite(func(d drivers.Network) drivers.Network { return d }),
		"noop": func(h tb) {
			runNetwork(h, func(tb) drivers.Network { d, _ := noop.New(drivers.Config{}); return d })
		},
	} {
		if failures := recordRun(suite); len(failures) > 0 {
			t.Errorf("%s: %d failures:\n%s", name, len(failures), strings.Join(failures, "\n"))
		}
	}
}

// TestRecorderFatal checks that Fatalf ends only the subtest.
func TestRecorderFatal(t *testing.T) {
	reached := false
	failures := recordRun(func(h tb) {
		h.Run("a", func(h tb) {
			h.Fatalf("stop")
			reached = true
		})
		h.Run("b", func(h tb) { h.Errorf("b ran") })
	})
	if reached || len(failures) != 2 || failures[0] != "suite/run/a: stop" || failures[1] != "suite/run/b: b ran" {
		t.Errorf("reached %v, failures %q", reached, failures)
	}
}

// TestContextChecksPassBlockingDrivers runs the context checks alone on
// fakes that block until their context is done: a driver that honours its
// context (and does nothing else) passes them, CancelDuringCall included.
func TestContextChecksPassBlockingDrivers(t *testing.T) {
	block := fake.Script{Block: true}
	for name, calls := range map[string][]ctxCall{
		"OOB":     oobCtxCalls(fake.NewOOB(block), goodBMC),
		"server":  serverCtxCalls(fake.NewServer(block), goodNode()),
		"network": networkCtxCalls(fake.NewNetwork(block), goodNode()),
	} {
		start := time.Now()
		failures := recordRun(func(h tb) {
			runContextChecks(h, func(tb) ([]ctxCall, []string) { return calls, []string{goodBMC.Password.Reveal()} })
		})
		if len(failures) > 0 {
			t.Errorf("%s: %d failures:\n%s", name, len(failures), strings.Join(failures, "\n"))
		}
		// CancelDuringCall waited ~20ms for each read-only call.
		if el := time.Since(start); el < 20*time.Millisecond {
			t.Errorf("%s: the context checks took %v: CancelDuringCall did not wait for the cancellation", name, el)
		}
	}
}
