package gitsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/slipway-dev/slipway/statestore"
)

// Where the status is kept.
const (
	statusColl = "gitsync"
	statusKey  = "status"
	// MaxEvents is how many recent events the status keeps.
	MaxEvents = 50
	// maxFindings bounds the findings kept of an invalid commit.
	maxFindings = 20
)

// Outcomes of a round, as events and the status say them.
const (
	OutcomeApplied   = "applied"   // stored (created, restored) or unchanged
	OutcomeHeld      = "held"      // a plan with destructive actions, waiting for approval
	OutcomeInvalid   = "invalid"   // validation errors: the findings
	OutcomeRefused   = "refused"   // a rewrite, over the limits, a bad signature
	OutcomeFailed    = "failed"    // fetch or apply failed: retried next round
	OutcomeUnchanged = "unchanged" // the head was handled already (not kept as an event)
)

// Status is what the follower did, kept in the state store.
type Status struct {
	Remote string `json:"remote"` // the URL without credentials
	Branch string `json:"branch"`
	Path   string `json:"path"`
	// LastFetch: the last round's fetch.
	LastFetch *Fetch `json:"last_fetch,omitempty"`
	// Handled is the last head a round decided on (applied, held, invalid
	// or refused): the same head is not handled again.
	Handled string   `json:"handled,omitempty"`
	Applied *Applied `json:"applied,omitempty"`
	Held    *Held    `json:"held,omitempty"`
	// Rejected: the last commit refused or found invalid.
	Rejected *Rejected `json:"rejected,omitempty"`
	Events   []Event   `json:"events"`
}

// Fetch is one fetch.
type Fetch struct {
	Time   time.Time `json:"time"`
	Commit string    `json:"commit,omitempty"`
	Error  string    `json:"error,omitempty"`
}

// Applied is the last commit applied.
type Applied struct {
	Commit   string    `json:"commit"`
	Revision string    `json:"revision"`
	Result   string    `json:"result"` // created, restored, unchanged
	Author   string    `json:"author"`
	Message  string    `json:"message"`
	Time     time.Time `json:"time"`
}

// Held is a commit whose plan has destructive actions, waiting for an
// approval naming it.
type Held struct {
	Commit      string    `json:"commit"`
	Revision    string    `json:"revision"`
	Destructive []string  `json:"destructive"`
	Author      string    `json:"author"`
	Message     string    `json:"message"`
	Time        time.Time `json:"time"`
	// Approval is what the apply takes to apply exactly what Destructive
	// lists; Bindings says that holds a credential binding change.
	Approval string `json:"approval,omitempty"`
	Bindings bool   `json:"bindings,omitempty"`
}

// Rejected is a commit refused or invalid.
type Rejected struct {
	Commit   string    `json:"commit"`
	Outcome  string    `json:"outcome"` // invalid or refused
	Reason   string    `json:"reason"`
	Findings []string  `json:"findings,omitempty"` // file:line: message
	Time     time.Time `json:"time"`
}

// Event is one round's outcome (or an approval's).
type Event struct {
	Time     time.Time `json:"time"`
	Trigger  string    `json:"trigger"` // interval, webhook, start, approve
	Commit   string    `json:"commit,omitempty"`
	Outcome  string    `json:"outcome"`
	Revision string    `json:"revision,omitempty"`
	Reason   string    `json:"reason,omitempty"`
}

// statusStore reads and writes the status record.
type statusStore struct{ rec statestore.KeyedRecords }

func (s statusStore) load(ctx context.Context) (Status, error) {
	var st Status
	b, err := s.rec.Get(ctx, statusColl, statusKey)
	if errors.Is(err, statestore.ErrNoRecord) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("git source status: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("git source status record is unreadable: %w", err)
	}
	return st, nil
}

func (s statusStore) save(ctx context.Context, st Status) error {
	if n := len(st.Events); n > MaxEvents {
		st.Events = append([]Event(nil), st.Events[n-MaxEvents:]...)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	// Not after ctx ends (a replica that lost the leadership must not
	// write over its successor's status): the next round handles the head
	// again, and applying it again changes nothing.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.rec.Write(ctx, statestore.Put(statusColl, statusKey, b)); err != nil {
		return fmt.Errorf("git source status not saved: %w", err)
	}
	return nil
}

// event appends ev (newest last) and bounds the history.
func (st *Status) event(ev Event) {
	st.Events = append(st.Events, ev)
	if n := len(st.Events); n > MaxEvents {
		st.Events = st.Events[n-MaxEvents:]
	}
}
