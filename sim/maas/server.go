package maas

import (
	"context"
	"fmt"
	"math/rand"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
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
	ReleaseTimeout time.Duration // RELEASING fails after this
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
	Deployed(systemID, hostname string, userData []byte)
	// Released is called when a machine was released (and erased).
	Released(systemID, hostname string)
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
}

// Server is the simulator. It is an http.Handler.
type Server struct {
	opts   Options
	dur    Durations
	routes []route
	stats  *Stats
	faults *injector
	log    zerolog.Logger

	mu           sync.Mutex
	rnd          *rand.Rand
	lastID       int
	tokens       map[string]apiUser // token key -> user
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
	sshKeys      map[int]*sshKey
	events       []*event
	bootRes      []*bootResource
	config       map[string]any
	rackID       string
	closed       bool
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
		opts: o, dur: dur, stats: newStats(), faults: newInjector(o.Faults), log: o.Log,
		rnd:      rand.New(rand.NewSource(o.Seed)),
		tokens:   map[string]apiUser{o.APIKey.TokenKey: {name: o.User, creds: o.APIKey, admin: true}},
		machines: map[string]*machine{}, fabrics: map[int]*fabric{}, vlans: map[int]*vlan{},
		subnets: map[int]*subnet{}, ipRanges: map[int]*ipRange{}, spaces: map[int]*space{},
		staticRoutes: map[int]*staticRoute{}, zones: map[string]*zone{}, pools: map[string]*pool{},
		domains: map[string]*domain{}, tags: map[string]*tag{}, sshKeys: map[int]*sshKey{},
		config: map[string]any{
			"maas_name": "slipway-lab", "default_osystem": "ubuntu", "default_distro_series": "jammy",
			"default_min_hwe_kernel": "", "enable_disk_erasing_on_release": false, "node_timeout": 30,
			"commissioning_distro_series": "jammy", "ntp_servers": "", "upstream_dns": "",
		},
	}
	s.zones["default"] = &zone{ID: s.nextID(), Name: "default"}
	s.pools["default"] = &pool{ID: s.nextID(), Name: "default", Description: "Default pool"}
	s.domains[o.Domain] = &domain{ID: 0, Name: o.Domain, Authoritative: true}
	f := &fabric{ID: 0, Name: "fabric-0"}
	s.fabrics[0] = f
	s.vlans[5001] = &vlan{ID: 5001, FabricID: 0, VID: 0, Name: "untagged", MTU: 1500}
	s.rackID = s.newSystemID()
	for _, series := range []string{"jammy", "noble", "focal"} {
		s.bootRes = append(s.bootRes, &bootResource{ID: s.nextID(), Type: "Synced", Name: "ubuntu/" + series,
			Architecture: "amd64/generic", Subarches: "generic,hwe-p,hwe-q,hwe-r,hwe-s,hwe-t,hwe-u,hwe-v,hwe-w,ga-16.04,ga-18.04,ga-20.04,ga-22.04,ga-24.04"})
	}
	s.routesMachines()
	s.routesMisc()
	s.routesNetworking()
	s.routesStorage()
	return s
}

// scale converts a phase duration to wall time.
func (s *Server) scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * s.opts.TimeScale)
}

// Close stops every running phase timer.
func (s *Server) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, m := range s.machines {
		if m.timer != nil {
			m.timer.Stop()
		}
	}
}

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
	form, ferr := parseForm(r)
	op := form.get("op")
	key := r.Method + " " + templateOf(path) + opSuffix(op)
	status := http.StatusOK
	defer func() { s.stats.record(key, status) }()
	fail := func(e *apiError) {
		status = e.status
		e.write(w)
	}
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
	out, herr := fn(s, &request{r: r, params: params, form: form, user: user, op: op})
	if herr != nil {
		fail(herr)
		return
	}
	switch v := out.(type) {
	case nil:
		status = http.StatusNoContent
		w.WriteHeader(status)
	case rawBody:
		w.Header().Set("Content-Type", v.contentType)
		w.WriteHeader(status)
		_, _ = w.Write(v.body)
	default:
		writeJSON(w, status, v)
	}
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
			"ipranges", "spaces", "static-routes", "zones", "resourcepools", "domains", "tags", "sshkeys",
			"boot-resources", "rackcontrollers", "volume-groups", "logical-volumes", "devices":
			segs[i] = "{" + strings.TrimSuffix(segs[i-1], "s") + "}"
			_ = sgm
		}
	}
	return "/" + strings.Join(segs, "/") + "/"
}

// parseForm merges the query string and a urlencoded or multipart body.
func parseForm(r *http.Request) (formValues, *apiError) {
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
		if err := r.ParseMultipartForm(32 << 20); err != nil {
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
				_, _ = f.Read(buf)
				f.Close()
				out[k] = append(out[k], string(buf))
			}
		}
	case "application/x-www-form-urlencoded", "":
		if err := r.ParseForm(); err != nil {
			return nil, errorf(http.StatusBadRequest, "Invalid form body: %v", err)
		}
		for k, v := range r.PostForm {
			out[k] = append(out[k], v...)
		}
	}
	return out, nil
}

// addEvent records an event (GET /events/?op=query).
func (s *Server) addEvent(m *machine, typ, level, desc string) {
	s.events = append(s.events, &event{ID: len(s.events) + 1, SystemID: m.SystemID, Hostname: m.Hostname,
		Type: typ, Level: level, Description: desc, Created: time.Now()})
}

func sortedMachines(ms map[string]*machine) []*machine {
	out := make([]*machine, 0, len(ms))
	for _, m := range ms {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SystemID < out[j].SystemID })
	return out
}

var _ = url.Values{}
var _ = fmt.Sprintf
