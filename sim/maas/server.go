package maas

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/internal/jsonenc"
)

// Version is the MAAS version the simulator reports.
const Version = "3.4.0"

// Durations of the machine phases at TimeScale 1, close to a real site.
var DefaultDurations = Durations{
	PowerCycle:     30 * time.Second,
	Enlist:         3 * time.Minute,
	Commission:     5 * time.Minute,
	Deploy:         8 * time.Minute,
	Release:        1 * time.Minute,
	Erase:          4 * time.Minute,
	NodeTimeout:    30 * time.Minute,
	ReleaseTimeout: 5 * time.Minute,
	Rescue:         2 * time.Minute,
	Test:           6 * time.Minute,
	EraseQuick:     30 * time.Second,
	EraseSecure:    90 * time.Second,
}

// Durations of the phases a machine goes through.
type Durations struct {
	PowerCycle     time.Duration
	Enlist         time.Duration
	Commission     time.Duration
	Deploy         time.Duration
	Release        time.Duration
	Erase          time.Duration
	NodeTimeout    time.Duration // COMMISSIONING, DEPLOYING, TESTING fail after this
	ReleaseTimeout time.Duration // RELEASING (and EXITING_RESCUE_MODE) fail after this
	// The phases of recovery (recovery.go). Zero takes DefaultDurations'
	// (a Durations written before they existed keeps working).
	Rescue      time.Duration // ENTERING_RESCUE_MODE: PXE-boot the rescue environment
	Test        time.Duration // TESTING: the hardware tests
	EraseQuick  time.Duration // DISK_ERASING with quick_erase (Erase is the full overwrite)
	EraseSecure time.Duration // DISK_ERASING with secure_erase (the lab's disks have it)
	// Import is how long boot-resources?op=import takes to make the
	// selected images complete (bootsrc_api.go); zero: DefaultImportDuration.
	Import time.Duration
	// RegionSync is how long the other region controllers take to copy an
	// uploaded file once its last byte arrived (bootres_regions.go); zero:
	// DefaultRegionSync.
	RegionSync time.Duration
}

// or returns d, or def when d is zero.
func or(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// IdealDeploySeconds is the wall time, in seconds, one machine needs in
// this simulator (with sim/lab's machines) from being powered on to boot
// from PXE to Deployed, at unlimited concurrency: the sum of the phases it
// waits through, scaled like the simulator scales them (timeScale <= 0
// counts as 1, as in New):
//
//   - d.Enlist: a machine MAAS does not know PXE-boots and enlists itself
//     (New) after the enlistment time (sim/lab pxeBoot; the lab schedules
//     it with DefaultDurations.Enlist, and its simulator runs with
//     DefaultDurations, so d is DefaultDurations there).
//   - d.Commission: commission runs from New to Ready (startCommission).
//   - d.Deploy: deploy runs from Allocated to Deployed (startDeploy);
//     allocating takes no time.
//
// d.PowerCycle is no term: the simulator's power actions (the power cycle
// that PXE-boots commissioning and deployment, the power off after
// commissioning) take effect at once, and nothing waits on d.PowerCycle.
// Release, Erase and the timeouts do not apply to a first deployment that
// succeeds. Request latency and the client's polling interval come on top.
//
// It is no lower bound of a deployment: a machine created with its boot
// MAC never waits d.Enlist, and the boot of the deployed OS before its
// node agent reports (sim/lab's BootDelay) is not counted. The demo
// reports sim/lab's Timeline.Floor instead, from the phases each machine
// did wait.
func IdealDeploySeconds(d Durations, timeScale float64) float64 {
	if timeScale <= 0 {
		timeScale = 1
	}
	return (d.Enlist + d.Commission + d.Deploy).Seconds() * timeScale
}

// PowerDriver is how the simulator acts on a machine's BMC (real MAAS runs
// its power drivers; the lab's talks to the simulated machines).
type PowerDriver interface {
	Power(ctx context.Context, params PowerParams, action string) (state string, err error) // action: on | off | cycle | query
	SetBootDevice(ctx context.Context, params PowerParams, dev string) error
}

// MachineHooks let the lab follow what MAAS does to a machine.
type MachineHooks interface {
	// Deployed is called when a machine finished deploying: the OS runs
	// and receives its user data.
	Deployed(systemID string, macs []string, userData []byte)
	// Released is called when a machine was released (and erased).
	Released(systemID string, macs []string)
}

// Options configure a simulator.
type Options struct {
	APIKey    Credentials // the admin user's key
	User      string      // the admin user's name (default "admin")
	Domain    string      // default DNS domain (default "maas")
	TimeScale float64     // multiplies every duration (default 1)
	Durations *Durations  // default DefaultDurations
	Faults    *Faults
	Seed      int64 // for system IDs and the like
	Power     PowerDriver
	Hooks     MachineHooks
	// Inventory finds the simulated hardware behind a MAC (nil: machines
	// have no hardware to discover beyond their MACs).
	Inventory func(mac string) *Hardware
	Log       zerolog.Logger
	// ImageDir holds uploaded boot resource content ("": a temporary
	// directory, removed at Close); MaxImageBytes bounds one uploaded file
	// (0: DefaultMaxImageBytes). See bootres_store.go.
	ImageDir      string
	MaxImageBytes int64
	// RegionControllers is how many region controllers the MAAS has (0:
	// one). An uploaded file is complete only once every region holds it:
	// the others copy it Durations.RegionSync after its last byte
	// (bootres_regions.go).
	RegionControllers int
	// UserKey, when set, is a second, non-admin user's API key (named
	// "user"): what MAAS reserves for admins answers it 403.
	UserKey Credentials
}

// Server is the simulator. It is an http.Handler.
type Server struct {
	opts   Options
	dur    Durations
	routes []route
	stats  *Stats
	faults *injector
	log    zerolog.Logger
	// beforeStatus, when set (tests), runs after a request's handler has
	// answered and before its status is counted.
	beforeStatus func()
	// freshRender, set under the lock, renders a machine's parts anew
	// instead of taking them from its cache (render_parts.go).
	freshRender bool

	mu           sync.RWMutex // shared_reads.go
	rnd          *rand.Rand
	lastID       int
	tokens       map[string]apiUser // token key -> user; set in New, only read after (checkOAuth reads it without the lock)
	machines     map[string]*machine
	fabrics      map[int]*fabric
	vlans        map[int]*vlan
	subnets      map[int]*subnet
	ipRanges     map[int]*ipRange
	spaces       map[int]*space
	staticRoutes map[int]*staticRoute
	zones        map[string]*zone
	pools        map[string]*pool
	domains      map[string]*domain
	tags         map[string]*tag
	scripts      map[string]*script // scripts_api.go
	sshKeys      map[int]*sshKey
	events       eventLog // events.go
	// holdNext, heldEvents: HoldStatusEvents (events.go).
	holdNext   map[string]bool
	heldEvents []int
	bootRes    []*bootResource
	img        imageState // bootres_store.go, bootsrc_api.go
	config     map[string]any
	rackID     string
	closed     bool
	stopped    chan struct{}                // closed by Close: a held answer ends (bootres_upload.go)
	lifecycle  map[string]*MachineLifecycle // by system ID (lifecycleOf)

	listingDomainCounts map[string]int        // machines per domain, while a listing renders (beginListing)
	domainCounts        map[string]int        // machines per domain (domainCount); nil when a machine came, went or moved
	needleOf, needle    string                // the last macNeedleOf
	tagsJSON            rawJSON               // GET /tags/'s answer; nil when a tag came, changed or went
	ipIdx               map[netip.Addr]int    // links holding each address (ipindex.go)
	ipIdxShared         uint64                // sharedRev when ipIdx was built
	ipDirty             []*machine            // touched since their addresses were indexed
	macMachines         map[string][]*machine // by lower-case MAC (ipindex.go)
	hostMachines        map[string][]*machine // by hostname (ipindex.go)
	// jsonMu guards vlanJSONs and subnetJSONs, which renderings under the
	// read lock fill too (shared_reads.go).
	jsonMu      sync.Mutex
	vlanJSONs   map[int]*vlanJSON   // each VLAN's JSON as last rendered (render_shared.go)
	subnetJSONs map[int]*subnetJSON // each subnet's JSON as last rendered (render_shared.go)

	// The MAC index (machineWithMAC), and the write requests it must not
	// miss: completed, and in flight.
	macIdx         map[string]*machine
	macIdxGen      uint64
	writes         atomic.Uint64
	writesInFlight atomic.Int64

	// The listing cache (listing.go): sharedRev counts the completed
	// writes that are not scoped to one machine, sharedWrites those in
	// flight.
	sharedRev    atomic.Uint64
	sharedWrites atomic.Int64

	// sharedReads counts the reads answered under the read lock
	// (shared_reads.go).
	sharedReads atomic.Uint64
}

// New returns a simulator with a default zone, pool, domain, fabric and
// boot resources, like a freshly installed region.
func New(o Options) *Server {
	if o.User == "" {
		o.User = "admin"
	}
	if o.Domain == "" {
		o.Domain = "maas"
	}
	if o.TimeScale <= 0 {
		o.TimeScale = 1
	}
	dur := DefaultDurations
	if o.Durations != nil {
		dur = *o.Durations
	}
	s := &Server{
		opts: o, dur: dur, stats: newStats(), faults: newInjector(o.Faults), log: o.Log, stopped: make(chan struct{}),
		rnd:      rand.New(rand.NewSource(o.Seed)),
		tokens:   map[string]apiUser{o.APIKey.TokenKey: {name: o.User, creds: o.APIKey, admin: true}},
		machines: map[string]*machine{}, fabrics: map[int]*fabric{}, vlans: map[int]*vlan{},
		subnets: map[int]*subnet{}, ipRanges: map[int]*ipRange{}, spaces: map[int]*space{},
		staticRoutes: map[int]*staticRoute{}, zones: map[string]*zone{}, pools: map[string]*pool{},
		domains: map[string]*domain{}, tags: map[string]*tag{}, sshKeys: map[int]*sshKey{},
		lifecycle: map[string]*MachineLifecycle{},
		config: map[string]any{
			"maas_name": "slipway-lab", "default_osystem": "ubuntu", "default_distro_series": "jammy",
			"default_min_hwe_kernel": "", "enable_disk_erasing_on_release": false, "node_timeout": 30,
			"disk_erase_with_quick_erase": false, "disk_erase_with_secure_erase": false,
			"commissioning_distro_series": "jammy", "ntp_servers": "", "upstream_dns": "", "default_storage_layout": "flat",
		},
	}
	if o.UserKey.TokenKey != "" && o.UserKey.TokenKey != o.APIKey.TokenKey {
		s.tokens[o.UserKey.TokenKey] = apiUser{name: "user", creds: o.UserKey} // bootres_rights.go
	}
	s.zones["default"] = &zone{ID: s.nextID(), Name: "default"}
	s.pools["default"] = &pool{ID: s.nextID(), Name: "default", Description: "Default pool"}
	s.domains[o.Domain] = &domain{ID: 0, Name: o.Domain, Authoritative: true}
	f := &fabric{ID: 0, Name: "fabric-0"}
	s.fabrics[0] = f
	s.vlans[5001] = &vlan{ID: 5001, FabricID: 0, VID: 0, Name: "untagged", MTU: 1500}
	s.rackID = s.newSystemID()
	s.bootRes = defaultBootResources(s.nextID)
	s.img.sources = []*bootSource{defaultBootSource(&s.img)}
	s.scripts = defaultScripts(s.nextID)
	s.routesMachines()
	s.routesMisc()
	s.routesNetworking()
	s.routesStorage()
	s.routesScripts()
	s.routesBootResources()
	s.routesBootSources()
	s.routesRegions()
	return s
}

// SetDurations changes the phase durations of a running simulator; a
// phase already under way keeps its length.
func (s *Server) SetDurations(f func(*Durations)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.dur)
}

// scale converts a phase duration to wall time.
func (s *Server) scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * s.opts.TimeScale)
}

// Close stops every running phase timer.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		close(s.stopped)
	}
	s.closed = true
	s.closeImages()
	for _, m := range s.machines {
		if m.timer != nil {
			m.timer.Stop()
		}
	}
}

// APIKey is the admin user's API key.
func (s *Server) APIKey() Credentials { return s.opts.APIKey }

// Stats returns the request counters.
func (s *Server) Stats() *Stats { return s.stats }

// ServeHTTP answers the API and /sim/stats.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/sim/stats" || r.URL.Path == "/sim/stats/" {
		s.serveStats(w, r)
		return
	}
	if !strings.HasPrefix(r.URL.Path, APIPrefix+"/") {
		errorf(http.StatusNotFound, "Not Found").write(w)
		return
	}
	path := strings.TrimPrefix(r.URL.Path, APIPrefix)
	if !strings.HasSuffix(path, "/") {
		path += "/"
	}
	form, ferr := parseForm(r, s.maxImageBytes()+1<<20) // a multipart body may carry an image (bootres_api.go)
	op := form.get("op")
	key := r.Method + " " + templateOf(path) + opSuffix(op)
	status := http.StatusOK
	s.stats.arrived(key)
	defer func() {
		if s.beforeStatus != nil {
			s.beforeStatus()
		}
		s.stats.answered(status)
	}()
	fail := func(e *apiError) { status = failWith(w, r, e) }
	if ferr != nil {
		fail(ferr)
		return
	}
	user, aerr := s.checkOAuth(r)
	if aerr != nil && !(path == "/version/" && r.Method == http.MethodGet) {
		fail(aerr)
		return
	}
	injected, latency := s.faults.draw(r.Method, op)
	if latency > 0 {
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return
		}
	}
	if injected != nil {
		fail(injected)
		return
	}
	fn, params, merr := s.match(r.Method, path, op)
	if merr != nil {
		fail(merr)
		return
	}
	if r.Method != http.MethodGet {
		defer s.beginWrite(key, params)()
	}
	out, herr := fn(s, &request{r: r, params: params, form: form, user: user, op: op})
	if herr != nil {
		fail(herr)
		return
	}
	if !s.answerLate(r, op) {
		status = 0 // the client went away while the answer waited
		return
	}
	if s.faults.loseAnswer(r.Method, op) && dropAnswer(w) { // faults.go
		status = 0
		return
	}
	status = writeAnswer(w, out)
}

// failWith answers e and returns its status, unless the client went away
// (then nothing is sent: status 0).
func failWith(w http.ResponseWriter, r *http.Request, e *apiError) int {
	if r.Context().Err() != nil {
		return 0
	}
	e.write(w)
	return e.status
}

// answerLate waits the injected answer latency of a request carried out;
// false when the client went away meanwhile.
func (s *Server) answerLate(r *http.Request, op string) bool {
	d := s.faults.answerLatency(r.Method, op)
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

// beginWrite counts a write request in flight, and one that may change
// what any machine renders (no system_id, not one of oneMachineWrites:
// see listing.go) as a shared write; the returned func ends it.
func (s *Server) beginWrite(key string, params map[string]string) (end func()) {
	s.writesInFlight.Add(1)
	shared := params["system_id"] == "" && !oneMachineWrites[key]
	if shared {
		s.sharedWrites.Add(1)
	}
	return func() {
		if shared { // in this order: see cachedMachine
			s.sharedRev.Add(1)
			s.sharedWrites.Add(-1)
		}
		s.writes.Add(1) // in this order: see machineWithMAC
		s.writesInFlight.Add(-1)
	}
}

// writeAnswer writes a handler's answer and returns its status: nil is 204
// No Content, a rawBody goes as it is, anything else as JSON.
func writeAnswer(w http.ResponseWriter, out any) int {
	status := http.StatusOK
	switch v := out.(type) {
	case nil:
		status = http.StatusNoContent
		w.WriteHeader(status)
	case created:
		writeAnswer(&statusWriter{ResponseWriter: w, status: http.StatusCreated}, v.body)
		return http.StatusCreated
	case rawBody:
		w.Header().Set("Content-Type", v.contentType)
		w.WriteHeader(status)
		_, _ = w.Write(v.body)
	case pooledJSON:
		*v.buf = append(*v.buf, '\n')
		setJSONHeaders(w, len(*v.buf))
		w.WriteHeader(status)
		_, _ = w.Write(*v.buf)
		v.release()
	default:
		buf := jsonBuffers.Get().(*[]byte)
		body, err := appendJSON((*buf)[:0], v)
		if err != nil { // what appendJSON does not know: encoding/json decides
			writeJSON(w, status, v)
			return status
		}
		body = append(body, '\n')
		setJSONHeaders(w, len(body))
		w.WriteHeader(status)
		_, _ = w.Write(body)
		if cap(body) <= 64<<20 {
			*buf = body
			jsonBuffers.Put(buf)
		}
	}
	return status
}

// setJSONHeaders names a JSON answer's type and length, as MAAS's
// Django does: with the length known, net/http sends the body as it is,
// not in chunks (an answer over 2 KiB went chunked).
func setJSONHeaders(w http.ResponseWriter, n int) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(n)}
}

var jsonContentType = []string{"application/json; charset=utf-8"}

// jsonBuffers recycles response buffers (a read of 1,000 machines is 10
// MiB).
var jsonBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// appendJSON encodes v exactly as encoding/json does (map keys sorted,
// strings HTML-escaped, nil maps and slices as null) but without
// reflection for the maps, slices and scalars the renderers build: a read
// of 1,000 machines is some 400,000 map entries, and encoding/json's
// reflective map encoding was most of its cost. Other types go through
// encoding/json.
func appendJSON(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case rawJSON:
		return append(b, x...), nil
	case string:
		return jsonenc.AppendString(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case float64:
		return appendJSONFloat(b, x)
	case map[string]any:
		return appendJSONObject(b, x)
	case []any:
		return appendJSONArray(b, x)
	case []string:
		return appendJSONStrings(b, x), nil
	case map[string]string:
		return appendJSONStringMap(b, x), nil
	}
	j, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, j...), nil
}

func appendJSONObject(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, '{')
	for i, k := range sortedKeysOf(m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonenc.AppendString(b, k), ':')
		if b, err = appendJSON(b, m[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendJSONArray(b []byte, list []any) ([]byte, error) {
	if list == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, '[')
	for i, e := range list {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendJSON(b, e); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

func appendJSONStrings(b []byte, list []string) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, e := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, e)
	}
	return append(b, ']')
}

func appendJSONStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(jsonenc.AppendString(b, k), ':')
		b = jsonenc.AppendString(b, m[k])
	}
	return append(b, '}')
}

// keyOrders remembers the sorted keys of the maps the renderers build, a
// few per map size: every machine's map has the same keys, every
// interface's, and sorting them again was a fifth of a large read.
var keyOrders [128][4]atomic.Pointer[[]string]

var keyOrderNext atomic.Uint32

// sortedKeysOf returns the keys of x in order, from keyOrders when a
// remembered key set of the same size is all in x (then it is x's key set).
func sortedKeysOf(x map[string]any) []string {
	n := len(x)
	if n < len(keyOrders) {
	candidates:
		for i := range keyOrders[n] {
			p := keyOrders[n][i].Load()
			if p == nil {
				continue
			}
			for _, k := range *p {
				if _, ok := x[k]; !ok {
					continue candidates
				}
			}
			return *p
		}
	}
	keys := make([]string, 0, n)
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if n < len(keyOrders) {
		keyOrders[n][keyOrderNext.Add(1)%uint32(len(keyOrders[n]))].Store(&keys)
	}
	return keys
}

// appendJSONFloat is encoding/json's float64 format.
func appendJSONFloat(b []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, fmt.Errorf("json: unsupported value: %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// rawBody is a non-JSON answer (BSON details, plain text).
type rawBody struct {
	contentType string
	body        []byte
}

func opSuffix(op string) string {
	if op == "" {
		return ""
	}
	return "?op=" + op
}

// templateOf replaces IDs in a path with placeholders, for the stats.
func templateOf(path string) string {
	segs := split(path)
	for i, sgm := range segs {
		if i == 0 {
			continue
		}
		switch segs[i-1] {
		case "machines", "nodes", "interfaces", "blockdevices", "partitions", "fabrics", "vlans", "subnets",
			"ipranges", "spaces", "static-routes", "zones", "resourcepools", "resourcepool", "domains", "tags", "sshkeys",
			"boot-resources", "rackcontrollers", "volume-groups", "logical-volumes", "devices",
			"partition", "volume-group", "boot-sources", "selections", "upload":
			segs[i] = "{" + strings.TrimSuffix(segs[i-1], "s") + "}"
			_ = sgm
		}
	}
	return "/" + strings.Join(segs, "/") + "/"
}

// parseForm merges the query string and a urlencoded or multipart body;
// a multipart body is bounded by maxMultipart bytes.
func parseForm(r *http.Request, maxMultipart int64) (formValues, *apiError) {
	out := formValues{}
	for k, v := range r.URL.Query() {
		out[k] = append(out[k], v...)
	}
	if r.Method == http.MethodGet || r.Body == nil {
		return out, nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		r.Body = http.MaxBytesReader(nil, r.Body, maxMultipart)
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, errorf(http.StatusBadRequest, "The multipart body is over the lab's bound of %d bytes.", mbe.Limit)
			}
			return nil, errorf(http.StatusBadRequest, "Invalid multipart body: %v", err)
		}
		for k, v := range r.MultipartForm.Value {
			out[k] = append(out[k], v...)
		}
		for k, fhs := range r.MultipartForm.File {
			for _, fh := range fhs {
				f, err := fh.Open()
				if err != nil {
					continue
				}
				buf := make([]byte, fh.Size)
				_, _ = io.ReadFull(f, buf)
				f.Close()
				out[k] = append(out[k], string(buf))
			}
		}
	case "application/x-www-form-urlencoded":
		body, err := readForm(r)
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "Invalid form body: %v", err)
		}
		vs, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, errorf(http.StatusBadRequest, "Invalid form body: %v", err)
		}
		for k, v := range vs {
			if len(body) > pinnedBodyBytes {
				v = unpinned(v)
			}
			out[k] = append(out[k], v...)
		}
	}
	return out, nil
}

// maxFormBytes bounds a form body, as net/http's ParseForm does.
const maxFormBytes = 10 << 20

// readForm reads a form body, at most maxFormBytes: into a buffer of its
// announced length when it has one (net/http's ParseForm grows one from
// 512 bytes: a deploy's 10 KB were five buffers).
func readForm(r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n >= 0 && n <= maxFormBytes {
		buf := make([]byte, n) // net/http's body ends at the Content-Length
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxFormBytes+1))
	if err == nil && len(b) > maxFormBytes {
		err = errors.New("http: POST too large")
	}
	return b, err
}

// pinnedBodyBytes: a form body over this size has its values copied.
// url.ParseQuery makes every value that needs no unescaping a substring of
// the body, so one short value a machine keeps (a deploy's hwe_kernel or
// agent_name) held the whole body, its user data with it: 10 KB a
// machine, 100 MB of a 10,000-node rollout's heap.
const pinnedBodyBytes = 4 << 10

// unpinned is vs with each value copied out of the body it was cut from.
func unpinned(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strings.Clone(v)
	}
	return out
}

func sortedMachines(ms map[string]*machine) []*machine {
	out := make([]*machine, 0, len(ms))
	for _, m := range ms {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SystemID < out[j].SystemID })
	return out
}
