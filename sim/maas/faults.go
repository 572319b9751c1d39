package maas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
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
	// UploadStall makes the region hang mid-upload (bootres_upload.go).
	UploadStall *UploadStall `json:"uploadStall,omitempty"`
}

// UploadStall: the first Times upload requests (each region counts its
// own; 0 stalls none) that start at AtBytes of their file or past it are
// received, then neither stored nor answered for For, or until their
// client goes away (a region that stops answering mid-upload). Later
// chunks go through as before.
type UploadStall struct {
	AtBytes int64         `json:"atBytes"`
	Times   int           `json:"times"`
	For     time.Duration `json:"for"`
}

// OpFaults are the failure rates (0..1) and added latency of one op.
type OpFaults struct {
	Error500   float64 `json:"error500"`
	Error503   float64 `json:"error503"`
	RetryAfter int     `json:"retryAfter"` // seconds in the 503's Retry-After
	Error409   float64 `json:"error409"`
	// LoseAnswer is the rate of requests carried out whose answer is
	// lost: the connection closes without one (an upload chunk lands and
	// the client cannot know it).
	LoseAnswer float64       `json:"loseAnswer,omitempty"`
	Latency    time.Duration `json:"latency"`
	// AnswerLatency delays the answer of a request already carried out
	// (a region that committed, then answers late): the client sees the
	// change in the API before the answer that names it.
	AnswerLatency time.Duration `json:"answerLatency,omitempty"`
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

	// Hardware faults: the machine is built differently from its design
	// (the lab applies them when it builds the machine; ApplyHardware).
	MissingGPUs  int            `json:"missingGPUs,omitempty"`  // N fewer GPUs than the profile: the highest PCI addresses are gone
	NICSpeedMbps map[string]int `json:"nicSpeedMbps,omitempty"` // device alias -> the link speed it negotiates
	SwapCables   []string       `json:"swapCables,omitempty"`   // two device aliases whose LLDP neighbours are swapped
	Firmware     *FirmwareFault `json:"firmware,omitempty"`     // firmware versions other than the lab's
}

// FirmwareFault sets a machine's firmware versions ("" keeps the lab's).
type FirmwareFault struct {
	BIOS string `json:"bios,omitempty"`
	BMC  string `json:"bmc,omitempty"`
}

// Bounds of a faults file.
const (
	MaxFaultsFileBytes = 4 << 20
	maxFaultEntries    = 100000
	maxFaultString     = 256
	maxNICSpeedMbps    = 1600000
)

// ApplyHardware changes hw as the faults say: it drops the MissingGPUs
// GPUs of highest PCI address, sets the link speed of the NICs named,
// swaps the LLDP neighbours of the two NICs SwapCables names and sets the
// firmware versions. NICs are named by their design device alias.
func (mf MachineFaults) ApplyHardware(hw *Hardware) {
	if n := mf.MissingGPUs; n > 0 && len(hw.GPUs) > 0 {
		gpus := sortedGPUs(hw.GPUs)
		hw.GPUs = gpus[:max(len(gpus)-n, 0)]
	}
	if len(mf.NICSpeedMbps) > 0 || len(mf.SwapCables) == 2 {
		hw.NICs = append([]NIC(nil), hw.NICs...) // hw may share them with another Hardware
	}
	for i := range hw.NICs {
		if sp, ok := mf.NICSpeedMbps[hw.NICs[i].Alias]; ok && hw.NICs[i].Alias != "" {
			hw.NICs[i].SpeedMbps = sp
			hw.NICs[i].MaxMbps = max(hw.NICs[i].MaxMbps, sp)
		}
	}
	if len(mf.SwapCables) == 2 {
		a, b := -1, -1
		for i := range hw.NICs {
			switch hw.NICs[i].Alias {
			case "":
			case mf.SwapCables[0]:
				a = i
			case mf.SwapCables[1]:
				b = i
			}
		}
		if a >= 0 && b >= 0 {
			hw.NICs[a].Neighbor, hw.NICs[b].Neighbor = hw.NICs[b].Neighbor, hw.NICs[a].Neighbor
		}
	}
	if f := mf.Firmware; f != nil {
		if f.BIOS != "" {
			hw.BIOSVersion = f.BIOS
		}
		if f.BMC != "" {
			hw.BMCVersion = f.BMC
		}
	}
}

// LoadFaults reads a faults file (JSON, at most MaxFaultsFileBytes).
func LoadFaults(path string) (*Faults, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read faults file: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, MaxFaultsFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read faults file: %w", err)
	}
	f, err := ParseFaults(b)
	if err != nil {
		return nil, fmt.Errorf("faults file %s: %w", path, err)
	}
	return f, nil
}

// ParseFaults parses and checks a faults file's content: unknown fields,
// trailing data, negative counts, rates outside [0, 1], a swapCables that
// does not name two different aliases and oversized content are errors.
func ParseFaults(b []byte) (*Faults, error) {
	if len(b) > MaxFaultsFileBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxFaultsFileBytes)
	}
	var f Faults
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after the faults object")
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return &f, nil
}

func (f *Faults) check() error {
	if len(f.Ops)+len(f.Machines) > maxFaultEntries {
		return fmt.Errorf("more than %d entries", maxFaultEntries)
	}
	for k, o := range f.Ops {
		for _, r := range []float64{o.Error500, o.Error503, o.Error409, o.LoseAnswer} {
			if !(r >= 0 && r <= 1) {
				return fmt.Errorf("ops[%q]: a rate must be in [0, 1]", k)
			}
		}
		if o.RetryAfter < 0 || o.Latency < 0 || o.AnswerLatency < 0 {
			return fmt.Errorf("ops[%q]: retryAfter, latency and answerLatency must not be negative", k)
		}
	}
	if st := f.UploadStall; st != nil && (st.AtBytes < 0 || st.Times < 0 || st.For <= 0) {
		return fmt.Errorf("uploadStall: atBytes and times must not be negative, and for must be positive")
	}
	for name, m := range f.Machines {
		if len(name) > maxFaultString {
			return fmt.Errorf("machine name longer than %d bytes", maxFaultString)
		}
		if err := m.check(name); err != nil {
			return err
		}
	}
	return nil
}

// check checks the faults of the machine of that name.
func (m MachineFaults) check(name string) error {
	if slices.Min([]int{m.FailCommissioning, m.FailDeploy, m.FailTesting, m.FailRescue, m.FailErase, m.MissingGPUs}) < 0 {
		return fmt.Errorf("machines[%q]: counts must not be negative", name)
	}
	for alias, sp := range m.NICSpeedMbps {
		if !validAlias(alias) || sp <= 0 || sp > maxNICSpeedMbps {
			return fmt.Errorf("machines[%q].nicSpeedMbps[%q]: a device alias and a speed in (0, %d] Mbps", name, alias, maxNICSpeedMbps)
		}
	}
	if sw := m.SwapCables; sw != nil && !validSwap(sw) {
		return fmt.Errorf("machines[%q].swapCables: name two different device aliases", name)
	}
	if fw := m.Firmware; fw != nil && (len(fw.BIOS) > maxFaultString || len(fw.BMC) > maxFaultString) {
		return fmt.Errorf("machines[%q].firmware: versions longer than %d bytes", name, maxFaultString)
	}
	return nil
}

// validSwap: a cable swap names two different device aliases.
func validSwap(sw []string) bool {
	return len(sw) == 2 && sw[0] != sw[1] && validAlias(sw[0]) && validAlias(sw[1])
}

// validAlias: a device alias is non-empty and at most maxFaultString bytes.
func validAlias(a string) bool { return a != "" && len(a) <= maxFaultString }

// Machine returns the faults of the machine of that name (zero: none).
func (f *Faults) Machine(name string) MachineFaults {
	if f == nil {
		return MachineFaults{}
	}
	return f.Machines[name]
}

// injector draws from the seeded source.
type injector struct {
	mu     sync.Mutex
	rnd    *rand.Rand
	f      *Faults
	stalls int          // upload chunks stalled so far
	held   atomic.Int32 // upload chunks stalled now (bootres_upload.go)
}

// stallUpload decides whether a chunk starting at held is stalled, and
// for how long.
func (in *injector) stallUpload(held int64) time.Duration {
	st := in.f.UploadStall
	if st == nil || held < st.AtBytes {
		return 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.stalls >= st.Times {
		return 0
	}
	in.stalls++
	return st.For
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

// ops is the faults of a request's op ("*" when it has none of its own).
func (in *injector) ops(method, op string) OpFaults {
	if op == "" {
		op = "read"
	}
	of, ok := in.f.Ops[method+" "+op]
	if !ok {
		of = in.f.Ops["*"]
	}
	return of
}

// answerLatency is how long a request carried out waits for its answer.
func (in *injector) answerLatency(method, op string) time.Duration {
	return in.ops(method, op).AnswerLatency
}

// loseAnswer decides whether a request carried out loses its answer (a
// draw only for an op with a LoseAnswer rate, so other faults' draws are
// as before).
func (in *injector) loseAnswer(method, op string) bool {
	of := in.ops(method, op)
	if of.LoseAnswer <= 0 {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.rnd.Float64() < of.LoseAnswer
}

// dropAnswer closes the connection without an answer.
func dropAnswer(w http.ResponseWriter) bool {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return false
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

func (in *injector) machine(hostname string) MachineFaults {
	return in.f.Machines[hostname]
}
