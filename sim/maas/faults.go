package maas

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Faults injects failures into the API, reproducibly from a seed.
type Faults struct {
	Seed int64 `json:"seed"`
	// Ops maps "METHOD op" (e.g. "POST deploy", "GET read" for a plain
	// GET, "*" for every request) to what goes wrong there.
	Ops map[string]OpFaults `json:"ops"`
	// Machines maps a hostname to a script of failures for that machine.
	Machines map[string]MachineFaults `json:"machines"`
}

// OpFaults are the failure rates (0..1) and added latency of one op.
type OpFaults struct {
	Error500   float64       `json:"error500"`
	Error503   float64       `json:"error503"`
	RetryAfter int           `json:"retryAfter"` // seconds in the 503's Retry-After
	Error409   float64       `json:"error409"`
	Latency    time.Duration `json:"latency"`
}

// MachineFaults script one machine's failures.
type MachineFaults struct {
	FailCommissioning int  `json:"failCommissioning"` // the first N commissionings fail
	FailDeploy        int  `json:"failDeploy"`        // the first N deployments fail
	HangDeploy        bool `json:"hangDeploy"`        // stay in Deploying until MAAS times it out
	BMCUnreachable    bool `json:"bmcUnreachable"`    // power actions fail
	FailTesting       int  `json:"failTesting"`       // the first N hardware testings fail (Failed testing)
	FailRescue        int  `json:"failRescue"`        // the first N rescue mode entries fail (Failed to enter rescue mode)
	FailErase         int  `json:"failErase"`         // the first N disk erasures fail (Failed disk erasing)
}

// LoadFaults reads a faults file (JSON).
func LoadFaults(path string) (*Faults, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read faults file: %w", err)
	}
	var f Faults
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("faults file %s: %w", path, err)
	}
	return &f, nil
}

// injector draws from the seeded source.
type injector struct {
	mu  sync.Mutex
	rnd *rand.Rand
	f   *Faults
}

func newInjector(f *Faults) *injector {
	if f == nil {
		f = &Faults{}
	}
	return &injector{rnd: rand.New(rand.NewSource(f.Seed)), f: f}
}

// draw decides the fault of one request: an error to answer, and latency.
func (in *injector) draw(method, op string) (*apiError, time.Duration) {
	if len(in.f.Ops) == 0 {
		return nil, 0
	}
	if op == "" {
		op = "read"
	}
	of, ok := in.f.Ops[method+" "+op]
	if !ok {
		of, ok = in.f.Ops["*"]
	}
	if !ok {
		return nil, 0
	}
	in.mu.Lock()
	x := in.rnd.Float64()
	in.mu.Unlock()
	switch {
	case x < of.Error500:
		return errorf(http.StatusInternalServerError, "Internal server error (injected fault)"), of.Latency
	case x < of.Error500+of.Error503:
		ra := of.RetryAfter
		if ra == 0 {
			ra = 1
		}
		e := errorf(http.StatusServiceUnavailable, "Service temporarily unavailable (injected fault)")
		e.retryAfter = ra
		return e, of.Latency
	case x < of.Error500+of.Error503+of.Error409:
		return conflict("Injected conflict: the request conflicts with the current state of the resource"), of.Latency
	}
	return nil, of.Latency
}

func (in *injector) machine(hostname string) MachineFaults {
	return in.f.Machines[hostname]
}
