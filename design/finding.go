package design

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
)

// Severity of a finding.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Rule IDs, fixed by the site schema contract.
const (
	RuleSchema           = "schema"
	RuleReference        = "reference"
	RuleInheritanceCycle = "inheritance-cycle"
	RuleCIDR             = "cidr"
	RuleVLAN             = "vlan"
	RuleMTU              = "mtu"
	RuleIPInNetwork      = "ip-in-network"
	RuleIPDuplicate      = "ip-duplicate"
	RuleIPRange          = "ip-range"
	RuleTrunking         = "trunking"
	RuleBonding          = "bonding"
	RuleNetworkOnLink    = "network-on-link"
	RuleHostname         = "hostname"
	RuleStorage          = "storage"
	RuleOOB              = "oob"
	RuleSecretRef        = "secret-ref"
	RuleBootAction       = "boot-action"
	RuleMAC              = "mac"
	RuleNoBootAction     = "no-boot-action"
)

// Finding is one problem in a design.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Kind     string   `json:"kind"`
	Name     string   `json:"name"`
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Message  string   `json:"message"`
}

func (f Finding) String() string {
	loc := Pos{File: f.File, Line: f.Line}.String()
	obj := f.Kind
	if f.Name != "" {
		obj += "/" + f.Name
	}
	return fmt.Sprintf("%s: %s %s %s: %s", loc, f.Severity, f.Rule, obj, f.Message)
}

// Findings is a list of findings.
type Findings []Finding

// HasErrors reports whether any finding is an error.
func (fs Findings) HasErrors() bool {
	for _, f := range fs {
		if f.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Count returns the number of errors and warnings.
func (fs Findings) Count() (errors, warnings int) {
	for _, f := range fs {
		if f.Severity == SeverityError {
			errors++
		} else {
			warnings++
		}
	}
	return errors, warnings
}

// Sort orders findings by file and line, then rule, kind, name and message.
func (fs Findings) Sort() {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.Message, b.Message))
	})
}

// report collects findings, folding the copies an inherited problem causes
// in every node that inherits it into one finding.
type report struct {
	scratch []Finding // the decoder's sink, flushed into list
	dropped int       // findings past MaxFindings, counted only
	list    Findings
	seen    map[findingKey]int // index into list
	dups    map[int]int
	// objPos is where each kind/name is first defined: the position of a
	// finding whose value has none of its own (a default, a removed key).
	objPos map[string]Pos
	// docs lists, per file, where each document starts, to find the
	// object a line belongs to.
	docs map[string][]docStart
}

type docStart struct {
	line       int
	kind, name string
}

// owns reports whether file:line lies in a document of kind/name.
func (r *report) owns(kind, name string, p Pos) bool {
	starts := r.docs[p.File]
	i := sort.Search(len(starts), func(i int) bool { return starts[i].line > p.Line })
	return i > 0 && starts[i-1].kind == kind && starts[i-1].name == name
}

type findingKey struct {
	rule, file, message string
	line                int
}

func newReport() *report {
	return &report{seen: map[findingKey]int{}, dups: map[int]int{}, objPos: map[string]Pos{}, docs: map[string][]docStart{}}
}

// MaxFindings bounds the findings of one Build; past it they are counted
// and one last finding says how many were left out. A design with errors
// on every one of 10,000 nodes reports each once (see findings), so only
// a hostile or generated-wrong design comes near it.
const MaxFindings = 10000

func (r *report) add(rule string, sev Severity, kind, name string, pos Pos, format string, args ...any) {
	if len(r.list) >= MaxFindings {
		r.dropped++
		return
	}
	msg := fmt.Sprintf(format, args...)
	if !pos.IsSet() || pos.File == defaultPos.File {
		pos = r.objPos[kind+"/"+name]
	}
	k := findingKey{rule: rule, file: pos.File, line: pos.Line, message: msg}
	if i, ok := r.seen[k]; ok {
		r.dups[i]++
		return
	}
	r.seen[k] = len(r.list)
	r.list = append(r.list, Finding{Rule: rule, Severity: sev, Kind: kind, Name: name,
		File: pos.File, Line: pos.Line, Message: msg})
}

func (r *report) errorf(rule, kind, name string, pos Pos, format string, args ...any) {
	r.add(rule, SeverityError, kind, name, pos, format, args...)
}

func (r *report) warnf(rule, kind, name string, pos Pos, format string, args ...any) {
	r.add(rule, SeverityWarning, kind, name, pos, format, args...)
}

// addAll takes findings produced elsewhere (the decoder, the ingest).
func (r *report) addAll(fs []Finding) {
	for _, f := range fs {
		r.add(f.Rule, f.Severity, f.Kind, f.Name, Pos{File: f.File, Line: f.Line}, "%s", f.Message)
	}
}

func (r *report) flushScratch() {
	r.addAll(r.scratch)
	r.scratch = r.scratch[:0]
}

// findings returns the sorted findings. A finding that several objects
// share (a problem nodes inherit from a host profile) is reported once, for
// the first object that showed it, with the number of others.
func (r *report) findings() Findings {
	for i, n := range r.dups {
		r.list[i].Message += fmt.Sprintf(" (reported once; %d more objects share it)", n)
	}
	if r.dropped > 0 {
		r.list = append(r.list, Finding{Rule: RuleSchema, Severity: SeverityError,
			Message: fmt.Sprintf("%d more findings are not shown: only the first %d are; fix these and validate again", r.dropped, MaxFindings)})
	}
	r.list.Sort()
	return r.list
}
