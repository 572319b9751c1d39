package gitsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/statestore"
)

// Applier applies a design directory (serve: the control API's
// ApplyDir): validation, plan, hold or store, audit; never half.
type Applier interface {
	ApplyDir(ctx context.Context, req ApplyRequest) (ApplyResult, error)
}

// ApplyRequest is one commit's design, extracted.
type ApplyRequest struct {
	Dir     string
	Roots   []string // git:<url>#<branch>:<path>
	Commit  string
	Author  string
	Message string
	Approve string // the approval of what a held apply listed (ApplyResult.Approve)
	Actor   string // who, for the audit record
}

// Results of an apply (ApplyResult.Result).
const (
	ResultCreated   = "created"
	ResultRestored  = "restored"
	ResultUnchanged = "unchanged"
	ResultHeld      = "held"
	ResultInvalid   = "invalid"
)

// ApplyResult is what the apply did.
type ApplyResult struct {
	Revision    string
	Result      string
	Destructive []string // the plan's destructive actions, in words
	Findings    []string // validation errors, file:line: message
	// Approve (held): the ApplyRequest.Approve that applies exactly
	// what Destructive lists; Bindings: that holds a credential binding
	// change (only an admin may approve it).
	Approve  string
	Bindings bool
}

// Secrets reads a secret's value by name (the secret store).
type Secrets interface {
	Get(ctx context.Context, name string) (drivers.Secret, error)
}

// Options are what a follower works with.
type Options struct {
	Applier Applier
	Secrets Secrets // nil: no credentials and no webhook can be read
	Store   statestore.KeyedRecords
	Log     zerolog.Logger
}

// Follower follows one branch of one remote.
type Follower struct {
	cfg      Config
	interval time.Duration
	o        Options
	status   statusStore
	kick     chan string
	mu       sync.Mutex // one round or approval at a time
	seen     *deliveries
}

// Actor is who the audit records name for a round's apply.
const Actor = "git-sync"

// New checks cfg and makes a follower; Run starts it.
func New(cfg Config, o Options) (*Follower, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if o.Applier == nil || o.Store == nil || cfg.Dir == "" {
		return nil, errors.New("gitsync: Applier, Store and Config.Dir are required")
	}
	iv, _ := cfg.interval()
	cfg.Limits = cfg.Limits.OrDefault()
	return &Follower{cfg: cfg, interval: iv, o: o, status: statusStore{o.Store}, kick: make(chan string, 1), seen: newDeliveries(1024)}, nil
}

// Run fetches at once, then every interval and whenever Kick is called
// (coalesced: one round at a time, one more waiting at most), until ctx
// ends.
func (f *Follower) Run(ctx context.Context) error {
	sweep(f.cfg.Dir)
	t := time.NewTicker(f.interval)
	defer t.Stop()
	trigger := "start"
	for {
		f.Round(ctx, trigger)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			trigger = "interval"
		case trigger = <-f.kick:
		}
	}
}

// sweep removes what a killed process left of its rounds: private
// directories and extracted designs.
func sweep(dir string) {
	for _, pat := range []string{"round-*", "design-*"} {
		left, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, p := range left {
			_ = os.RemoveAll(p)
		}
	}
}

// Kick asks for a round now (a verified webhook).
func (f *Follower) Kick(trigger string) {
	select {
	case f.kick <- trigger:
	default: // one is waiting already
	}
}

// Round fetches the branch and handles a new head once; what happened is
// saved in the status (an unchanged head updates the last fetch only).
func (f *Follower) Round(ctx context.Context, trigger string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := f.status.load(ctx)
	if err != nil {
		f.o.Log.Error().Err(err).Msg("git source: round skipped")
		return
	}
	st.Remote, st.Branch, st.Path = Redacted(f.cfg.URL), f.cfg.Branch, f.cfg.Path
	ev := Event{Time: now(), Trigger: trigger}
	f.handle(ctx, &st, &ev)
	if ev.Outcome != OutcomeUnchanged {
		st.event(ev)
		f.logEvent(ev)
	}
	if err := f.status.save(ctx, st); err != nil {
		f.o.Log.Error().Err(err).Msg("git source: status")
	}
}

func (f *Follower) logEvent(ev Event) {
	l := f.o.Log.Info()
	if ev.Outcome == OutcomeFailed || ev.Outcome == OutcomeRefused || ev.Outcome == OutcomeInvalid {
		l = f.o.Log.Warn()
	}
	l.Str("remote", Redacted(f.cfg.URL)).Str("branch", f.cfg.Branch).Str("commit", ev.Commit).Str("outcome", ev.Outcome).
		Str("revision", ev.Revision).Str("reason", ev.Reason).Str("trigger", ev.Trigger).Msg("git source round")
}

func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }

// handle is one round: fetch, decide, apply.
func (f *Follower) handle(ctx context.Context, st *Status, ev *Event) {
	r, err := f.open(ctx)
	if err != nil {
		f.fail(st, ev, err)
		return
	}
	defer r.close()
	head, err := r.remoteHead(ctx)
	if err != nil {
		st.LastFetch = &Fetch{Time: ev.Time, Error: f.text(err)}
		f.fail(st, ev, err)
		return
	}
	st.LastFetch = &Fetch{Time: ev.Time, Commit: head}
	ev.Commit = head
	if head == st.Handled {
		ev.Outcome = OutcomeUnchanged
		return
	}
	if err := f.fetch(ctx, r, head); err != nil {
		st.LastFetch.Error = f.text(err)
		f.failOrRefuse(st, ev, err)
		return
	}
	if st.Applied != nil && !f.cfg.AllowRewrite {
		ok, err := r.descends(ctx, st.Applied.Commit, head)
		if err != nil {
			f.failOrRefuse(st, ev, err)
			return
		}
		if !ok {
			f.refuse(st, ev, fmt.Sprintf("history rewrite: the last applied commit %s is not an ancestor of the head %s within %d commits (a force-push?); nothing applied: push a descendant, or set git.allow_rewrite to apply it",
				short(st.Applied.Commit), short(head), MaxDepth), nil)
			return
		}
	}
	if f.cfg.AllowedSigners != "" {
		if err := r.verify(ctx, head, f.cfg.AllowedSigners); err != nil {
			f.refuse(st, ev, f.text(err), nil)
			return
		}
	}
	f.applyCommit(ctx, r, st, ev, head, "", Actor)
}

// fetch fetches the branch shallow (within the cache bound); head is what
// the remote said it was (a push in between: the next round takes it).
func (f *Follower) fetch(ctx context.Context, r *repo, head string) error {
	if err := r.fetch(ctx, DefaultDepth, 0); err != nil {
		return err
	}
	if !r.has(ctx, head) {
		return fmt.Errorf("the branch moved while it was fetched (%s is not in the fetch)", short(head))
	}
	return nil
}

// maxCache bounds the cache repository: 16 times the design limit.
func (f *Follower) maxCache() int64 { return 16 * f.cfg.Limits.DesignBytes }

// open prepares a round's repository with its credentials.
func (f *Follower) open(ctx context.Context) (*repo, error) {
	var cr creds
	var err error
	if cr.token, err = f.secret(ctx, f.cfg.TokenSecret); err != nil {
		return nil, err
	}
	if cr.sshKey, err = f.secret(ctx, f.cfg.SSHKeySecret); err != nil {
		return nil, err
	}
	cr.user = f.cfg.Username
	r, err := openRepo(ctx, f.cfg, cr)
	if err == nil {
		r.maxBytes = f.maxCache()
	}
	return r, err
}

// secret reads the named secret ("" none).
func (f *Follower) secret(ctx context.Context, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	if f.o.Secrets == nil {
		return "", fmt.Errorf("git source: secret %q: serve has no secret store (no key)", name)
	}
	v, err := f.o.Secrets.Get(ctx, name)
	if err != nil {
		return "", fmt.Errorf("git source: secret %q: %w (store it with `orchestrator secret set %s` or PUT /api/v1/secrets/%s)", name, err, name, name)
	}
	return v.Reveal(), nil
}

// applyCommit extracts commit's design and applies it, recording the
// outcome in st and ev.
func (f *Follower) applyCommit(ctx context.Context, r *repo, st *Status, ev *Event, commit, approve, actor string) {
	info, err := r.info(ctx, commit)
	if err != nil {
		f.fail(st, ev, err)
		return
	}
	dir, err := r.extract(ctx, commit, f.cfg.Path, f.cfg.Dir, f.cfg.Limits)
	if err != nil {
		f.refuse(st, ev, f.text(err), nil)
		return
	}
	defer os.RemoveAll(dir)
	res, err := f.o.Applier.ApplyDir(ctx, ApplyRequest{Dir: dir, Roots: []string{f.cfg.Root()}, Commit: commit,
		Author: info.Author, Message: info.Message, Approve: approve, Actor: actor})
	if err != nil {
		f.fail(st, ev, err)
		return
	}
	ev.Revision = res.Revision
	st.Handled = commit
	switch res.Result {
	case ResultInvalid:
		f.reject(st, ev, OutcomeInvalid, "the design does not validate: "+firstOr(res.Findings, "see the findings"), res.Findings)
	case ResultHeld:
		ev.Outcome, ev.Reason = OutcomeHeld, "destructive actions wait for approval: "+strings.Join(firstN(res.Destructive, 5), "; ")
		st.Held = &Held{Commit: commit, Revision: res.Revision, Destructive: firstN(res.Destructive, 100), Author: info.Author, Message: info.Message, Time: ev.Time,
			Approval: res.Approve, Bindings: res.Bindings}
	default:
		ev.Outcome, ev.Reason = OutcomeApplied, res.Result
		st.Applied = &Applied{Commit: commit, Revision: res.Revision, Result: res.Result, Author: info.Author, Message: info.Message, Time: ev.Time}
		st.Held = nil // applied past it, or it was the one approved
	}
}

// fail records a failure the next round retries (nothing handled).
func (f *Follower) fail(_ *Status, ev *Event, err error) {
	ev.Outcome, ev.Reason = OutcomeFailed, f.text(err)+" (retried at the next round)"
}

// failOrRefuse refuses a head over the size limits (it is not fetched
// again) and records any other error as a failure.
func (f *Follower) failOrRefuse(st *Status, ev *Event, err error) {
	if errors.Is(err, errTooLarge) {
		f.refuse(st, ev, f.text(err), nil)
		return
	}
	f.fail(st, ev, err)
}

// refuse records a refused head: it is not tried again.
func (f *Follower) refuse(st *Status, ev *Event, reason string, findings []string) {
	st.Handled = ev.Commit
	f.reject(st, ev, OutcomeRefused, reason, findings)
}

func (f *Follower) reject(st *Status, ev *Event, outcome, reason string, findings []string) {
	ev.Outcome, ev.Reason = outcome, clip(reason, 1024)
	st.Rejected = &Rejected{Commit: ev.Commit, Outcome: outcome, Reason: ev.Reason, Findings: firstN(findings, maxFindings), Time: ev.Time}
}

// text is err's message, redacted and bounded.
func (f *Follower) text(err error) string {
	return clip(drivers.RedactSecrets(err.Error()), 1024)
}

// firstN is the first n of s, each cut to maxItem bytes, and how many
// more there were: the status record stays bounded.
func firstN(s []string, n int) []string {
	out := make([]string, 0, min(len(s), n)+1)
	for _, v := range s[:min(len(s), n)] {
		out = append(out, clip(v, maxItem))
	}
	if len(s) > n {
		out = append(out, fmt.Sprintf("(and %d more)", len(s)-n))
	}
	return out
}

// maxItem bounds one finding or destructive action kept in the status.
const maxItem = 512

func firstOr(s []string, def string) string {
	if len(s) == 0 {
		return def
	}
	return s[0]
}

// Status is the saved status.
func (f *Follower) Status(ctx context.Context) (Status, error) {
	st, err := f.status.load(ctx)
	st.Remote, st.Branch, st.Path = Redacted(f.cfg.URL), f.cfg.Branch, f.cfg.Path
	if st.Events == nil {
		st.Events = []Event{}
	}
	return st, err
}
