// Package apitypes holds the control API's wire types: the bodies its
// routes read and answer. The server (package api) and its client
// (api/client) share them, and the OpenAPI document's schemas are derived
// from them, so the three cannot disagree. The package imports neither the
// HTTP framework nor the metrics library nor the server.
package apitypes

import (
	"time"

	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Principal is who a token stands for.
type Principal struct {
	ID   string    `json:"id"`             // token ID (never the token)
	Name string    `json:"name"`           // the token's name
	Role auth.Role `json:"role,omitempty"` // none for an unknown caller (an audit record of a refusal)
}

// TokenInfo describes an API token, without its value: GET /tokens.
type TokenInfo struct {
	Principal
	Created  time.Time `json:"created"`
	LastUsed time.Time `json:"last_used,omitzero"` // zero: never used (recorded at most once a minute)
}

// SecretInfo describes a stored secret, without its value.
type SecretInfo struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created,omitzero"`
	Updated time.Time `json:"updated,omitzero"`
}

// SecretValue is the body of PUT /secrets/{name}.
type SecretValue struct {
	Value string `json:"value"`
}

// SecretStored is the answer of PUT /secrets/{name}.
type SecretStored struct {
	Name   string `json:"name"`
	Status string `json:"status"` // stored
}

// TokenRequest is the body of POST /tokens.
type TokenRequest struct {
	Role auth.Role `json:"role"`
	Name string    `json:"name,omitempty"`
}

// CreatedToken is the answer of POST /tokens: the token's value is shown
// this once.
type CreatedToken struct {
	TokenInfo
	Token string `json:"token"`
}

// Status is the answer of the probes (/healthz, /readyz).
type Status struct {
	Status string `json:"status"` // ok | ready
	// Cluster (readyz, to a caller with a valid token): the replica group
	// as this replica sees it.
	Cluster *Cluster `json:"cluster,omitempty"`
}

// Page wraps a list with its paging.
type Page[T any] struct {
	Items  []T `json:"items"`
	Total  int `json:"total"` // matching items, all pages
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
}

// NodeSummary is one node in a list: its design identity, its
// lifecycle state (deployed, ready, released...: what the workflows that
// own its machine left) and the result of the last task that drove it
// (action, stage, outcome: a power_cycle leaves a deployed node
// deployed, at stage powered).
type NodeSummary struct {
	Name      string            `json:"name"`
	Site      string            `json:"site,omitempty"` // the node's Site in the current design
	Rack      string            `json:"rack,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	Tags      []string          `json:"tags,omitempty"`
	Lifecycle record.Lifecycle  `json:"lifecycle,omitempty"`
	LastTask  string            `json:"last_task,omitempty"`
	Action    record.Action     `json:"action,omitempty"`
	Stage     record.Stage      `json:"stage"`
	Outcome   record.Outcome    `json:"outcome,omitempty"`
	MachineID string            `json:"machine_id,omitempty"`
	Observed  string            `json:"observed,omitempty"`
	Task      string            `json:"task,omitempty"`
	Frozen    bool              `json:"frozen,omitempty"`
	Reason    string            `json:"reason,omitempty"`
	// Orphan: the current design no longer has the node, its machine is
	// still held.
	Orphan bool `json:"orphan,omitempty"`
}

// NodeDetail is one node in full.
type NodeDetail struct {
	Name     string        `json:"name"`
	Revision string        `json:"design_revision"`
	Design   *RenderedNode `json:"design,omitempty"` // nil when the current design lacks the node
	Record   *NodeRecord   `json:"workflow,omitempty"`
	Events   []Event       `json:"events"`
}

// NodeVerbRequest is the optional body of the node verbs
// (mark-manual-intervention, adopt: machine is the provisioner machine to
// attach, e.g. a leaked one).
type NodeVerbRequest struct {
	Reason   string `json:"reason,omitempty"`
	Revision string `json:"design_revision,omitempty"`
	Machine  string `json:"machine,omitempty"`
}

// NodeInventory is what commissioning found on a node's machine, as the
// engine recorded it, with the node's hardware profile in the current
// design (the group `inventory --diff` compares it within).
type NodeInventory struct {
	Node            string    `json:"node"`
	HardwareProfile string    `json:"hardware_profile,omitempty"`
	Inventory       Inventory `json:"inventory"`
}

// TaskRequest is the body of POST /tasks.
type TaskRequest struct {
	Action         record.Action `json:"action"`
	NodeFilter     Filter        `json:"node_filter,omitzero"`
	DesignRevision string        `json:"design_revision,omitempty"`
	// Options: decommission_nodes {erase, delete}, destroy_nodes {erase}.
	Options *TaskOptions `json:"options,omitempty"`
}

// TaskDetail is a task with its per-node results.
type TaskDetail struct {
	Task
	Results []NodeResult `json:"results"`
}

// DriftResolutionBody is the body of a drift resolve.
type DriftResolutionBody struct {
	Kind       record.DriftKind  `json:"kind"`
	Resolution record.Resolution `json:"resolution"`
}

// ValidationResult is the answer of a design validate.
type ValidationResult struct {
	Valid    bool      `json:"valid"`
	Errors   int       `json:"errors"`
	Warnings int       `json:"warnings"`
	Nodes    int       `json:"nodes"`
	Findings []Finding `json:"findings"`
}

// Applied is the answer of a successful design apply.
type Applied struct {
	Revision string    `json:"revision"`
	Result   string    `json:"result"` // created | restored | unchanged
	Warnings []Finding `json:"warnings,omitempty"`
	Diff     *Diff     `json:"diff,omitempty"`
	// LayerTakenOver are the documents (kind/name) of the API-managed
	// layer this upload defines itself: they left the layer. LayerKept
	// counts the layer's documents built over the upload.
	LayerTakenOver []string `json:"layer_taken_over,omitempty"`
	LayerKept      int      `json:"layer_kept,omitempty"`
	// Plan is what applying the revision and then deploying does (stored
	// with it: GET /designs/{rev}/plan); none when unchanged.
	Plan *Plan `json:"plan,omitempty"`
}

// RevisionSummary is one entry of GET /designs: an apply of a revision.
type RevisionSummary struct {
	ID        string    `json:"id"`
	Created   time.Time `json:"created"` // when the content was first stored
	Applied   time.Time `json:"applied"` // when this apply happened
	Roots     []string  `json:"roots"`
	GitCommit string    `json:"git_commit,omitempty"`
	GitDirty  bool      `json:"git_dirty,omitempty"`
	// GitAuthor and GitMessage (its first line) are the commit's, as git
	// sync records them.
	GitAuthor  string `json:"git_author,omitempty"`
	GitMessage string `json:"git_message,omitempty"`
	// Provenance says what the apply said of its origin: "git" (a commit),
	// "roots" (roots but no commit) or "none" (a raw upload that gave
	// neither; its root names the uploader).
	Provenance string         `json:"provenance"`
	Counts     map[string]int `json:"counts"`
	Seq        uint64         `json:"seq"` // position in the history
	// Plan is the plan stored with the revision, in brief (none for a
	// revision applied before plans were kept).
	Plan *PlanSummary `json:"plan,omitempty"`
}

// RevisionInfo is a stored revision without its design bytes (GET
// /designs/{rev}).
type RevisionInfo struct {
	ID         string         `json:"id"`
	Created    time.Time      `json:"created"`
	Roots      []string       `json:"roots"`
	GitCommit  string         `json:"git_commit,omitempty"`
	GitDirty   bool           `json:"git_dirty,omitempty"`
	GitAuthor  string         `json:"git_author,omitempty"`  // as RevisionSummary's
	GitMessage string         `json:"git_message,omitempty"` // as RevisionSummary's
	Provenance string         `json:"provenance"`            // as RevisionSummary's
	Counts     map[string]int `json:"counts"`
	Nodes      []string       `json:"nodes"`
	Plan       *PlanSummary   `json:"plan,omitempty"` // as RevisionSummary's
}

// AuditRecord is one entry of the audit log. Every field is bounded by the
// server (see api.MaxAuditRecordBytes): text is cut and its control
// characters replaced.
type AuditRecord struct {
	Seq       uint64    `json:"seq"`
	Time      time.Time `json:"time"`
	RequestID string    `json:"request_id"` // the server's
	// ClientRequestID is the client's X-Request-Id when it was short and
	// of a safe charset; never echoed.
	ClientRequestID string    `json:"client_request_id,omitempty"`
	Who             Principal `json:"who"`
	Method          string    `json:"method"`
	Route           string    `json:"route"`
	Path            string    `json:"path"`
	Remote          string    `json:"remote"`
	Status          int       `json:"status"`
	Outcome         string    `json:"outcome"` // ok | denied | failed
	Detail          string    `json:"detail,omitempty"`
	// What the call did, besides its route: set by the handlers of the
	// mutating routes, also on a call that failed once the handler knew
	// what it was asked.
	Action      string   `json:"action,omitempty"`
	Verb        string   `json:"verb,omitempty"`
	Task        string   `json:"task,omitempty"`
	Targets     []string `json:"targets,omitempty"`
	TargetCount int      `json:"target_count,omitempty"`
	Resolution  string   `json:"resolution,omitempty"`
	// Suppressed counts the unauthenticated refusals that were not
	// recorded (sampling) since the previous recorded one; only on an
	// unauthenticated refusal's record.
	Suppressed uint64 `json:"suppressed,omitempty"`
}

// AuditPage is a page of the audit log.
type AuditPage struct {
	Items []AuditRecord `json:"items"`
	// Next is the sequence number to pass as ?since= for the next page:
	// the last record's here (the given since when the page is empty).
	Next uint64 `json:"next"`
	// More says the page was cut by the server's record or byte bound, or
	// the limit: more records follow now.
	More bool `json:"more"`
}

// ConsoleInput is the body of POST /nodes/{name}/console/input: characters
// to type at the node's console (attached read-write), as the terminal
// sends them (CR ends a line).
type ConsoleInput struct {
	Data string `json:"data"`
}

// MAASSiteRequest is the body of POST /admin/maas-sites: a new site, its
// MAAS endpoint and API key (write-only: no answer holds it).
type MAASSiteRequest struct {
	Name   string `json:"name"`
	Kind   string `json:"kind,omitempty"` // maas (the default)
	URL    string `json:"url"`
	APIKey string `json:"api_key"`
	Policy Policy `json:"policy,omitzero"`
}

// MAASSitePatch is the body of PATCH /admin/maas-sites/{id}: the fields
// to change (absent: unchanged).
type MAASSitePatch struct {
	Name   *string `json:"name,omitempty"`
	URL    *string `json:"url,omitempty"`
	Status *string `json:"status,omitempty"` // enabled or disabled
	Policy *Policy `json:"policy,omitempty"`
}

// MAASSiteCredentials is the body of POST /admin/maas-sites/{id}/credentials:
// the new API key (write-only).
type MAASSiteCredentials struct {
	APIKey string `json:"api_key"`
}

// MAASSiteProbe is the answer of POST /admin/maas-sites/{id}/probe: what
// the site's provisioner answered, checked with its stored credentials.
type MAASSiteProbe struct {
	Site    string    `json:"site"` // the site's ID
	Name    string    `json:"name"`
	URL     string    `json:"url"`
	Checked time.Time `json:"checked"`
	Info    SiteInfo  `json:"info"`
	// Error says what failed when the provisioner did not answer or
	// refused the credentials ("" when it answered).
	Error string `json:"error,omitempty"`
	// Scripts are the scripts the site's profiles name: whether the
	// site has each, its type and version (nil when no profile names
	// any, or the site's scripts could not be read).
	Scripts []ScriptCheck `json:"scripts,omitempty"`
}

// ScriptCheck is a script (name or tag) site profiles depend on.
type ScriptCheck struct {
	Name     string   `json:"name"`
	Profiles []string `json:"profiles"` // the profiles naming it
	Present  bool     `json:"present"`
	// Matches are the site's scripts it names (itself, or those a tag
	// names), with their types and versions.
	Matches []Script `json:"matches,omitempty"`
}

// RoCEUpsert is the body of POST /admin/maas-sites/{id}/roce-assignments:
// the assignments to store, each replacing the site's assignment of its
// hostname and interface.
type RoCEUpsert struct {
	Items []RoCEItem `json:"items"`
}

// RoCEAssignments is the answer of the RoCE routes.
type RoCEAssignments struct {
	Items []RoCEAssignment `json:"items"`
}

// Workflow is an onboarding or decommission as the workflow routes show
// it: a view of the engine task that carries it (its ID is the task's).
type Workflow struct {
	ID      string       `json:"id"`
	Kind    string       `json:"kind"` // decommission, storage-cleanup
	Nodes   []string     `json:"nodes"`
	Task    Task         `json:"task"`
	Results []NodeResult `json:"results"`
}

// OnboardingRequest is the body of POST /admin/onboardings: one node.
type OnboardingRequest struct {
	SiteID      string            `json:"site_id"`
	ProfileID   string            `json:"profile_id"`
	SKUID       string            `json:"sku_id"`
	HostProfile string            `json:"host_profile,omitempty"`
	Hostname    string            `json:"hostname"`
	IPMIIP      string            `json:"ipmi_ip"`
	Rack        string            `json:"rack,omitempty"`
	Addresses   map[string]string `json:"addresses,omitempty"`
}

// Onboarding is an onboarding workflow: its record (what was asked, the
// revision that added the nodes) and its deploy task, when submitted.
type Onboarding struct {
	ID         string           `json:"id"`
	Onboarding OnboardingRecord `json:"onboarding"`
	Status     string           `json:"status"` // the task's, or "not_submitted"
	Task       *Task            `json:"task,omitempty"`
	Results    []NodeResult     `json:"results"`
}

// DecommissionRequest is the optional body of POST
// /admin/nodes/{id}/decommission and .../storage-cleanup.
type DecommissionRequest struct {
	// Erase is the disk erase policy (none, quick, secure); "" keeps the
	// design's (decommission) or erases securely (storage-cleanup).
	Erase string `json:"erase,omitempty"`
}

// Cluster is the replica group a server is one of (GET /api/v1/cluster,
// and in GET /readyz): every replica answers it, whatever its role.
type Cluster struct {
	Self     Replica      `json:"self"`
	Leader   *LeaderInfo  `json:"leader,omitempty"` // left out: no replica leads now
	Replicas []Replica    `json:"replicas"`
	Store    ClusterStore `json:"store"`
}

// Replica is one serve process of a group.
type Replica struct {
	ID   string `json:"id"`
	Role string `json:"role"` // leader | standby
	// URL is where the replica's control API answers (what standbys
	// forward mutating calls to).
	URL     string    `json:"url,omitempty"`
	Started time.Time `json:"started,omitzero"`
}

// LeaderInfo is the replica that leads: it runs the engine.
type LeaderInfo struct {
	ID    string    `json:"id"`
	URL   string    `json:"url,omitempty"`
	Since time.Time `json:"since"`
}

// NotRunHeader marks a 503 answered before the call ran anywhere (a
// standby with no leader to forward to): safe to send again after
// Retry-After.
const NotRunHeader = "X-Slipway-Not-Run"

// ClusterStore is the state store the replicas share.
type ClusterStore struct {
	Kind      string   `json:"kind"`                // bolt | etcd
	Path      string   `json:"path,omitempty"`      // bolt: the state file
	Endpoints []string `json:"endpoints,omitempty"` // etcd: the client URLs
	Prefix    string   `json:"prefix,omitempty"`    // etcd: the keys' prefix
	// Writable: a write can commit now (etcd: the cluster has quorum).
	Writable bool `json:"writable"`
	// Keys is how many keys the store holds under its prefix (etcd).
	Keys    int64         `json:"keys,omitempty"`
	Members []StoreMember `json:"members,omitempty"`
	// Checked is when the replica last asked etcd for Writable, Keys,
	// Members and the replicas (it asks again when that is over 2 s ago).
	Checked time.Time `json:"checked,omitzero"`
}

// StoreMember is one etcd member as its endpoint answers.
type StoreMember struct {
	Endpoint string `json:"endpoint"`
	Healthy  bool   `json:"healthy"`
	Leader   bool   `json:"leader"` // the etcd cluster's raft leader
	DBSize   int64  `json:"db_size_bytes,omitempty"`
	Error    string `json:"error,omitempty"`
}

// EventSeq is a position in the event log.
type EventSeq struct {
	Seq uint64 `json:"seq"`
}
