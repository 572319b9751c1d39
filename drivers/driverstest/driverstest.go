// Package driverstest is the conformance suite every driver passes:
// RunOOB, RunServer and RunNetwork check the driver contract of package
// drivers against a live driver (a fake, a built-in driver against a
// simulator, or an external plugin through its client).
//
// The contract checked, per call: every Result is Valid(); every error
// carries a class (a *drivers.Error, as Errorf, NewError and the plugin
// client make) unless it is the context's own error; a cancelled context
// or an expired deadline makes every method return an error within a
// second (it should not act either, which the suite cannot see); steps
// are idempotent ("look, then act": a
// second call after Done is Done again); InProgress steps reach Done when
// polled; and concurrent calls are safe (run the suite under -race).
//
// The open functions are called once per subtest; they may return the
// same driver (and backend) every time, so the subtests leave the node or
// BMC as they found it as far as they can: powered off, released.
package driverstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// Bounds of the suite.
const (
	pollLimit   = 200                   // polls of one InProgress step before giving up
	pollMaxWait = 50 * time.Millisecond // cap on the RetryAfter the suite honours
	callTimeout = 30 * time.Second      // deadline of each ordinary call
	concurrency = 8                     // goroutines of the concurrency checks

	// minSecretLen is the shortest password the leak checks look for.
	minSecretLen = 4
)

// cancelBound is how soon a method must return once its context is done.
// A variable so that the suite's own tests can shorten it.
var cancelBound = time.Second

// tb is the part of testing.T the suite uses; the suite's own tests run it
// with a recorder to prove it fails broken drivers.
type tb interface {
	Helper()
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	FailNow()
	Run(name string, f func(tb)) bool
}

// realT adapts *testing.T to tb.
type realT struct{ *testing.T }

func (t realT) Run(name string, f func(tb)) bool {
	return t.T.Run(name, func(st *testing.T) { f(realT{st}) })
}

// testingT returns the *testing.T behind h, for the callers' open
// functions; nil under the suite's own recorder.
func testingT(h tb) *testing.T {
	if t, ok := h.(realT); ok {
		return t.T
	}
	return nil
}

// checker checks calls against the contract within one subtest. secrets
// must never appear in a message.
type checker struct {
	h       tb
	secrets []string
}

func newChecker(h tb, secrets ...string) *checker {
	c := &checker{h: h}
	for _, s := range secrets {
		// Shorter ones would match ordinary words; use a distinctive
		// password in the BMC the open function returns.
		if len(s) >= minSecretLen {
			c.secrets = append(c.secrets, s)
		}
	}
	return c
}

func ctxFor() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), callTimeout)
}

// noLeak reports a message that reveals a secret.
func (c *checker) noLeak(what, text string) bool {
	c.h.Helper()
	for _, s := range c.secrets {
		if strings.Contains(text, s) {
			c.h.Errorf("%s: message reveals a password: %q", what, text)
			return false
		}
	}
	return true
}

// classified reports whether err carries one of the three classes.
func classified(err error) bool {
	var e *drivers.Error
	if !errors.As(err, &e) {
		return false
	}
	switch e.Class {
	case drivers.Transient, drivers.Permanent, drivers.NeedsIntervention:
		return true
	}
	return false
}

// checkErr reports an error that carries no class or reveals a secret.
func (c *checker) checkErr(what string, err error) bool {
	c.h.Helper()
	if err == nil {
		return true
	}
	ok := c.noLeak(what, err.Error())
	if !classified(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		c.h.Errorf("%s: error %q carries no class (want a *drivers.Error from drivers.Errorf or drivers.NewError)", what, err)
		ok = false
	}
	return ok
}

// checkResult reports an invalid Result or one that reveals a secret.
func (c *checker) checkResult(what string, r drivers.Result) bool {
	c.h.Helper()
	if !r.Valid() {
		c.h.Errorf("%s: returned an invalid Result %+v (Done and Failed take no RetryAfter, InProgress needs one, Failed needs a message)", what, r)
		return false
	}
	return c.noLeak(what, r.Message)
}

// once makes one call that must succeed with a valid Result; it reports
// and returns false otherwise. Safe from any goroutine.
func (c *checker) once(what string, step func(context.Context) (drivers.Result, error)) (drivers.Result, bool) {
	c.h.Helper()
	ctx, cancel := ctxFor()
	defer cancel()
	r, err := step(ctx)
	if errors.Is(err, drivers.ErrBootNotKept) && drivers.Classify(err) == drivers.Transient {
		// The driver told what the BMC did: it took the override but keeps
		// no flags (ipmi_sim). That is the BMC's, and reporting it is right.
		c.noLeak(what, err.Error())
		c.h.Logf("%s: %v (the BMC keeps no boot flags; reported as it should be)", what, err)
		return drivers.Done("reported: boot override not kept"), true
	}
	if err != nil {
		c.checkErr(what, err)
		c.h.Errorf("%s: %v", what, err)
		return r, false
	}
	return r, c.checkResult(what, r)
}

// done makes one call that must be Done at once (an idempotent repeat).
func (c *checker) done(what string, step func(context.Context) (drivers.Result, error)) bool {
	c.h.Helper()
	r, ok := c.once(what, step)
	if ok && r.Status != drivers.StatusDone {
		c.h.Errorf("%s: got %s (%q), want Done: a step repeated after Done must be Done again", what, r.Status, r.Message)
		return false
	}
	return ok
}

// poll calls step until it is Done, sleeping as RetryAfter asks (capped);
// it reports and returns false on an error, a Failed result, an invalid
// Result or when Done does not come within pollLimit calls. Safe from any
// goroutine.
func (c *checker) poll(what string, step func(context.Context) (drivers.Result, error)) bool {
	c.h.Helper()
	for i := range pollLimit {
		r, ok := c.once(fmt.Sprintf("%s (call %d)", what, i+1), step)
		if !ok {
			return false
		}
		switch r.Status {
		case drivers.StatusDone:
			return true
		case drivers.StatusFailed:
			c.h.Errorf("%s: Failed: %s", what, r.Message)
			return false
		}
		time.Sleep(min(r.RetryAfter, pollMaxWait))
	}
	c.h.Errorf("%s: did not reach Done after %d polls", what, pollLimit)
	return false
}

// mustPoll is poll that ends the subtest on failure (test goroutine only).
func (c *checker) mustPoll(what string, step func(context.Context) (drivers.Result, error)) {
	c.h.Helper()
	if !c.poll(what, step) {
		c.h.FailNow()
	}
}

// fails checks a call that must fail: an error carrying a class, or a
// Failed result.
func (c *checker) fails(what string, r drivers.Result, err error) {
	c.h.Helper()
	if err != nil {
		c.checkErr(what, err)
		return
	}
	if !c.checkResult(what, r) {
		return
	}
	if r.Status != drivers.StatusFailed {
		c.h.Errorf("%s: got %s (%q), want a classified error or a Failed result", what, r.Status, r.Message)
	}
}

// ctxCall is one method called by the context checks; it returns the
// method's error and, when it has one, its Result.
type ctxCall struct {
	name string
	call func(ctx context.Context) (drivers.Result, error)
	// readOnly calls may run with a live context (CancelDuringCall).
	readOnly bool
}

// outcome is what within saw of a call: its answer when it returned in
// time, and how long it ran (or was waited for).
type outcome struct {
	r        drivers.Result
	err      error
	elapsed  time.Duration
	returned bool
}

// within runs f and waits at most d for it. A call that does not return is
// left running.
func within(d time.Duration, f func() (drivers.Result, error)) outcome {
	ch := make(chan outcome, 1)
	start := time.Now()
	go func() {
		r, err := f()
		ch <- outcome{r: r, err: err, returned: true}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case o := <-ch:
		o.elapsed = time.Since(start)
		return o
	case <-t.C:
		return outcome{elapsed: time.Since(start)}
	}
}

// runContextChecks adds the subtests CancelledContext, ExpiredDeadline and
// CancelDuringCall.
func runContextChecks(h tb, open func(tb) (calls []ctxCall, secrets []string)) {
	h.Run("CancelledContext", func(h tb) {
		calls, secrets := open(h)
		c := newChecker(h, secrets...)
		for _, m := range calls {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			c.doneCtx(ctx, m, "a cancelled context", context.Canceled)
		}
	})
	h.Run("ExpiredDeadline", func(h tb) {
		calls, secrets := open(h)
		c := newChecker(h, secrets...)
		for _, m := range calls {
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
			c.doneCtx(ctx, m, "an expired deadline", context.DeadlineExceeded)
			cancel()
		}
	})
	h.Run("CancelDuringCall", func(h tb) {
		calls, secrets := open(h)
		c := newChecker(h, secrets...)
		for _, m := range calls {
			if !m.readOnly {
				continue
			}
			ctx, cancel := context.WithCancel(context.Background())
			timer := time.AfterFunc(20*time.Millisecond, cancel)
			o := within(20*time.Millisecond+cancelBound, func() (drivers.Result, error) { return m.call(ctx) })
			r, err, el, returned := o.r, o.err, o.elapsed, o.returned
			timer.Stop()
			cancel()
			switch {
			case !returned:
				c.h.Errorf("%s: did not return within %v of its context being cancelled during the call", m.name, cancelBound)
			case err != nil:
				c.checkErr(m.name+" cancelled during the call", err)
			default:
				// It finished before the cancellation; its Result must be valid.
				c.checkResult(m.name, r)
			}
			if returned {
				c.h.Logf("%s returned after %v (cancelled at 20ms)", m.name, el.Round(time.Millisecond))
			}
		}
	})
}

// doneCtx checks that m, called with a done ctx, returns an error that is
// ctx's own or classified, within cancelBound.
func (c *checker) doneCtx(ctx context.Context, m ctxCall, what string, want error) {
	c.h.Helper()
	o := within(cancelBound, func() (drivers.Result, error) { return m.call(ctx) })
	err, el, returned := o.err, o.elapsed, o.returned
	switch {
	case !returned:
		c.h.Errorf("%s with %s: did not return within %v", m.name, what, cancelBound)
	case err == nil:
		c.h.Errorf("%s with %s: returned no error (took %v); a driver must check ctx and stop", m.name, what, el)
	case !errors.Is(err, want) && !classified(err):
		c.h.Errorf("%s with %s: error %q is neither %v nor classified", m.name, what, err, want)
	default:
		c.noLeak(m.name, err.Error())
	}
}

// noResult adapts a method without a Result to ctxCall: a valid Done when
// err is nil.
func noResult(err error) (drivers.Result, error) {
	if err != nil {
		return drivers.Result{}, err
	}
	return drivers.Done(""), nil
}

// concurrently runs f(i) in n goroutines and waits for them.
func concurrently(n int, f func(i int)) {
	done := make(chan struct{})
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			f(i)
		}()
	}
	for range n {
		<-done
	}
}
