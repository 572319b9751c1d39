// Package fake provides scriptable, stateful in-memory drivers of the three
// kinds, for engine unit tests and for the driver conformance suite
// (drivers/driverstest). A test binary can also serve them as a plugin
// through OOBFactory, ServerFactory and NetworkFactory, scripted by the
// driver's settings (see ScriptFromConfig).
//
// Every method is safe for concurrent use. A call is recorded (Calls), then
// checks, in order: the context (a done context returns ctx.Err()), Block,
// the injected failure (Script.FailAt), and finally the fake's real state.
package fake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// RetryAfter is what an InProgress answer of a fake asks for.
const RetryAfter = 10 * time.Millisecond

// Script scripts a fake's failures and pace.
type Script struct {
	FailAt     string        // method name that fails, e.g. "Commission", "PowerOn", "ConfigurePorts"; "" = none
	FailClass  drivers.Class // class of the injected error; default drivers.Transient
	FailResult bool          // inject a Failed Result (drivers.Failed) instead of an error
	FailTimes  int           // fail only the first N calls of FailAt, then behave; 0 = fail every call
	Polls      int           // long steps (PowerCycle, Commission, Deploy, Release, and IdentifyNode when enlisting) answer InProgress (RetryAfter 10ms) this many times before Done
	Block      bool          // calls block until ctx is done, then return ctx.Err() (for cancellation tests): every call, or only FailAt's calls when FailAt is set
	// OnBlock, when set, is told each call that Block holds, as it starts
	// to wait (the plugin logs it, so a test knows the call is inside).
	OnBlock func(method string)
}

// Call is one recorded call: the method and the node it was about ("" for
// site-wide calls such as ProbeSite, Owned, Status or a network Probe).
type Call struct {
	Method, Node string
}

// methods are the names FailAt accepts: the methods of all three kinds.
var methods = map[string]bool{
	// OOB (Probe is shared with Network).
	"Probe": true, "PowerStatus": true, "PowerOn": true, "PowerOff": true, "PowerCycle": true, "SetBootDevice": true,
	// Server.
	"ProbeSite": true, "PrepareSite": true, "IdentifyNode": true, "Commission": true,
	"ApplyNetworking": true, "ApplyStorage": true, "ApplyPlatform": true, "Deploy": true, "Release": true,
	"Status": true, "Owned": true, "Recover": true,
	// Server images (images.go).
	"Images": true, "ImportImage": true, "StartImageUpload": true, "UploadImageChunk": true, "AbandonImageUpload": true,
	// Network.
	"ConfigurePorts": true,
}

// ScriptFromConfig reads a Script from a driver's settings: failAt (a
// method name), failClass (transient | permanent | needs-intervention),
// failResult (true | false), failTimes and polls (counts >= 0) and block
// (true | false). Unknown keys and bad values are errors naming the key.
// Secrets are ignored.
func ScriptFromConfig(cfg drivers.Config) (Script, error) {
	var s Script
	for _, k := range slices.Sorted(maps.Keys(cfg.Settings)) {
		v := cfg.Settings[k]
		var err error
		switch k {
		case "failAt":
			if v != "" && !methods[v] {
				err = fmt.Errorf("unknown method %q", v)
			}
			s.FailAt = v
		case "failClass":
			switch c := drivers.Class(v); c {
			case drivers.Transient, drivers.Permanent, drivers.NeedsIntervention:
				s.FailClass = c
			default:
				err = fmt.Errorf("%q is not one of %s, %s, %s", v, drivers.Transient, drivers.Permanent, drivers.NeedsIntervention)
			}
		case "failResult":
			s.FailResult, err = parseBool(v)
		case "block":
			s.Block, err = parseBool(v)
		case "failTimes":
			s.FailTimes, err = parseCount(v)
		case "polls":
			s.Polls, err = parseCount(v)
		default:
			return Script{}, drivers.Errorf(drivers.Permanent, "fake: unknown setting %q (known: block, failAt, failClass, failResult, failTimes, polls)", k)
		}
		if err != nil {
			return Script{}, drivers.Errorf(drivers.Permanent, "fake: setting %s: %v", k, err)
		}
	}
	return s, nil
}

func parseBool(v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false", "":
		return false, nil
	}
	return false, fmt.Errorf("%q is not true or false", v)
}

func parseCount(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a count (an integer >= 0)", v)
	}
	return n, nil
}

// OOBFactory builds a fake OOB driver scripted by cfg's settings.
func OOBFactory(cfg drivers.Config) (drivers.OOB, error) {
	s, err := ScriptFromConfig(cfg)
	if err != nil {
		return nil, err
	}
	return NewOOB(s), nil
}

// ServerFactory builds a fake server driver scripted by cfg's settings.
func ServerFactory(cfg drivers.Config) (drivers.Server, error) {
	s, err := ScriptFromConfig(cfg)
	if err != nil {
		return nil, err
	}
	return NewServer(s), nil
}

// NetworkFactory builds a fake network driver scripted by cfg's settings.
func NetworkFactory(cfg drivers.Config) (drivers.Network, error) {
	s, err := ScriptFromConfig(cfg)
	if err != nil {
		return nil, err
	}
	return NewNetwork(s), nil
}

// core is what the three fakes share: the script, the lock, the call log
// and the count of calls of the failing method.
type core struct {
	script Script
	mu     sync.Mutex
	calls  []Call
	failN  int // calls of script.FailAt that reached the injection point
}

// Calls returns the calls made, in order.
func (c *core) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

// begin records a call and applies the context, Block and the injected
// failure. When stop is true the method returns r and err as they are.
// A method that returns no Result (hasResult false) gets an error even when
// the script asks for a Failed Result.
func (c *core) begin(ctx context.Context, method, node string, hasResult bool) (r drivers.Result, stop bool, err error) {
	c.mu.Lock()
	c.calls = append(c.calls, Call{Method: method, Node: node})
	c.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return drivers.Result{}, true, err
	}
	if c.script.Block && (c.script.FailAt == "" || c.script.FailAt == method) {
		if c.script.OnBlock != nil {
			c.script.OnBlock(method)
		}
		<-ctx.Done()
		return drivers.Result{}, true, ctx.Err()
	}
	if c.script.FailAt != method {
		return drivers.Result{}, false, nil
	}
	c.mu.Lock()
	c.failN++
	n := c.failN
	c.mu.Unlock()
	if c.script.FailTimes > 0 && n > c.script.FailTimes {
		return drivers.Result{}, false, nil
	}
	what := method
	if node != "" {
		what += " of " + node
	}
	if c.script.FailResult && hasResult {
		return drivers.Failed("fake: injected failure of %s (call %d)", what, n), true, nil
	}
	class := c.script.FailClass
	if class == "" {
		class = drivers.Transient
	}
	return drivers.Result{}, true, drivers.Errorf(class, "fake: injected failure of %s (call %d)", what, n)
}
