package apitypes

import "time"

// GitStatus is what the git source did (GET /git/status): the remote
// (never its credentials), the last fetch, the last commit applied, the
// one held for approval, the last refused or invalid and recent events.
type GitStatus struct {
	Remote    string       `json:"remote"`
	Branch    string       `json:"branch"`
	Path      string       `json:"path"`
	LastFetch *GitFetch    `json:"last_fetch,omitempty"`
	Applied   *GitApplied  `json:"applied,omitempty"`
	Held      *GitHeld     `json:"held,omitempty"`
	Rejected  *GitRejected `json:"rejected,omitempty"`
	Events    []GitEvent   `json:"events"` // oldest first, the last 50
}

// GitFetch is the last fetch: the head it found, or why it failed.
type GitFetch struct {
	Time   time.Time `json:"time"`
	Commit string    `json:"commit,omitempty"`
	Error  string    `json:"error,omitempty"`
}

// GitApplied is the last commit applied and its revision.
type GitApplied struct {
	Commit   string    `json:"commit"`
	Revision string    `json:"revision"`
	Result   string    `json:"result"` // created, restored, unchanged
	Author   string    `json:"author"`
	Message  string    `json:"message"`
	Time     time.Time `json:"time"`
}

// GitHeld is a commit whose plan has destructive actions, applied only
// when approved (POST /git/approve naming it).
type GitHeld struct {
	Commit      string    `json:"commit"`
	Revision    string    `json:"revision"`
	Destructive []string  `json:"destructive"`
	Author      string    `json:"author"`
	Message     string    `json:"message"`
	Time        time.Time `json:"time"`
	// AdminApproves: the commit changes credential bindings, so only an
	// admin may approve it (POST /git/approve answers an operator 403).
	AdminApproves bool `json:"admin_approves,omitempty"`
}

// GitRejected is the last commit refused (history rewrite, over the size
// limits, signature) or invalid (findings, file:line: message).
type GitRejected struct {
	Commit   string    `json:"commit"`
	Outcome  string    `json:"outcome"`
	Reason   string    `json:"reason"`
	Findings []string  `json:"findings,omitempty"`
	Time     time.Time `json:"time"`
}

// GitEvent is one round's (or approval's) outcome: applied, held,
// invalid, refused or failed (retried at the next round).
type GitEvent struct {
	Time     time.Time `json:"time"`
	Trigger  string    `json:"trigger"` // start, interval, webhook, approve
	Commit   string    `json:"commit,omitempty"`
	Outcome  string    `json:"outcome"`
	Revision string    `json:"revision,omitempty"`
	Reason   string    `json:"reason,omitempty"`
}

// GitApproval names the held commit to apply (POST /git/approve).
type GitApproval struct {
	Commit string `json:"commit"` // its ID, or a prefix of at least 7 hex digits
}

// GitWebhookAnswer says what a verified webhook delivery did.
type GitWebhookAnswer struct {
	Status  string `json:"status"` // started, ignored, handled
	Message string `json:"message"`
}
