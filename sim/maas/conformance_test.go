package maas

// Conformance with the real MAAS clients: github.com/juju/gomaasapi/v2 (Juju)
// and github.com/canonical/gomaasclient (behind MAAS's Terraform provider)
// drive the simulator through whole machine lifecycles over HTTP, and every
// answer must decode into their types with the fields they depend on.
//
// Networking and storage are served by networking_api.go and storage_api.go.
// No test skips: a request the simulator does not route (404 Not Found, or
// 400 Unrecognised signature) fails, naming the endpoint and what a real
// MAAS answers.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/canonical/gomaasclient/client"
	"github.com/canonical/gomaasclient/entity"
	"github.com/canonical/gomaasclient/entity/node"
	"github.com/juju/gomaasapi/v2"
)

// ---------------------------------------------------------------------------
// The lab the tests run against.

var labCreds = Credentials{"ck", "tk", "ts"}

// labTimeScale and labDurations make every phase last milliseconds.
const labTimeScale = 0.001

func labDurations() *Durations {
	return &Durations{
		PowerCycle:     time.Second,      // 1 ms
		Enlist:         time.Second,      // 1 ms
		Commission:     5 * time.Second,  // 5 ms
		Deploy:         5 * time.Second,  // 5 ms
		Release:        2 * time.Second,  // 2 ms
		Erase:          3 * time.Second,  // 3 ms
		NodeTimeout:    60 * time.Second, // 60 ms
		ReleaseTimeout: 60 * time.Second, // 60 ms
		Rescue:         5 * time.Second,  // 5 ms
		Test:           5 * time.Second,  // 5 ms
		EraseQuick:     time.Second,      // 1 ms
		EraseSecure:    2 * time.Second,  // 2 ms
	}
}

// labWait bounds every poll; generous for the race detector.
const labWait = 10 * time.Second

// simLab is a simulator behind httptest, with hardware behind its MACs and
// hooks that record what the lab would see.
type simLab struct {
	tb    testing.TB
	s     *Server
	hs    *httptest.Server
	hooks *hookRecorder
	hw    map[string]*Hardware // by lower-case MAC
}

func newSimLab(tb testing.TB, mod func(*Options)) *simLab {
	tb.Helper()
	l := &simLab{tb: tb, hooks: newHookRecorder(), hw: map[string]*Hardware{}}
	for i := 1; i <= 8; i++ {
		h := labHardware(i)
		for _, n := range h.NICs {
			l.hw[strings.ToLower(n.MAC)] = h
		}
	}
	o := Options{APIKey: labCreds, TimeScale: labTimeScale, Durations: labDurations(), Seed: 7, Hooks: l.hooks,
		Inventory: func(mac string) *Hardware { return l.hw[strings.ToLower(mac)] }}
	if mod != nil {
		mod(&o)
	}
	l.s = New(o)
	// These tests build storage by hand, so commissioning leaves the disks
	// bare, as on a region configured with default_storage_layout=blank.
	// (The default, flat, is covered by the storage tests.)
	l.s.config["default_storage_layout"] = "blank"
	l.hs = httptest.NewServer(l.s)
	tb.Cleanup(func() {
		l.hs.Close()
		l.s.Close()
	})
	return l
}

// labHardware is the i-th simulated server: two NICs on two lab networks,
// a SATA SSD and an NVMe drive.
func labHardware(i int) *Hardware {
	return &Hardware{
		Arch: "amd64/generic", CPUs: 16, MemoryMiB: 65536, Vendor: "Dell Inc.", Product: "PowerEdge R650",
		NICs: []NIC{
			{MAC: labMAC(i, 1), PCI: "0000:3b:00.0", Name: "ens3f0", Network: "prov", Vendor: "Intel Corporation", Product: "Ethernet Controller X710 for 10GbE SFP+"},
			{MAC: labMAC(i, 2), PCI: "0000:3b:00.1", Name: "ens3f1", Network: "data", Vendor: "Intel Corporation", Product: "Ethernet Controller X710 for 10GbE SFP+"},
		},
		Disks: []Disk{
			{Name: "sda", Bus: "scsi", Addr: "2:0:0:0", Size: 480_103_981_056, Model: "MZ7LH480HAHQ0D3", Serial: fmt.Sprintf("S45PNA0M%04d", i)},
			{Name: "nvme0n1", Bus: "nvme", Addr: "0000:5e:00.0", Size: 1_600_321_314_816, Model: "Dell Ent NVMe P5600 MU U.2 1.6TB", Serial: fmt.Sprintf("PHAB%04d", i)},
		},
	}
}

func labMAC(i, port int) string { return fmt.Sprintf("52:54:00:%02x:%02x:%02x", i>>8, i&0xff, port) }

// hookRecorder records the MachineHooks calls.
type hookRecorder struct {
	mu       sync.Mutex
	userData map[string][]byte
	released map[string]int
}

func newHookRecorder() *hookRecorder {
	return &hookRecorder{userData: map[string][]byte{}, released: map[string]int{}}
}

func (h *hookRecorder) Deployed(id string, _ []string, ud []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.userData[id] = ud
}

func (h *hookRecorder) Released(id string, _ []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released[id]++
}

func (h *hookRecorder) deployedWith(id string) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ud, ok := h.userData[id]
	return ud, ok
}

func (h *hookRecorder) releases(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.released[id]
}

// oauthHeader is the PLAINTEXT Authorization header MAAS clients send.
func oauthHeader(c Credentials) string {
	return fmt.Sprintf(`OAuth realm="", oauth_consumer_key="%s", oauth_token="%s", oauth_signature="%s", `+
		`oauth_signature_method="PLAINTEXT", oauth_timestamp="%d", oauth_nonce="%d", oauth_version="1.0"`,
		url.QueryEscape(c.ConsumerKey), url.QueryEscape(c.TokenKey), url.QueryEscape("&"+c.TokenSecret),
		time.Now().Unix(), time.Now().UnixNano())
}

// rawResp is an answer to a raw request.
type rawResp struct {
	code   int
	body   []byte
	header http.Header
}

func (r rawResp) String() string { return fmt.Sprintf("%d %s", r.code, r.body) }

// do sends a signed request; pathQuery is relative to APIPrefix and may
// carry a query (e.g. "/machines/?op=allocate"). GET sends form in the
// query string, the others as a urlencoded body.
func (l *simLab) do(method, pathQuery string, form url.Values) rawResp {
	l.tb.Helper()
	u := l.hs.URL + APIPrefix + pathQuery
	var body io.Reader
	if method == http.MethodGet || method == http.MethodDelete {
		if len(form) > 0 {
			sep := "?"
			if strings.Contains(u, "?") {
				sep = "&"
			}
			u += sep + form.Encode()
		}
	} else {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		l.tb.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Authorization", oauthHeader(labCreds))
	resp, err := l.hs.Client().Do(req)
	if err != nil {
		l.tb.Fatalf("%s %s: %v", method, pathQuery, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResp{code: resp.StatusCode, body: b, header: resp.Header}
}

// must sends a request that must answer want, and decodes the JSON answer
// into out (when out is not nil).
func (l *simLab) must(want int, method, pathQuery string, form url.Values, out any) rawResp {
	l.tb.Helper()
	r := l.do(method, pathQuery, form)
	if r.code != want {
		l.tb.Fatalf("%s %s: got %s, want %d", method, pathQuery, r, want)
	}
	if out != nil {
		if err := json.Unmarshal(r.body, out); err != nil {
			l.tb.Fatalf("%s %s: decode %T: %v (%s)", method, pathQuery, out, err, r.body)
		}
	}
	return r
}

// machine reads one machine as a JSON object.
func (l *simLab) machine(id string) map[string]any {
	l.tb.Helper()
	var m map[string]any
	l.must(http.StatusOK, "GET", "/machines/"+id+"/", nil, &m)
	return m
}

// statusOf reads a machine's integer status.
func (l *simLab) statusOf(id string) int {
	l.tb.Helper()
	return int(l.machine(id)["status"].(float64))
}

// waitStatus polls the API until the machine has status want.
func (l *simLab) waitStatus(id string, want int) map[string]any {
	l.tb.Helper()
	var m map[string]any
	waitFor(l.tb, fmt.Sprintf("machine %s to be %s", id, StatusName(want)), func() bool {
		m = l.machine(id)
		return int(m["status"].(float64)) == want
	})
	return m
}

// enlist adds the i-th lab server through POST /machines/ as an admin would.
func (l *simLab) enlist(i int, hostname string) string {
	l.tb.Helper()
	var m map[string]any
	l.must(http.StatusOK, "POST", "/machines/", url.Values{
		"hostname": {hostname}, "architecture": {"amd64/generic"}, "mac_addresses": {labMAC(i, 1), labMAC(i, 2)},
		"power_type": {"ipmi"}, "power_parameters_power_address": {fmt.Sprintf("10.99.0.%d", i)},
		"power_parameters_power_user": {"root"}, "power_parameters_power_pass": {"calvin"},
	}, &m)
	return m["system_id"].(string)
}

// ready enlists and commissions the i-th lab server.
func (l *simLab) ready(i int, hostname string) string {
	l.tb.Helper()
	id := l.enlist(i, hostname)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=commission", nil, nil)
	l.waitStatus(id, StatusReady)
	return id
}

// deployed takes the i-th lab server to Deployed.
func (l *simLab) deployed(i int, hostname string) string {
	l.tb.Helper()
	id := l.ready(i, hostname)
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {id}}, nil)
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", url.Values{"distro_series": {"jammy"}}, nil)
	l.waitStatus(id, StatusDeployed)
	return id
}

// waitFor polls cond until it holds, or fails the test after labWait.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(labWait)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// gomaasapiController is Juju's controller on the lab.
func (l *simLab) gomaasapiController() gomaasapi.Controller {
	l.tb.Helper()
	c, err := gomaasapi.NewController(gomaasapi.ControllerArgs{BaseURL: l.hs.URL + "/MAAS", APIKey: labCreds.String()})
	if err != nil {
		l.tb.Fatalf("gomaasapi.NewController: %v", err)
	}
	return c
}

// gomaasapiMAAS is gomaasapi's lower-level object API (what Juju uses for
// the calls its Controller lacks: enlisting, commissioning, tags).
func (l *simLab) gomaasapiMAAS() *gomaasapi.MAASObject {
	l.tb.Helper()
	c, err := gomaasapi.NewAuthenticatedClient(gomaasapi.AddAPIVersionToURL(l.hs.URL+"/MAAS", "2.0"), labCreds.String())
	if err != nil {
		l.tb.Fatal(err)
	}
	return gomaasapi.NewMAAS(*c)
}

// gomaasclient is the Terraform provider's client on the lab.
func (l *simLab) gomaasclient() *client.Client {
	l.tb.Helper()
	c, err := client.GetClient(l.hs.URL+"/MAAS", labCreds.String(), "2.0")
	if err != nil {
		l.tb.Fatalf("gomaasclient: %v", err)
	}
	return c
}

// serverError finds the HTTP answer behind a client error: both clients
// return gomaasapi.ServerError, wrapped by juju/errors.
func serverError(err error) (gomaasapi.ServerError, bool) {
	var se gomaasapi.ServerError
	if errors.As(err, &se) {
		return se, true
	}
	return gomaasapi.GetServerError(err)
}

// wantServerError fails unless err is an HTTP answer with status code and a
// body containing every one of msgs.
func wantServerError(tb testing.TB, what string, err error, code int, msgs ...string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("%s: no error, want %d", what, code)
	}
	se, ok := serverError(err)
	if !ok {
		tb.Fatalf("%s: %v (%T) is not a gomaasapi.ServerError", what, err, err)
	}
	if se.StatusCode != code {
		tb.Fatalf("%s: status %d (%s), want %d", what, se.StatusCode, se.BodyMessage, code)
	}
	for _, m := range msgs {
		if !strings.Contains(se.BodyMessage, m) {
			tb.Errorf("%s: body %q does not contain %q", what, se.BodyMessage, m)
		}
	}
}

// ---------------------------------------------------------------------------
// Calls that must succeed.

// requireMAAS fails the test when a client call failed: call names the
// client method, endpoint the request it sends, and maas what a real MAAS
// answers to it, so a missing route or op in the simulator reads as the
// gap it is.
func requireMAAS(tb testing.TB, call, endpoint, maas string, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s (%s): %v; a real MAAS answers %s", call, endpoint, err, maas)
	}
}

// ---------------------------------------------------------------------------
// Decoding checks.

// requireSet fails for every named field of the struct v that holds its
// zero value: the fields a client depends on must come back filled.
func requireSet(tb testing.TB, what string, v any, fields ...string) {
	tb.Helper()
	rv := reflect.Indirect(reflect.ValueOf(v))
	for _, f := range fields {
		fv := rv.FieldByName(f)
		if !fv.IsValid() {
			tb.Fatalf("%s: %T has no field %s", what, v, f)
		}
		if fv.IsZero() {
			tb.Errorf("%s: field %s is not set after decoding", what, f)
		}
	}
}

// jsonKeys lists the JSON keys a client's struct type reads.
func jsonKeys(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			if f.Anonymous {
				out = append(out, jsonKeys(f.Type)...)
				continue
			}
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// missingKeys lists the keys the client's type reads that obj lacks, less
// those MAAS itself leaves out (absent, with why).
func missingKeys(obj map[string]any, t reflect.Type, absent map[string]string) []string {
	var out []string
	for _, k := range jsonKeys(t) {
		if _, ok := obj[k]; !ok && absent[k] == "" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// machineKeysMAASOmits are the keys of gomaasclient's entity.Machine that a
// MAAS 3.x region does not send for a machine.
var machineKeysMAASOmits = map[string]string{
	"version":              "controllers only (DISPLAYED_RACK_CONTROLLER_FIELDS)",
	"service_set":          "controllers only",
	"iscsiblockdevice_set": "MAAS 1.x",
}

// checkMachineJSON checks a machine object against both clients' types.
func checkMachineJSON(tb testing.TB, what string, m map[string]any) {
	tb.Helper()
	if miss := missingKeys(m, reflect.TypeOf(entity.Machine{}), machineKeysMAASOmits); len(miss) > 0 {
		tb.Errorf("%s: keys gomaasclient's entity.Machine reads are missing: %v", what, miss)
	}
	for _, k := range []string{"interface_set", "blockdevice_set", "physicalblockdevice_set"} {
		list, _ := m[k].([]any)
		for _, x := range list {
			obj, _ := x.(map[string]any)
			var t reflect.Type
			var omit map[string]string
			if k == "interface_set" {
				t = reflect.TypeOf(entity.NetworkInterface{})
			} else {
				t = reflect.TypeOf(entity.BlockDevice{})
				omit = map[string]string{"numa_node": ""}
			}
			if miss := missingKeys(obj, t, omit); len(miss) > 0 {
				tb.Errorf("%s: %s entry lacks keys the client reads: %v", what, k, miss)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// gomaasapi (Juju).

func TestConformanceGomaasapiLifecycle(t *testing.T) {
	l := newSimLab(t, func(o *Options) { o.Durations.Erase = 40 * time.Second }) // 40 ms: long enough to see
	c := l.gomaasapiController()
	maas := l.gomaasapiMAAS()

	// Version and capabilities (NewController already read them).
	ver, _, err := c.APIVersionInfo()
	if err != nil || ver != Version {
		t.Fatalf("APIVersionInfo = %q, %v; want %q", ver, err, Version)
	}
	for _, capability := range []string{gomaasapi.NetworksManagement, gomaasapi.StaticIPAddresses, gomaasapi.NetworkDeploymentUbuntu} {
		if !c.Capabilities().Contains(capability) {
			t.Errorf("capability %q missing from %v", capability, c.Capabilities().SortedValues())
		}
	}

	// Enlist two machines: POST /machines/ with MACs, architecture, BMC.
	enlist := func(i int, host string) string {
		obj, err := maas.GetSubObject("machines").CallPost("", url.Values{
			"hostname": {host}, "architecture": {"amd64/generic"}, "mac_addresses": {labMAC(i, 1), labMAC(i, 2)},
			"power_type": {"ipmi"}, "power_parameters_power_address": {fmt.Sprintf("10.99.0.%d", i)},
			"power_parameters_power_user": {"root"}, "power_parameters_power_pass": {"calvin"},
		})
		if err != nil {
			t.Fatalf("enlist %s: %v", host, err)
		}
		mo, err := obj.GetMAASObject()
		if err != nil {
			t.Fatalf("enlist %s: answer is not a MAAS object: %v", host, err)
		}
		id, err := mo.GetField("system_id")
		if err != nil || id == "" {
			t.Fatalf("enlist %s: system_id %q, %v", host, id, err)
		}
		if st, _ := mo.GetField("status_name"); st != "New" {
			t.Errorf("enlisted %s is %q, want New", host, st)
		}
		return id
	}
	id1, id2 := enlist(1, "gm-1"), enlist(2, "gm-2")

	pp, err := maas.GetSubObject("machines").GetSubObject(id1).CallGet("power_parameters", nil)
	if err != nil {
		t.Fatalf("power_parameters: %v", err)
	}
	ppm, err := pp.GetMap()
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := ppm["power_address"].GetString(); a != "10.99.0.1" {
		t.Errorf("power_address = %q, want 10.99.0.1", a)
	}

	// Commission both; poll until Ready.
	for _, id := range []string{id1, id2} {
		if _, err := maas.GetSubObject("machines").GetSubObject(id).CallPost("commission", nil); err != nil {
			t.Fatalf("commission %s: %v", id, err)
		}
	}
	m1 := waitGomaasapi(t, c, id1, "Ready")
	waitGomaasapi(t, c, id2, "Ready")
	if m1.CPUCount() != 16 || m1.Memory() != 65536 || m1.Architecture() != "amd64/generic" || m1.PowerType() != "ipmi" {
		t.Errorf("commissioned machine: cpu %d mem %d arch %q power %q", m1.CPUCount(), m1.Memory(), m1.Architecture(), m1.PowerType())
	}
	if n := len(m1.InterfaceSet()); n != 2 || m1.BootInterface() == nil || m1.BootInterface().Name() != "ens3f0" {
		t.Errorf("interfaces after commissioning: %d, boot %v", n, m1.BootInterface())
	}
	if bds := m1.PhysicalBlockDevices(); len(bds) != 2 || bds[0].Name() != "sda" || bds[0].Size() == 0 || bds[0].Model() == "" {
		t.Errorf("block devices after commissioning: %v", bds)
	}
	if m1.Zone() == nil || m1.Zone().Name() != "default" || m1.Pool() == nil || m1.Pool().Name() != "default" {
		t.Errorf("zone %v pool %v", m1.Zone(), m1.Pool())
	}
	if hw := m1.HardwareInfo(); hw["system_vendor"] != "Dell Inc." {
		t.Errorf("hardware_info = %v", hw)
	}

	// Allocate by system ID (and agent name, zone), and by hostname.
	a1, matches, err := c.AllocateMachine(gomaasapi.AllocateMachineArgs{SystemId: id1, AgentName: "slipway", Zone: "default", Comment: "conformance"})
	if err != nil {
		t.Fatalf("AllocateMachine by system_id: %v", err)
	}
	if a1.SystemID() != id1 || a1.StatusName() != "Allocated" {
		t.Errorf("allocated %s %q, want %s Allocated", a1.SystemID(), a1.StatusName(), id1)
	}
	if matches.Interfaces == nil || matches.Storage == nil {
		t.Errorf("constraint matches not decoded: %+v", matches)
	}
	a2, _, err := c.AllocateMachine(gomaasapi.AllocateMachineArgs{Hostname: "gm-2", AgentName: "slipway"})
	if err != nil || a2.SystemID() != id2 {
		t.Fatalf("AllocateMachine by hostname: %v, %v", a2, err)
	}
	// An allocated machine cannot be allocated again.
	if _, _, err := c.AllocateMachine(gomaasapi.AllocateMachineArgs{SystemId: id1}); !gomaasapi.IsNoMatchError(err) {
		t.Errorf("allocating an allocated machine: %v, want a NoMatchError", err)
	}

	// Deploy with user data and a series; poll until Deployed.
	userData := "#cloud-config\nruncmd: [touch /run/slipway]\n"
	if err := a1.Start(gomaasapi.StartArgs{UserData: base64.StdEncoding.EncodeToString([]byte(userData)), DistroSeries: "jammy", Comment: "go"}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	if a1.StatusName() != "Deploying" {
		t.Errorf("after Start the machine is %q, want Deploying", a1.StatusName())
	}
	if err := a2.Start(gomaasapi.StartArgs{DistroSeries: "noble"}); err != nil {
		t.Fatalf("Start: %v", err)
	}
	d1 := waitGomaasapi(t, c, id1, "Deployed")
	d2 := waitGomaasapi(t, c, id2, "Deployed")
	if d1.OperatingSystem() != "ubuntu" || d1.DistroSeries() != "jammy" || d2.DistroSeries() != "noble" {
		t.Errorf("deployed %s/%s and %s", d1.OperatingSystem(), d1.DistroSeries(), d2.DistroSeries())
	}
	if d1.PowerState() != "on" {
		t.Errorf("deployed machine power %q", d1.PowerState())
	}
	waitFor(t, "the Deployed hook", func() bool { _, ok := l.hooks.deployedWith(id1); return ok })
	if ud, _ := l.hooks.deployedWith(id1); string(ud) != userData {
		t.Errorf("the machine got user data %q, want %q", ud, userData)
	}

	// Owner data: set, filter on it, clear a key.
	if err := d1.SetOwnerData(map[string]string{"slipway/site": "lab", "slipway/role": "compute"}); err != nil {
		t.Fatalf("SetOwnerData: %v", err)
	}
	if od := d1.OwnerData(); od["slipway/site"] != "lab" || od["slipway/role"] != "compute" {
		t.Errorf("OwnerData = %v", od)
	}
	if ms, err := c.Machines(gomaasapi.MachinesArgs{OwnerData: map[string]string{"slipway/site": "lab"}}); err != nil || len(ms) != 1 || ms[0].SystemID() != id1 {
		t.Errorf("Machines by owner data: %v %v", ms, err)
	}
	if err := d1.SetOwnerData(map[string]string{"slipway/role": ""}); err != nil {
		t.Fatal(err)
	}
	if od := d1.OwnerData(); len(od) != 1 {
		t.Errorf("after clearing a key OwnerData = %v", od)
	}

	// Tags through the object API; then filter machines on them.
	if _, err := maas.GetSubObject("tags").CallPost("", url.Values{"name": {"gpu"}, "comment": {"has a GPU"}}); err != nil {
		t.Fatalf("create tag: %v", err)
	}
	if _, err := maas.GetSubObject("tags").GetSubObject("gpu").CallPost("update_nodes", url.Values{"add": {id1}}); err != nil {
		t.Fatalf("update_nodes: %v", err)
	}
	tags, err := c.Tags()
	if err != nil || len(tags) != 1 || tags[0].Name() != "gpu" || tags[0].Comment() != "has a GPU" {
		t.Errorf("Tags = %v, %v", tags, err)
	}

	// Machines with filters.
	filters := []struct {
		name string
		args gomaasapi.MachinesArgs
		want []string
	}{
		{"all", gomaasapi.MachinesArgs{}, []string{id1, id2}},
		{"hostnames", gomaasapi.MachinesArgs{Hostnames: []string{"gm-2"}}, []string{id2}},
		{"system IDs", gomaasapi.MachinesArgs{SystemIDs: []string{id1, "nosuch"}}, []string{id1}},
		{"MACs", gomaasapi.MachinesArgs{MACAddresses: []string{labMAC(2, 2)}}, []string{id2}},
		{"agent name", gomaasapi.MachinesArgs{AgentName: "slipway"}, []string{id1, id2}},
		{"other agent", gomaasapi.MachinesArgs{AgentName: "juju"}, nil},
		{"zone", gomaasapi.MachinesArgs{Zone: "default"}, []string{id1, id2}},
		{"pool", gomaasapi.MachinesArgs{Pool: "default"}, []string{id1, id2}},
		{"domain", gomaasapi.MachinesArgs{Domain: "maas"}, []string{id1, id2}},
		{"tags", gomaasapi.MachinesArgs{Tags: []string{"gpu"}}, []string{id1}},
	}
	for _, f := range filters {
		ms, err := c.Machines(f.args)
		if err != nil {
			t.Errorf("Machines(%s): %v", f.name, err)
			continue
		}
		if got := gomaasapiIDs(ms); !sameSet(got, f.want) {
			t.Errorf("Machines(%s) = %v, want %v", f.name, got, f.want)
		}
	}
	// Status has no gomaasapi argument: a raw request, as a driver would.
	var byStatus []map[string]any
	l.must(http.StatusOK, "GET", "/machines/", url.Values{"status": {"deployed"}}, &byStatus)
	if len(byStatus) != 2 {
		t.Errorf("machines with status=deployed: %d, want 2", len(byStatus))
	}

	// Zones, pools, domains, boot resources.
	zones, err := c.Zones()
	if err != nil || len(zones) != 1 || zones[0].Name() != "default" {
		t.Errorf("Zones = %v, %v", zones, err)
	}
	if _, err := c.Pools(); err == nil {
		t.Errorf("Pools: gomaasapi reads /pools/, which MAAS does not serve (it serves /resourcepools/); want an error")
	} else if se, ok := serverError(err); !ok || se.StatusCode != http.StatusNotFound {
		t.Errorf("Pools: %v, want a 404 like MAAS's", err)
	}
	domains, err := c.Domains()
	if err != nil || len(domains) != 1 || domains[0].Name() != "maas" {
		t.Errorf("Domains = %v, %v", domains, err)
	}
	brs, err := c.BootResources()
	if err != nil || len(brs) == 0 {
		t.Fatalf("BootResources = %v, %v", brs, err)
	}
	if brs[0].Name() == "" || brs[0].Architecture() == "" || brs[0].Type() == "" || brs[0].KernelFlavor() == "" || brs[0].SubArchitectures().IsEmpty() {
		t.Errorf("boot resource not fully decoded: %q %q %q %q %v", brs[0].Name(), brs[0].Architecture(), brs[0].Type(), brs[0].KernelFlavor(), brs[0].SubArchitectures())
	}

	// Release: id1 plainly, id2 with erase (the object API: ReleaseMachinesArgs has no erase).
	if err := c.ReleaseMachines(gomaasapi.ReleaseMachinesArgs{SystemIDs: []string{id1}, Comment: "done"}); err != nil {
		t.Fatalf("ReleaseMachines: %v", err)
	}
	if _, err := maas.GetSubObject("machines").GetSubObject(id2).CallPost("release", url.Values{"erase": {"true"}}); err != nil {
		t.Fatalf("release with erase: %v", err)
	}
	seen := map[string]bool{}
	waitFor(t, "the erased machine to be Ready", func() bool {
		ms, err := c.Machines(gomaasapi.MachinesArgs{SystemIDs: []string{id2}})
		if err != nil || len(ms) != 1 {
			t.Fatalf("Machines: %v %v", ms, err)
		}
		seen[ms[0].StatusName()] = true
		return ms[0].StatusName() == "Ready"
	})
	if !seen["Disk erasing"] {
		t.Errorf("release with erase went through %v, never Disk erasing", seen)
	}
	r1 := waitGomaasapi(t, c, id1, "Ready")
	if len(r1.OwnerData()) != 0 || r1.OperatingSystem() != "" || r1.DistroSeries() != "" || r1.PowerState() != "off" {
		t.Errorf("released machine keeps owner data %v, OS %q/%q, power %q", r1.OwnerData(), r1.OperatingSystem(), r1.DistroSeries(), r1.PowerState())
	}
	if ms, _ := c.Machines(gomaasapi.MachinesArgs{AgentName: "slipway"}); len(ms) != 0 {
		t.Errorf("released machines keep their agent name: %v", gomaasapiIDs(ms))
	}
	waitFor(t, "the Released hooks", func() bool { return l.hooks.releases(id1) == 1 && l.hooks.releases(id2) == 1 })

	// Release again: MAAS skips a Ready machine (no error); a machine
	// that cannot be released is a 409, which gomaasapi turns into a
	// CannotCompleteError wrapping the ServerError.
	if err := c.ReleaseMachines(gomaasapi.ReleaseMachinesArgs{SystemIDs: []string{id1}}); err != nil {
		t.Errorf("second release of a Ready machine: %v, want none", err)
	}
	newID := l.enlist(9, "never-allocated")
	err = c.ReleaseMachines(gomaasapi.ReleaseMachinesArgs{SystemIDs: []string{newID}})
	if !gomaasapi.IsCannotCompleteError(err) {
		t.Errorf("release of a New machine: %v, want a CannotCompleteError", err)
	}
	wantServerError(t, "release of a New machine", err, http.StatusConflict, newID, "New")
	// Releasing an unknown machine is a 400 (BadRequestError).
	if err := c.ReleaseMachines(gomaasapi.ReleaseMachinesArgs{SystemIDs: []string{"nosuch"}}); !gomaasapi.IsBadRequestError(err) {
		t.Errorf("releasing an unknown machine: %v, want a BadRequestError", err)
	}

	// Nothing matches: 409 "No available machine matches constraints", a NoMatchError.
	_, _, err = c.AllocateMachine(gomaasapi.AllocateMachineArgs{MinCPUCount: 100000})
	if !gomaasapi.IsNoMatchError(err) {
		t.Errorf("allocate with nothing matching: %v, want a NoMatchError", err)
	}
	wantServerError(t, "allocate with nothing matching", err, http.StatusConflict, "No available machine matches constraints", `(resolved to "cpu_count=100000.0")`)
	// A tag MAAS does not have is the form's error: 400.
	_, _, err = c.AllocateMachine(gomaasapi.AllocateMachineArgs{Tags: []string{"no-such-tag"}})
	wantServerError(t, "allocate with an unknown tag", err, http.StatusBadRequest, "No such tag(s): 'no-such-tag'.")

	// Events of a machine.
	var evs struct {
		Count  int              `json:"count"`
		Events []map[string]any `json:"events"`
	}
	l.must(http.StatusOK, "GET", "/events/?op=query", url.Values{"id": {id1}}, &evs)
	if evs.Count == 0 || evs.Count != len(evs.Events) {
		t.Fatalf("events of %s: %+v", id1, evs)
	}
	for _, e := range evs.Events {
		if e["node"] != id1 {
			t.Errorf("event of another machine: %v", e)
		}
	}

	// Delete.
	if err := c.DeleteMachine(id2); err != nil {
		t.Fatalf("DeleteMachine: %v", err)
	}
	if ms, _ := c.Machines(gomaasapi.MachinesArgs{}); len(ms) != 2 { // id1 and newID
		t.Errorf("after delete %d machines, want 2", len(ms))
	}
}

// waitGomaasapi polls with gomaasapi until the machine's status_name is want.
func waitGomaasapi(t *testing.T, c gomaasapi.Controller, id, want string) gomaasapi.Machine {
	t.Helper()
	var last gomaasapi.Machine
	waitFor(t, fmt.Sprintf("machine %s to be %s (gomaasapi)", id, want), func() bool {
		ms, err := c.Machines(gomaasapi.MachinesArgs{SystemIDs: []string{id}})
		if err != nil || len(ms) != 1 {
			t.Fatalf("Machines(%s): %v %v", id, ms, err)
		}
		last = ms[0]
		return last.StatusName() == want
	})
	return last
}

func gomaasapiIDs(ms []gomaasapi.Machine) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.SystemID())
	}
	return out
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x := append([]string(nil), a...)
	y := append([]string(nil), b...)
	sort.Strings(x)
	sort.Strings(y)
	return reflect.DeepEqual(x, y)
}

func TestConformanceGomaasapiAuth(t *testing.T) {
	l := newSimLab(t, nil)
	for _, key := range []string{"ck:tk:wrong", "ck:nosuch:ts", "other:tk:ts"} {
		_, err := gomaasapi.NewController(gomaasapi.ControllerArgs{BaseURL: l.hs.URL + "/MAAS", APIKey: key})
		if !gomaasapi.IsPermissionError(err) {
			t.Errorf("key %s: %v, want a PermissionError", key, err)
		}
	}
	if _, err := gomaasapi.NewController(gomaasapi.ControllerArgs{BaseURL: l.hs.URL + "/MAAS", APIKey: "nocolons"}); err == nil {
		t.Errorf("a malformed key was accepted")
	}
	// /version/ answers without credentials, the rest does not.
	for path, want := range map[string]int{"/version/": 200, "/machines/": 401, "/users/?op=whoami": 401} {
		resp, err := http.Get(l.hs.URL + APIPrefix + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("anonymous GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// ---------------------------------------------------------------------------
// gomaasclient (Terraform provider).

func TestConformanceGomaasclientLifecycle(t *testing.T) {
	l := newSimLab(t, nil)
	gc := l.gomaasclient()

	v, err := gc.Version.Get()
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	requireSet(t, "version", v, "Version", "Capabilities")

	// Enlist.
	created, err := gc.Machines.Create(&entity.MachineCreateParams{
		Hostname: "tf-1", Architecture: "amd64/generic", PowerType: "ipmi", MACAddresses: []string{labMAC(3, 1), labMAC(3, 2)},
		Description: "enlisted by terraform",
	}, map[string]any{"power_parameters_power_address": "10.99.0.3", "power_parameters_power_user": "root", "power_parameters_power_pass": "calvin"})
	if err != nil {
		t.Fatalf("Machines.Create: %v", err)
	}
	id := created.SystemID
	requireSet(t, "created machine", created, "SystemID", "Hostname", "FQDN", "StatusName", "Architecture", "PowerType",
		"Zone", "Pool", "Domain", "ResourceURI", "InterfaceSet", "BootInterface", "Description")
	if created.Status != node.StatusNew || created.Hostname != "tf-1" || created.FQDN != "tf-1.maas" {
		t.Errorf("created %+v", created)
	}
	pp, err := gc.Machine.GetPowerParameters(id)
	if err != nil || pp["power_address"] != "10.99.0.3" || pp["power_user"] != "root" {
		t.Errorf("GetPowerParameters = %v, %v", pp, err)
	}

	// Commission; poll until Ready.
	if _, err := gc.Machine.Commission(id, &entity.MachineCommissionParams{}); err != nil {
		t.Fatalf("Commission: %v", err)
	}
	ready := waitGomaasclient(t, gc, id, node.StatusReady)
	requireSet(t, "ready machine", ready, "CPUCount", "Memory", "Storage", "PhysicalBlockDeviceSet", "BlockDeviceSet", "BootDisk",
		"HardwareInfo", "PowerState", "CommissioningStatusName", "NodeTypeName", "Netboot")
	requireSet(t, "boot interface", ready.BootInterface, "ID", "Name", "Type", "MACAddress", "VLAN", "EffectiveMTU", "SystemID", "ResourceURI", "Enabled", "Vendor", "Product")
	requireSet(t, "boot interface VLAN", ready.BootInterface.VLAN, "ID", "Name", "Fabric", "FabricID", "MTU", "ResourceURI")
	requireSet(t, "boot disk", ready.BootDisk, "ID", "Name", "Type", "Model", "Serial", "IDPath", "Path", "Size", "BlockSize", "SystemID", "ResourceURI", "UsedFor", "AvailableSize")
	requireSet(t, "zone", ready.Zone, "Name", "ResourceURI")
	requireSet(t, "pool", ready.Pool, "Name", "Description", "ResourceURI")
	requireSet(t, "domain", ready.Domain, "Name", "ResourceURI", "Authoritative", "IsDefault")
	checkMachineJSON(t, "ready machine", l.machine(id))

	// Allocate; deploy; poll until Deployed.
	alloc, err := gc.Machines.Allocate(&entity.MachineAllocateParams{SystemID: id, AgentName: "terraform", Zone: "default", Pool: "default", Comment: "tf"})
	if err != nil {
		t.Fatalf("Machines.Allocate: %v", err)
	}
	if alloc.SystemID != id || alloc.Status != node.StatusAllocated || alloc.Owner != "admin" {
		t.Errorf("allocated %s status %d owner %q", alloc.SystemID, alloc.Status, alloc.Owner)
	}
	userData := "#!/bin/sh\necho slipway\n"
	dep, err := gc.Machine.Deploy(id, &entity.MachineDeployParams{UserData: base64.StdEncoding.EncodeToString([]byte(userData)), DistroSeries: "jammy", HWEKernel: "ga-22.04"})
	if err != nil {
		t.Fatalf("Machine.Deploy: %v", err)
	}
	if dep.Status != node.StatusDeploying {
		t.Errorf("after Deploy status %d (%s), want Deploying", dep.Status, dep.StatusName)
	}
	deployed := waitGomaasclient(t, gc, id, node.StatusDeployed)
	if deployed.OSystem != "ubuntu" || deployed.DistroSeries != "jammy" || deployed.HWEKernel != "ga-22.04" || deployed.PowerState != "on" {
		t.Errorf("deployed %s/%s kernel %q power %q", deployed.OSystem, deployed.DistroSeries, deployed.HWEKernel, deployed.PowerState)
	}
	waitFor(t, "the Deployed hook", func() bool { _, ok := l.hooks.deployedWith(id); return ok })
	if ud, _ := l.hooks.deployedWith(id); string(ud) != userData {
		t.Errorf("user data %q, want %q", ud, userData)
	}
	checkMachineJSON(t, "deployed machine", l.machine(id))

	// Workload annotations (owner data), power state, details.
	ann, err := gc.Machine.SetWorkloadAnnotations(id, map[string]string{"env": "lab"})
	if err != nil || ann.WorkloadAnnotations["env"] != "lab" {
		t.Errorf("SetWorkloadAnnotations = %v, %v", ann.WorkloadAnnotations, err)
	}
	if od, _ := ann.OwnerData.(map[string]any); od["env"] != "lab" {
		t.Errorf("owner_data = %v, want the annotation", ann.OwnerData)
	}
	ps, err := gc.Machine.GetPowerState(id)
	if err != nil || ps.State != "on" {
		t.Errorf("GetPowerState = %v, %v", ps, err)
	}
	det, err := gc.Machine.Details(id)
	if err != nil {
		t.Errorf("Details: %v", err)
	} else if !strings.Contains(det.LSHW, "<businfo>pci@0000:3b:00.0</businfo>") || !strings.Contains(det.LSHW, "<logicalname>ens3f0</logicalname>") || det.LLDP == "" {
		t.Errorf("Details lshw does not tie PCI addresses to names: %.300s", det.LSHW)
	}

	// Filters.
	other := l.ready(4, "tf-2")
	filters := []struct {
		name string
		p    entity.MachinesParams
		want []string
	}{
		{"all", entity.MachinesParams{}, []string{id, other}},
		{"hostname", entity.MachinesParams{Hostname: []string{"tf-2"}}, []string{other}},
		{"id", entity.MachinesParams{ID: []string{id}}, []string{id}},
		{"mac", entity.MachinesParams{MACAddress: []string{labMAC(3, 2)}}, []string{id}},
		{"agent", entity.MachinesParams{AgentName: []string{"terraform"}}, []string{id}},
		{"zone", entity.MachinesParams{Zone: []string{"default"}}, []string{id, other}},
		{"pool", entity.MachinesParams{Pool: []string{"default"}}, []string{id, other}},
		{"status deployed", entity.MachinesParams{Status: []string{"deployed"}}, []string{id}},
		{"status ready", entity.MachinesParams{Status: []string{"ready"}}, []string{other}},
		{"domain", entity.MachinesParams{Domain: []string{"maas"}}, []string{id, other}},
	}
	for _, f := range filters {
		ms, err := gc.Machines.Get(&f.p)
		if err != nil {
			t.Errorf("Machines.Get(%s): %v", f.name, err)
			continue
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.SystemID)
		}
		if !sameSet(got, f.want) {
			t.Errorf("Machines.Get(%s) = %v, want %v", f.name, got, f.want)
		}
	}

	// Release with erase; poll until Ready (through Disk erasing).
	rel, err := gc.Machine.Release(id, &entity.MachineReleaseParams{Erase: true, Comment: "tf destroy"})
	if err != nil {
		t.Fatalf("Machine.Release: %v", err)
	}
	if rel.Status != node.StatusDiskErasing { // MAAS erases first, then releases
		t.Errorf("after Release with erase status %d (%s), want Disk erasing", rel.Status, rel.StatusName)
	}
	released := waitGomaasclient(t, gc, id, node.StatusReady)
	if released.Owner != "" || len(released.WorkloadAnnotations) != 0 || released.OSystem != "" || released.PowerState != "off" {
		t.Errorf("released machine: owner %q annotations %v os %q power %q", released.Owner, released.WorkloadAnnotations, released.OSystem, released.PowerState)
	}
	// Released again: MAAS answers success both ways (nothing to do).
	if _, err = gc.Machine.Release(id, &entity.MachineReleaseParams{}); err != nil {
		t.Errorf("second Machine.Release: %v, want none", err)
	}
	if err = gc.Machines.Release([]string{id}, "again"); err != nil {
		t.Errorf("second Machines.Release: %v, want none", err)
	}

	// Nothing matches.
	_, err = gc.Machines.Allocate(&entity.MachineAllocateParams{CPUCount: 100000})
	wantServerError(t, "allocate with nothing matching", err, http.StatusConflict, "No available machine matches constraints")
	_, err = gc.Machines.Allocate(&entity.MachineAllocateParams{Zone: "elsewhere"})
	wantServerError(t, "allocate in a zone MAAS lacks", err, http.StatusBadRequest, "No such zone: 'elsewhere'.")

	// Lifecycle ops the provider uses around a deployment.
	if _, err := gc.Machine.PowerOn(other, &entity.MachinePowerOnParams{}); err != nil {
		t.Errorf("PowerOn: %v", err)
	}
	if _, err := gc.Machine.PowerOff(other, &entity.MachinePowerOffParams{}); err != nil {
		t.Errorf("PowerOff: %v", err)
	}
	upd, err := gc.Machine.Update(other, &entity.MachineUpdateParams{Hostname: "tf-2b", Description: "renamed"}, map[string]any{"power_parameters_power_address": "10.99.0.44"})
	if err != nil || upd.Hostname != "tf-2b" || upd.Description != "renamed" {
		t.Errorf("Machine.Update = %+v, %v", upd, err)
	}
	if pp, _ := gc.Machine.GetPowerParameters(other); pp["power_address"] != "10.99.0.44" {
		t.Errorf("power address after Update: %v", pp)
	}
	if err := gc.Machine.Delete(other); err != nil {
		t.Errorf("Machine.Delete: %v", err)
	}
	if _, err := gc.Machine.Get(other); err == nil {
		t.Errorf("a deleted machine is still there")
	} else {
		wantServerError(t, "Get of a deleted machine", err, http.StatusNotFound, "No Machine matches the given query.")
	}
}

// waitGomaasclient polls with gomaasclient until the machine has status want.
func waitGomaasclient(t *testing.T, gc *client.Client, id string, want node.Status) *entity.Machine {
	t.Helper()
	var last *entity.Machine
	waitFor(t, fmt.Sprintf("machine %s to be %s (gomaasclient)", id, StatusName(int(want))), func() bool {
		m, err := gc.Machine.Get(id)
		if err != nil {
			t.Fatalf("Machine.Get(%s): %v", id, err)
		}
		last = m
		return m.Status == want
	})
	return last
}

func TestConformanceGomaasclientSite(t *testing.T) {
	l := newSimLab(t, nil)
	gc := l.gomaasclient()

	// Zones.
	z, err := gc.Zones.Create(&entity.ZoneParams{Name: "rack-a", Description: "first rack"})
	if err != nil {
		t.Fatalf("Zones.Create: %v", err)
	}
	requireSet(t, "zone", z, "ID", "Name", "Description", "ResourceURI")
	zs, err := gc.Zones.Get()
	if err != nil || len(zs) != 2 {
		t.Errorf("Zones.Get = %v, %v", zs, err)
	}
	if got, err := gc.Zone.Get("rack-a"); err != nil || got.ID != z.ID {
		t.Errorf("Zone.Get = %v, %v", got, err)
	}

	// Resource pools.
	p, err := gc.ResourcePools.Create(&entity.ResourcePoolParams{Name: "gpu", Description: "GPU servers"})
	if err != nil {
		t.Fatalf("ResourcePools.Create: %v", err)
	}
	requireSet(t, "pool", p, "ID", "Name", "Description", "ResourceURI")
	ps, err := gc.ResourcePools.Get()
	if err != nil || len(ps) != 2 {
		t.Errorf("ResourcePools.Get = %v, %v", ps, err)
	}
	if got, err := gc.ResourcePool.Get(p.ID); err != nil || got.Name != "gpu" {
		t.Errorf("ResourcePool.Get(%d) = %v, %v", p.ID, got, err)
	}
	if got, err := gc.ResourcePool.GetByName("gpu"); err != nil || got.ID != p.ID {
		t.Errorf("ResourcePool.GetByName = %v, %v", got, err)
	}
	if got, err := gc.ResourcePool.Update(p.ID, &entity.ResourcePoolParams{Name: "gpu", Description: "A100 servers"}); err != nil || got.Description != "A100 servers" {
		t.Errorf("ResourcePool.Update = %v, %v", got, err)
	}

	// A machine in the new zone and pool, allocated by both.
	id := l.ready(5, "zoned")
	if _, err := gc.Machine.Update(id, &entity.MachineUpdateParams{Zone: "rack-a", Pool: "gpu"}, nil); err != nil {
		t.Fatalf("Machine.Update zone/pool: %v", err)
	}
	if ms, err := gc.Machines.Get(&entity.MachinesParams{Zone: []string{"rack-a"}, Pool: []string{"gpu"}}); err != nil || len(ms) != 1 || ms[0].Zone.Name != "rack-a" || ms[0].Pool.Name != "gpu" {
		t.Errorf("machines in rack-a/gpu: %v, %v", ms, err)
	}
	if _, err := gc.Machines.Allocate(&entity.MachineAllocateParams{Zone: "default"}); err == nil {
		t.Errorf("allocated from the empty default zone")
	}
	m, err := gc.Machines.Allocate(&entity.MachineAllocateParams{Zone: "rack-a", Pool: "gpu", DryRun: true})
	if err != nil || m.SystemID != id || m.Status != node.StatusReady {
		t.Errorf("dry-run allocate = %v, %v (want the Ready machine, untouched)", m, err)
	}

	// Tags: CRUD and update_nodes.
	tag, err := gc.Tags.Create(&entity.TagParams{Name: "nvme", Comment: "has NVMe", KernelOpts: "nvme_core.multipath=0"})
	if err != nil {
		t.Fatalf("Tags.Create: %v", err)
	}
	requireSet(t, "tag", tag, "Name", "Comment", "KernelOpts", "ResourceURI")
	if err := gc.Tag.AddMachines("nvme", []string{id}); err != nil {
		t.Fatalf("Tag.AddMachines: %v", err)
	}
	tagged, err := gc.Tag.GetMachines("nvme")
	if err != nil || len(tagged) != 1 || tagged[0].SystemID != id || !contains(tagged[0].TagNames, "nvme") {
		t.Errorf("Tag.GetMachines = %v, %v", tagged, err)
	}
	if ms, err := gc.Machines.Get(&entity.MachinesParams{Tags: []string{"nvme"}}); err != nil || len(ms) != 1 {
		t.Errorf("machines tagged nvme: %v, %v", ms, err)
	}
	if m, err := gc.Machines.Allocate(&entity.MachineAllocateParams{Tags: []string{"nvme"}, DryRun: true}); err != nil || m.SystemID != id {
		t.Errorf("allocate by tag: %v, %v", m, err)
	}
	upd, err := gc.Tag.Update("nvme", &entity.TagParams{Name: "nvme", Comment: "NVMe drives", KernelOpts: "quiet"})
	if err != nil || upd.Comment != "NVMe drives" || upd.KernelOpts != "quiet" {
		t.Errorf("Tag.Update = %+v, %v", upd, err)
	}
	ren, err := gc.Tag.Update("nvme", &entity.TagParams{Name: "fast-disk"})
	if err != nil || ren.Name != "fast-disk" || ren.ResourceURI != APIPrefix+"/tags/fast-disk/" {
		t.Errorf("Tag.Update renaming = %+v, %v", ren, err)
	}
	if ms, _ := gc.Machines.Get(&entity.MachinesParams{Tags: []string{"fast-disk"}}); len(ms) != 1 {
		t.Errorf("a renamed tag lost its machines: %v", ms)
	}
	if err := gc.Tag.RemoveMachines("fast-disk", []string{id}); err != nil {
		t.Fatalf("Tag.RemoveMachines: %v", err)
	}
	if ms, _ := gc.Tag.GetMachines("fast-disk"); len(ms) != 0 {
		t.Errorf("machines after RemoveMachines: %v", ms)
	}
	if err := gc.Tag.Delete("fast-disk"); err != nil {
		t.Fatalf("Tag.Delete: %v", err)
	}
	if ts, err := gc.Tags.Get(); err != nil || len(ts) != 0 {
		t.Errorf("Tags.Get after delete = %v, %v", ts, err)
	}
	_, err = gc.Tag.Get("fast-disk")
	wantServerError(t, "Tag.Get of a deleted tag", err, http.StatusNotFound)

	// Boot resources.
	brs, err := gc.BootResources.Get(&entity.BootResourcesReadParams{})
	if err != nil || len(brs) == 0 {
		t.Fatalf("BootResources.Get = %v, %v", brs, err)
	}
	requireSet(t, "boot resource", &brs[0], "ID", "Type", "Name", "Architecture", "Subarches", "ResourceURI")
	if imp, err := gc.BootResources.IsImporting(); err != nil || imp {
		t.Errorf("IsImporting = %v, %v", imp, err)
	}

	// Events.
	evs, err := gc.Events.Get(&entity.EventParams{ID: id})
	if err != nil || evs.Count == 0 || len(evs.Events) != evs.Count {
		t.Fatalf("Events.Get(id) = %+v, %v", evs, err)
	}
	requireSet(t, "event", &evs.Events[0], "ID", "Node", "Hostname", "Type", "Level", "Description", "Created")
	l.enlist(6, "noise")
	if evs, err := gc.Events.Get(&entity.EventParams{Hostname: "zoned"}); err != nil || evs.Count == 0 {
		t.Errorf("Events.Get(hostname) = %+v, %v", evs, err)
	} else {
		for _, e := range evs.Events {
			if e.Hostname != "zoned" {
				t.Errorf("Events.Get(hostname=zoned) returned an event of %s", e.Hostname)
			}
		}
	}
	if evs, err := gc.Events.Get(&entity.EventParams{ID: id, Limit: "2"}); err != nil || evs.Count != 2 {
		t.Errorf("Events.Get(limit 2) = %d, %v", evs.Count, err)
	}

	// Domains, users, SSH keys, rack controllers.
	ds, err := gc.Domains.Get()
	if err != nil || len(ds) != 1 {
		t.Fatalf("Domains.Get = %v, %v", ds, err)
	}
	requireSet(t, "domain", &ds[0], "Name", "ResourceURI", "Authoritative", "IsDefault", "ResourceRecordCount")
	me, err := gc.Users.Whoami()
	if err != nil || me.UserName != "admin" || !me.IsSuperUser {
		t.Errorf("Whoami = %+v, %v", me, err)
	}
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAx slipway@lab"
	if k, err := gc.SSHKeys.Create(key); err != nil || k.Key != key {
		t.Errorf("SSHKeys.Create = %v, %v", k, err)
	}
	if ks, err := gc.SSHKeys.Get(); err != nil || len(ks) != 1 {
		t.Errorf("SSHKeys.Get = %v, %v", ks, err)
	}
	racks, err := gc.RackControllers.Get(&entity.RackControllersGetParams{})
	if err != nil || len(racks) != 1 {
		t.Errorf("RackControllers.Get = %v, %v", racks, err)
	}
	var series string
	if v, err := gc.MAASServer.Get("default_distro_series"); err != nil || json.Unmarshal(v, &series) != nil || series != "jammy" {
		t.Errorf("MAASServer.Get = %s, %v", v, err)
	}
	if err := gc.MAASServer.Post("default_distro_series", "noble"); err != nil {
		t.Errorf("MAASServer.Post: %v", err)
	}

	// Zone and pool deletion: MAAS refuses to delete a pool with machines.
	err = gc.ResourcePool.Delete(p.ID)
	wantServerError(t, "deleting a pool with machines", err, http.StatusBadRequest, "Pool has machines in it")
	if _, err := gc.Machine.Update(id, &entity.MachineUpdateParams{Zone: "default", Pool: "default"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := gc.ResourcePool.Delete(p.ID); err != nil {
		t.Errorf("ResourcePool.Delete: %v", err)
	}
	if _, err := gc.ResourcePool.Get(p.ID); err == nil {
		t.Errorf("a deleted pool is still there")
	}
	if err := gc.Zone.Delete("rack-a"); err != nil {
		t.Errorf("Zone.Delete: %v", err)
	}
	err = gc.Zone.Delete("default")
	wantServerError(t, "deleting the default zone", err, http.StatusBadRequest)
}

// TestConformanceMachineShape checks the machine JSON in each state against
// gomaasclient's entity.Machine, key for key, and gomaasapi's schema.
func TestConformanceMachineShape(t *testing.T) {
	l := newSimLab(t, nil)
	c := l.gomaasapiController()
	id := l.enlist(1, "shape")
	check := func(state string) {
		t.Helper()
		m := l.machine(id)
		checkMachineJSON(t, state, m)
		if _, err := c.Machines(gomaasapi.MachinesArgs{SystemIDs: []string{id}}); err != nil {
			t.Errorf("%s: gomaasapi cannot read the machine: %v", state, err)
		}
		var em entity.Machine
		b, _ := json.Marshal(m)
		if err := json.Unmarshal(b, &em); err != nil {
			t.Errorf("%s: entity.Machine: %v", state, err)
		}
	}
	check("New")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=commission", nil, nil)
	l.waitStatus(id, StatusReady)
	check("Ready")
	var alloc map[string]any
	l.must(http.StatusOK, "POST", "/machines/?op=allocate", url.Values{"system_id": {id}}, &alloc)
	if _, ok := alloc["constraints_by_type"]; !ok {
		t.Errorf("allocate answers no constraints_by_type, which gomaasapi requires")
	}
	check("Allocated")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=deploy", nil, nil)
	check("Deploying")
	l.waitStatus(id, StatusDeployed)
	check("Deployed")
	l.must(http.StatusOK, "POST", "/machines/"+id+"/?op=mark_broken", url.Values{"comment": {"disk"}}, nil)
	check("Broken")
}

// ---------------------------------------------------------------------------
// Networking (networking_api.go).

func TestConformanceNetworkingGomaasclient(t *testing.T) {
	l := newSimLab(t, nil)
	gc := l.gomaasclient()

	// Fabrics.
	fab, err := gc.Fabrics.Create(&entity.FabricParams{Name: "fab-conf", ClassType: "10g"})
	requireMAAS(t, "Fabrics.Create", "POST /fabrics/", "200 and the new fabric with its untagged VLAN", err)
	requireSet(t, "fabric", fab, "ID", "Name", "ClassType", "ResourceURI", "VLANs")
	if len(fab.VLANs) != 1 || fab.VLANs[0].VID != 0 || fab.VLANs[0].Name != "untagged" {
		t.Errorf("a new fabric has VLANs %+v, want its untagged VLAN", fab.VLANs)
	}
	fabs, err := gc.Fabrics.Get()
	if err != nil || len(fabs) < 2 {
		t.Errorf("Fabrics.Get = %v, %v", fabs, err)
	}
	if got, err := gc.Fabric.Get(fab.ID); err != nil || got.Name != "fab-conf" {
		t.Errorf("Fabric.Get = %v, %v", got, err)
	}
	if got, err := gc.Fabric.Update(fab.ID, &entity.FabricParams{Name: "fab-renamed"}); err != nil || got.Name != "fab-renamed" {
		t.Errorf("Fabric.Update = %v, %v", got, err)
	}

	// VLANs.
	vl, err := gc.VLANs.Create(fab.ID, &entity.VLANParams{VID: 100, Name: "storage", MTU: 9000})
	requireMAAS(t, "VLANs.Create", "POST /fabrics/{id}/vlans/", "200 and the new VLAN", err)
	requireSet(t, "vlan", vl, "ID", "VID", "Name", "MTU", "Fabric", "FabricID", "ResourceURI", "Space")
	if vl.FabricID != fab.ID || vl.MTU != 9000 {
		t.Errorf("VLAN %+v", vl)
	}
	if vls, err := gc.VLANs.Get(fab.ID); err != nil || len(vls) != 2 {
		t.Errorf("VLANs.Get = %v, %v", vls, err)
	}
	if got, err := gc.VLAN.Get(fab.ID, 100); err != nil || got.ID != vl.ID {
		t.Errorf("VLAN.Get(fabric, vid) = %v, %v", got, err)
	}
	if got, err := gc.VLAN.Update(fab.ID, 100, &entity.VLANParams{MTU: 1500, Name: "storage"}); err != nil || got.MTU != 1500 {
		t.Errorf("VLAN.Update = %v, %v", got, err)
	}

	// Spaces.
	sp, err := gc.Spaces.Create("storage-space")
	requireMAAS(t, "Spaces.Create", "POST /spaces/", "200 and the new space", err)
	requireSet(t, "space", sp, "ID", "Name", "ResourceURI")

	// Subnets.
	sn, err := gc.Subnets.Create(&entity.SubnetParams{CIDR: "10.20.0.0/24", Name: "storage-net", VLAN: strconv.Itoa(vl.ID),
		GatewayIP: "10.20.0.1", DNSServers: []string{"10.20.0.2"}, Managed: true})
	requireMAAS(t, "Subnets.Create", "POST /subnets/", "200 and the new subnet", err)
	requireSet(t, "subnet", sn, "ID", "Name", "CIDR", "VLAN", "GatewayIP", "DNSServers", "Space", "ResourceURI", "Managed")
	if sn.VLAN.ID != vl.ID || sn.GatewayIP.String() != "10.20.0.1" {
		t.Errorf("subnet %+v", sn)
	}
	if sns, err := gc.Subnets.Get(); err != nil || len(sns) == 0 {
		t.Errorf("Subnets.Get = %v, %v", sns, err)
	}
	if got, err := gc.Subnet.Update(sn.ID, &entity.SubnetParams{CIDR: "10.20.0.0/24", GatewayIP: "10.20.0.254", Managed: true}); err != nil || got.GatewayIP.String() != "10.20.0.254" {
		t.Errorf("Subnet.Update = %v, %v", got, err)
	}
	sn2, err := gc.Subnets.Create(&entity.SubnetParams{CIDR: "10.30.0.0/24", Fabric: strconv.Itoa(fab.ID), VID: 0})
	if err != nil {
		t.Fatalf("Subnets.Create on fabric/vid: %v", err)
	}
	if sn2.VLAN.FabricID != fab.ID || sn2.VLAN.VID != 0 {
		t.Errorf("subnet created with fabric and vid 0 is on VLAN %+v", sn2.VLAN)
	}

	// IP ranges.
	ipr, err := gc.IPRanges.Create(&entity.IPRangeParams{Type: "dynamic", Subnet: strconv.Itoa(sn.ID), StartIP: "10.20.0.100", EndIP: "10.20.0.199", Comment: "pxe"})
	requireMAAS(t, "IPRanges.Create", "POST /ipranges/", "200 and the new IP range", err)
	requireSet(t, "ip range", ipr, "ID", "Type", "StartIP", "EndIP", "Subnet", "ResourceURI", "Comment")
	if ipr.Subnet.ID != sn.ID || ipr.StartIP.String() != "10.20.0.100" {
		t.Errorf("IP range %+v", ipr)
	}
	if rs, err := gc.IPRanges.Get(); err != nil || len(rs) != 1 {
		t.Errorf("IPRanges.Get = %v, %v", rs, err)
	}
	if got, err := gc.IPRange.Update(ipr.ID, &entity.IPRangeParams{Type: "dynamic", Subnet: strconv.Itoa(sn.ID), StartIP: "10.20.0.100", EndIP: "10.20.0.150"}); err != nil || got.EndIP.String() != "10.20.0.150" {
		t.Errorf("IPRange.Update = %v, %v", got, err)
	}
	_, err = gc.IPRanges.Create(&entity.IPRangeParams{Type: "reserved", Subnet: strconv.Itoa(sn.ID), StartIP: "10.20.0.120", EndIP: "10.20.0.130"})
	if err == nil {
		t.Errorf("an IP range overlapping another was accepted")
	} else if se, ok := serverError(err); !ok || se.StatusCode != http.StatusBadRequest {
		t.Errorf("overlapping IP range: %v, want a 400", err)
	}

	// Static routes.
	rt, err := gc.StaticRoutes.Create(&entity.StaticRouteParams{Source: strconv.Itoa(sn.ID), Destination: strconv.Itoa(sn2.ID), GatewayIP: "10.20.0.254", Metric: 10})
	requireMAAS(t, "StaticRoutes.Create", "POST /static-routes/", "200 and the new static route", err)
	requireSet(t, "static route", rt, "ID", "Source", "Destination", "GatewayIP", "Metric", "ResourceURI")

	// Deletes, innermost first.
	if err := gc.StaticRoute.Delete(rt.ID); err != nil {
		t.Errorf("StaticRoute.Delete: %v", err)
	}
	if err := gc.IPRange.Delete(ipr.ID); err != nil {
		t.Errorf("IPRange.Delete: %v", err)
	}
	for _, id := range []int{sn.ID, sn2.ID} {
		if err := gc.Subnet.Delete(id); err != nil {
			t.Errorf("Subnet.Delete: %v", err)
		}
	}
	_, err = gc.Subnet.Get(sn.ID)
	wantServerError(t, "Subnet.Get of a deleted subnet", err, http.StatusNotFound)
	if err := gc.VLAN.Delete(fab.ID, 100); err != nil {
		t.Errorf("VLAN.Delete: %v", err)
	}
	if err := gc.Space.Delete(sp.ID); err != nil {
		t.Errorf("Space.Delete: %v", err)
	}
	if err := gc.Fabric.Delete(fab.ID); err != nil {
		t.Errorf("Fabric.Delete: %v", err)
	}
}

func TestConformanceInterfacesGomaasclient(t *testing.T) {
	l := newSimLab(t, nil)
	gc := l.gomaasclient()
	id := l.ready(1, "ifaces")

	ifs, err := gc.NetworkInterfaces.Get(id)
	requireMAAS(t, "NetworkInterfaces.Get", "GET /nodes/{system_id}/interfaces/", "200 and the list of the machine's interfaces", err)
	if len(ifs) != 2 {
		t.Fatalf("%d interfaces, want 2", len(ifs))
	}
	for i := range ifs {
		requireSet(t, "interface", &ifs[i], "ID", "Name", "Type", "MACAddress", "VLAN", "EffectiveMTU", "SystemID", "ResourceURI", "Enabled")
	}
	if got, err := gc.NetworkInterface.Get(id, ifs[0].ID); err != nil || got.Name != ifs[0].Name {
		t.Errorf("NetworkInterface.Get = %v, %v", got, err)
	}

	// A bond of both NICs (first cabled to the same VLAN: MAAS bonds only
	// interfaces of one VLAN), a VLAN on it, an address on the VLAN.
	moved, err := gc.NetworkInterface.Update(id, ifs[1].ID, &entity.NetworkInterfaceUpdateParams{VLAN: ifs[0].VLAN.ID})
	if err != nil || moved.VLAN.ID != ifs[0].VLAN.ID {
		t.Fatalf("moving %s to VLAN %d: %v, %v", ifs[1].Name, ifs[0].VLAN.ID, moved, err)
	}
	bond, err := gc.NetworkInterfaces.CreateBond(id, &entity.NetworkInterfaceBondParams{Name: "bond0", Parents: []int{ifs[0].ID, ifs[1].ID},
		BondMode: "802.3ad", BondLACPRate: "fast", BondXMitHashPolicy: "layer3+4", MTU: 9000, VLAN: ifs[0].VLAN.ID})
	requireMAAS(t, "CreateBond", "POST /nodes/{system_id}/interfaces/?op=create_bond", "200 and the new bond interface", err)
	requireSet(t, "bond", bond, "ID", "Name", "Type", "Parents", "MACAddress", "Params", "EffectiveMTU")
	if bond.Type != "bond" || !sameSet(bond.Parents, []string{ifs[0].Name, ifs[1].Name}) {
		t.Errorf("bond %+v", bond)
	}
	fab, err := gc.Fabric.Get(ifs[0].VLAN.FabricID)
	if err != nil {
		t.Fatalf("Fabric.Get: %v", err)
	}
	vl, err := gc.VLANs.Create(fab.ID, &entity.VLANParams{VID: 200, Name: "tenant"})
	if err != nil {
		t.Fatalf("VLANs.Create: %v", err)
	}
	sn, err := gc.Subnets.Create(&entity.SubnetParams{CIDR: "10.40.0.0/24", VLAN: strconv.Itoa(vl.ID), GatewayIP: "10.40.0.1"})
	if err != nil {
		t.Fatalf("Subnets.Create: %v", err)
	}
	vif, err := gc.NetworkInterfaces.CreateVLAN(id, &entity.NetworkInterfaceVLANParams{Parents: []int{bond.ID}, VLAN: vl.ID})
	requireMAAS(t, "CreateVLAN", "POST /nodes/{system_id}/interfaces/?op=create_vlan", "200 and the new VLAN interface", err)
	if vif.Type != "vlan" || vif.Name != "bond0.200" || vif.VLAN.ID != vl.ID {
		t.Errorf("VLAN interface %+v", vif)
	}
	linked, err := gc.NetworkInterface.LinkSubnet(id, vif.ID, &entity.NetworkInterfaceLinkParams{Mode: "STATIC", Subnet: sn.ID, IPAddress: "10.40.0.10", DefaultGateway: true})
	requireMAAS(t, "LinkSubnet", "POST /nodes/{system_id}/interfaces/{id}/?op=link_subnet", "200 and the interface with its new link", err)
	if len(linked.Links) != 1 || linked.Links[0].IPAddress != "10.40.0.10" || linked.Links[0].Subnet.ID != sn.ID || !strings.EqualFold(linked.Links[0].Mode, "static") {
		t.Errorf("links after LinkSubnet: %+v", linked.Links)
	}
	if m, _ := gc.Machine.Get(id); !containsIP(m.IPAddresses, "10.40.0.10") {
		t.Errorf("machine ip_addresses %v lack the linked address", m.IPAddresses)
	}
	// MAAS keeps the interface up: what remains is a link_up link.
	if un, err := gc.NetworkInterface.UnlinkSubnet(id, vif.ID, linked.Links[0].ID); err != nil {
		t.Errorf("UnlinkSubnet: %v", err)
	} else {
		for _, ln := range un.Links {
			if ln.IPAddress != "" || !strings.EqualFold(ln.Mode, "link_up") {
				t.Errorf("link after UnlinkSubnet: %+v", ln)
			}
		}
	}
	if up, err := gc.NetworkInterface.Update(id, bond.ID, &entity.NetworkInterfaceUpdateParams{MTU: 1500}); err != nil || up.EffectiveMTU != 1500 {
		t.Errorf("NetworkInterface.Update = %v, %v", up, err)
	}
	if err := gc.NetworkInterface.Delete(id, vif.ID); err != nil {
		t.Errorf("Delete VLAN interface: %v", err)
	}
	if err := gc.NetworkInterface.Delete(id, bond.ID); err != nil {
		t.Errorf("Delete bond: %v", err)
	}
	if ifs, _ := gc.NetworkInterfaces.Get(id); len(ifs) != 2 {
		t.Errorf("%d interfaces after deleting the bond, want 2", len(ifs))
	}

	// Deployed machines' interfaces cannot change.
	dep := l.deployed(2, "ifaces-deployed")
	dif, _ := gc.NetworkInterfaces.Get(dep)
	_, err = gc.NetworkInterfaces.CreateBond(dep, &entity.NetworkInterfaceBondParams{Name: "bond0", Parents: []int{dif[0].ID, dif[1].ID}})
	if err == nil {
		t.Errorf("a bond was created on a Deployed machine")
	} else if se, ok := serverError(err); !ok || se.StatusCode != http.StatusConflict {
		t.Errorf("bond on a Deployed machine: %v, want a 409", err)
	}
}

// TestConformanceCreateVLANParents: gomaasclient creates VLAN interfaces
// with "parents", the MAAS CLI with "parent"; MAAS copies "parent" into the
// form's "parents" field, so both spellings work.
func TestConformanceCreateVLANParents(t *testing.T) {
	l := newSimLab(t, nil)
	gc := l.gomaasclient()
	id := l.ready(1, "vlan-parents")
	ifs, err := gc.NetworkInterfaces.Get(id)
	requireMAAS(t, "NetworkInterfaces.Get", "GET /nodes/{system_id}/interfaces/", "200 and the list of the machine's interfaces", err)
	newVLAN := func(vid int) *entity.VLAN {
		vl, err := gc.VLANs.Create(ifs[0].VLAN.FabricID, &entity.VLANParams{VID: vid})
		requireMAAS(t, "VLANs.Create", "POST /fabrics/{id}/vlans/", "200 and the new VLAN", err)
		return vl
	}
	vl := newVLAN(300)
	vif, err := gc.NetworkInterfaces.CreateVLAN(id, &entity.NetworkInterfaceVLANParams{Parents: []int{ifs[0].ID}, VLAN: vl.ID})
	requireMAAS(t, "CreateVLAN with parents", "POST /nodes/{system_id}/interfaces/?op=create_vlan", "200 and the new VLAN interface", err)
	if vif.Type != "vlan" || len(vif.Parents) != 1 || vif.Parents[0] != ifs[0].Name {
		t.Errorf("VLAN interface made with \"parents\": %+v", vif)
	}
	vl2 := newVLAN(301)
	var cli entity.NetworkInterface
	l.must(http.StatusOK, "POST", "/nodes/"+id+"/interfaces/?op=create_vlan",
		url.Values{"parent": {strconv.Itoa(ifs[0].ID)}, "vlan": {strconv.Itoa(vl2.ID)}}, &cli)
	if cli.Type != "vlan" || len(cli.Parents) != 1 || cli.Parents[0] != ifs[0].Name || cli.VLAN.ID != vl2.ID {
		t.Errorf("VLAN interface made with \"parent\": %+v", cli)
	}
}

func containsIP(ips []net.IP, want string) bool {
	for _, ip := range ips {
		if ip.String() == want {
			return true
		}
	}
	return false
}

func TestConformanceNetworkingGomaasapi(t *testing.T) {
	l := newSimLab(t, nil)
	c := l.gomaasapiController()
	id := l.ready(1, "juju-net")

	fabs, err := c.Fabrics()
	requireMAAS(t, "Fabrics", "GET /fabrics/", "200 and the list of fabrics, each with its VLANs", err)
	names := map[string]bool{}
	for _, f := range fabs {
		names[f.Name()] = true
		if len(f.VLANs()) == 0 {
			t.Errorf("fabric %s has no VLANs", f.Name())
		}
	}
	if !names["fabric-0"] || !names["prov"] || !names["data"] {
		t.Errorf("fabrics %v, want fabric-0 and those commissioning found (prov, data)", names)
	}
	_, err = c.Spaces()
	requireMAAS(t, "Spaces", "GET /spaces/", "200 and the list of spaces, each with its subnets", err)
	_, err = c.StaticRoutes()
	requireMAAS(t, "StaticRoutes", "GET /static-routes/", "200 and the list of static routes", err)

	// Link the boot interface to a subnet, the way Juju does: find the
	// subnet through the spaces (MAAS lists an "undefined" space, id -1,
	// holding the subnets of VLANs without a space).
	gc := l.gomaasclient()
	ms, _ := c.Machines(gomaasapi.MachinesArgs{SystemIDs: []string{id}})
	boot := ms[0].BootInterface()
	if _, err := gc.Subnets.Create(&entity.SubnetParams{CIDR: "10.50.0.0/24", VLAN: strconv.Itoa(boot.VLAN().ID())}); err != nil {
		t.Fatalf("Subnets.Create: %v", err)
	}
	spaces, _ := c.Spaces()
	var target gomaasapi.Subnet
	for _, sp := range spaces {
		for _, sn := range sp.Subnets() {
			if sn.CIDR() == "10.50.0.0/24" {
				target = sn
			}
		}
	}
	if target == nil {
		t.Fatalf("gomaasapi does not see subnet 10.50.0.0/24 in any space (%d spaces): it finds subnets only through GET /spaces/", len(spaces))
	}
	err = boot.LinkSubnet(gomaasapi.LinkSubnetArgs{Mode: gomaasapi.LinkModeStatic, Subnet: target, IPAddress: "10.50.0.20"})
	requireMAAS(t, "LinkSubnet", "POST /nodes/{system_id}/interfaces/{id}/?op=link_subnet", "200 and the interface with its new link", err)
	if links := boot.Links(); len(links) != 1 || links[0].IPAddress() != "10.50.0.20" || links[0].Subnet() == nil {
		t.Errorf("links %v", links)
	}
	if err := boot.UnlinkSubnet(target); err != nil {
		t.Errorf("UnlinkSubnet: %v", err)
	}
}

// ---------------------------------------------------------------------------
// Storage (storage_api.go).

func TestConformanceStorageGomaasclient(t *testing.T) {
	l := newSimLab(t, nil)
	gc := l.gomaasclient()
	id := l.ready(1, "disks")

	bds, err := gc.BlockDevices.Get(id)
	requireMAAS(t, "BlockDevices.Get", "GET /nodes/{system_id}/blockdevices/", "200 and the list of the machine's block devices", err)
	if len(bds) != 2 {
		t.Fatalf("%d block devices, want 2", len(bds))
	}
	for i := range bds {
		requireSet(t, "block device", &bds[i], "ID", "Name", "Type", "Model", "Serial", "IDPath", "Path", "Size", "BlockSize", "SystemID", "ResourceURI", "UsedFor", "AvailableSize")
	}
	sda, nvme := bds[0], bds[1]
	if got, err := gc.BlockDevice.Get(id, sda.ID); err != nil || got.Name != "sda" {
		t.Errorf("BlockDevice.Get = %v, %v", got, err)
	}

	// Partition sda, format and mount it.
	part, err := gc.BlockDevicePartitions.Create(id, sda.ID, &entity.BlockDevicePartitionParams{Size: 100 << 30})
	requireMAAS(t, "BlockDevicePartitions.Create", "POST /nodes/{system_id}/blockdevices/{id}/partitions/", "200 and the new partition", err)
	requireSet(t, "partition", part, "ID", "UUID", "Size", "Path", "Type", "SystemID", "DeviceID", "ResourceURI")
	f, err := gc.BlockDevicePartition.Format(id, sda.ID, part.ID, "ext4", "root")
	requireMAAS(t, "BlockDevicePartition.Format", "POST /nodes/{system_id}/blockdevices/{id}/partition/{id}?op=format",
		"200 and the partition with its new filesystem", err)
	if f.FileSystem.FSType != "ext4" {
		t.Fatalf("partition Format: filesystem %+v, want ext4", f.FileSystem)
	}
	mnt, err := gc.BlockDevicePartition.Mount(id, sda.ID, part.ID, "/", "")
	if err != nil || mnt.FileSystem.MountPoint != "/" {
		t.Errorf("partition Mount = %v, %v", mnt, err)
	}
	if ps, err := gc.BlockDevicePartitions.Get(id, sda.ID); err != nil || len(ps) != 1 {
		t.Errorf("BlockDevicePartitions.Get = %v, %v", ps, err)
	}
	if got, _ := gc.BlockDevice.Get(id, sda.ID); got != nil && (len(got.Partitions) != 1 || got.PartitionTableType == "") {
		t.Errorf("sda after partitioning: %d partitions, table %q", len(got.Partitions), got.PartitionTableType)
	}

	// An LVM volume group on the NVMe drive, with a logical volume.
	vg, err := gc.VolumeGroups.Create(id, &entity.VolumeGroupCreateParams{Name: "vg0", BlockDevices: []string{strconv.Itoa(nvme.ID)}})
	requireMAAS(t, "VolumeGroups.Create", "POST /nodes/{system_id}/volume-groups/", "200 and the new volume group", err)
	requireSet(t, "volume group", vg, "ID", "Name", "UUID", "Size", "AvailableSize", "SystemID", "ResourceURI")
	lv, err := gc.VolumeGroup.CreateLogicalVolume(id, vg.ID, &entity.LogicalVolumeParams{Name: "data", Size: 500 << 30})
	requireMAAS(t, "CreateLogicalVolume", "POST /nodes/{system_id}/volume-groups/{id}/?op=create_logical_volume", "200 and the new logical volume (a virtual block device)", err)
	if lv.Type != "virtual" || lv.Size == 0 {
		t.Errorf("logical volume %+v", lv)
	}
	if m, _ := gc.Machine.Get(id); m != nil && (len(m.VolumeGroups) != 1 || len(m.VirtualBlockDeviceSet) != 1) {
		t.Errorf("machine lists %d volume groups and %d virtual block devices, want 1 and 1", len(m.VolumeGroups), len(m.VirtualBlockDeviceSet))
	}

	// Restore the default storage: back to two bare disks.
	if err := gc.Machine.RestoreStorageConfiguration(id); err != nil {
		t.Errorf("RestoreStorageConfiguration: %v", err)
	}
	if bds, _ := gc.BlockDevices.Get(id); len(bds) != 2 || len(bds[0].Partitions) != 0 {
		t.Errorf("after restoring storage: %v", bds)
	}
}

func TestConformanceStorageGomaasapi(t *testing.T) {
	l := newSimLab(t, nil)
	c := l.gomaasapiController()
	id := l.ready(1, "juju-disks")
	ms, err := c.Machines(gomaasapi.MachinesArgs{SystemIDs: []string{id}})
	if err != nil || len(ms) != 1 {
		t.Fatalf("Machines: %v %v", ms, err)
	}
	m := ms[0]
	bds := m.BlockDevices()
	if len(bds) != 2 {
		t.Fatalf("%d block devices, want 2", len(bds))
	}
	for _, b := range bds {
		if b.Name() == "" || b.Path() == "" || b.Size() == 0 || b.BlockSize() == 0 || b.IDPath() == "" || b.Model() == "" {
			t.Errorf("block device not fully decoded: %q %q %d %d %q %q", b.Name(), b.Path(), b.Size(), b.BlockSize(), b.IDPath(), b.Model())
		}
		if m.BlockDevice(b.ID()) == nil || m.PhysicalBlockDevice(b.ID()) == nil {
			t.Errorf("machine.BlockDevice(%d) not found", b.ID())
		}
	}
	// Partitions show through the machine (Juju's storage constraints read them).
	r := l.do("POST", fmt.Sprintf("/nodes/%s/blockdevices/%d/partitions/", id, bds[0].ID()), url.Values{"size": {strconv.Itoa(50 << 30)}})
	if r.code != http.StatusOK {
		t.Fatalf("POST /nodes/{system_id}/blockdevices/{id}/partitions/: %s; a real MAAS answers 200 and the new partition", r)
	}
	ms, err = c.Machines(gomaasapi.MachinesArgs{SystemIDs: []string{id}})
	if err != nil {
		t.Fatalf("Machines after partitioning: %v", err)
	}
	parts := ms[0].BlockDevice(bds[0].ID()).Partitions()
	if len(parts) != 1 || parts[0].Size() != 50<<30 || parts[0].Path() == "" || parts[0].UUID() == "" {
		t.Errorf("partitions through gomaasapi: %v", parts)
	} else if ms[0].Partition(parts[0].ID()) == nil {
		t.Errorf("machine.Partition(%d) not found", parts[0].ID())
	}
}

func TestConformanceNodeDevicesGomaasclient(t *testing.T) {
	l := newSimLab(t, nil)
	gc := l.gomaasclient()
	id := l.ready(1, "devices")
	devs, err := gc.NodeDevices.Get(id, &entity.NodeDeviceParams{})
	requireMAAS(t, "NodeDevices.Get", "GET /nodes/{system_id}/devices/", "200 and the list of the machine's PCI and USB devices", err)
	pci := map[string]entity.NodeDevice{}
	for _, d := range devs {
		pci[d.PCIAddress] = d
	}
	if d, ok := pci["0000:3b:00.0"]; !ok || d.PhysicalNetworkInterface.Name != "ens3f0" {
		t.Errorf("node device at 0000:3b:00.0: %+v (want the NIC ens3f0)", d)
	}
	if d, ok := pci["0000:5e:00.0"]; !ok || d.PhysicalBlockDevice.Name != "nvme0n1" {
		t.Errorf("node device at 0000:5e:00.0: %+v (want the disk nvme0n1)", d)
	}
}

// statusByName must accept the enum names the machines filter takes.
func TestStatusFilterNames(t *testing.T) {
	for name, want := range map[string]int{
		"new": StatusNew, "ready": StatusReady, "deployed": StatusDeployed, "failed_commissioning": StatusFailedCommissioning,
		"failed_releasing": StatusFailedReleasing, "failed_entering_rescue_mode": StatusFailedEnteringRescueMode,
		"failed_exiting_rescue_mode": StatusFailedExitingRescueMode, "disk_erasing": StatusDiskErasing, "Failed deployment": StatusFailedDeployment,
	} {
		if got, ok := statusByName(name); !ok || got != want {
			t.Errorf("statusByName(%q) = %d, %v; want %d", name, got, ok, want)
		}
	}
	if _, ok := statusByName("bogus"); ok {
		t.Errorf("statusByName accepted bogus")
	}
}

// appendJSON (ServeHTTP's encoder) must write what encoding/json writes.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	one := 1
	var nilInt *int
	strs := []string{"", "plain", `"quoted" \back\slash`, "<b>&amp;</b>", "\u2028\u2029", "tab\tnew\nline\rcr\bbs\fff",
		"\x00\x01\x1f\x7f", "caf\u00e9 \u65e5\u672c \U0001F600", "bad \xff\xfe utf8 \xc3", "\xed\xa0\x80 surrogate"}
	for c := 0; c < 256; c++ {
		strs = append(strs, string([]byte{byte(c)}), "a"+string([]byte{byte(c)})+"z")
	}
	rnd := newTestRand(1)
	for i := 0; i < 500; i++ {
		b := make([]byte, rnd.Intn(12))
		for j := range b {
			b[j] = byte(rnd.Intn(256))
		}
		strs = append(strs, string(b))
	}
	vals := []any{nil, true, false, 0, -1, 42, int64(-1 << 62), 1.5, 0.0, math.Copysign(0, -1), 1e-7, 1e-6, 1e21, 1e20, 123456789.123,
		9204.621312000001, 5e-324, 1.7976931348623157e308, float32(1.1), uint8(3), &one, nilInt,
		map[string]any(nil), []any(nil), []string(nil), map[string]string(nil), []int(nil), []int{1, 2},
		map[string]any{}, []any{}, []string{}, map[string]string{"b": "2", "a": "<1>"},
		json.RawMessage(`{"z":1,  "a":[1, 2]}`), struct {
			A string `json:"a"`
			B *int   `json:"b"`
		}{"x", nil},
		map[string]any{"z": 1, "a": []any{map[string]any{"k": nil, "j": []string{"<"}}, 2.5}, "m": map[string]int{"y": 1, "x": 2}},
		[]map[string]any{{"b": 1, "a": 2}},
	}
	for _, s := range strs {
		vals = append(vals, s, map[string]any{s: s}, []string{s}, map[string]string{s: s})
	}
	l := newSimLab(t, nil)
	id := l.deployed(1, "json")
	l.s.mu.Lock()
	vals = append(vals, l.s.renderMachine(l.s.machines[id]))
	l.s.mu.Unlock()
	for _, v := range vals {
		var want strings.Builder
		if err := json.NewEncoder(&want).Encode(v); err != nil {
			t.Fatalf("encoding/json %#v: %v", v, err)
		}
		got, err := appendJSON(nil, v)
		if err != nil {
			t.Errorf("appendJSON(%#v): %v", v, err)
			continue
		}
		if string(got)+"\n" != want.String() {
			t.Errorf("appendJSON(%#v)\n got %s\nwant %s", v, got, want.String())
		}
	}
	for _, bad := range []any{math.NaN(), math.Inf(1), map[string]any{"x": math.Inf(-1)}} {
		if _, err := appendJSON(nil, bad); err == nil {
			t.Errorf("appendJSON(%v) did not fail like encoding/json", bad)
		}
	}
}

func newTestRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) }

// The MAC index behind Enlist and POST /machines/ must see every change.
func TestMACIndex(t *testing.T) {
	l := newSimLab(t, nil)
	gc := l.gomaasclient()
	a := l.s.Enlist(labHardware(1), "ipmi", PowerParams{})
	if again := l.s.Enlist(labHardware(1), "ipmi", PowerParams{}); again != a {
		t.Fatalf("enlisting known hardware again made %s, want %s", again, a)
	}
	r := l.do("POST", "/machines/", url.Values{"mac_addresses": {strings.ToUpper(labMAC(1, 2))}})
	if r.code != http.StatusBadRequest || !strings.Contains(string(r.body), "already in use") {
		t.Errorf("creating a machine with a MAC in use: %s", r)
	}
	// Created through the API, found by Enlist.
	b := l.enlist(2, "b")
	if got := l.s.Enlist(labHardware(2), "ipmi", PowerParams{}); got != b {
		t.Errorf("Enlist of hardware created through the API: %s, want %s", got, b)
	}
	// Deleted through the API: enlisting again makes a new machine.
	l.must(http.StatusNoContent, "DELETE", "/machines/"+b+"/", nil, nil)
	if got := l.s.Enlist(labHardware(2), "ipmi", PowerParams{}); got == b {
		t.Errorf("Enlist returned the deleted machine %s", got)
	}
	// Commissioning rediscovers the interfaces; then a MAC changed through
	// the interfaces API is found under the new MAC.
	l.must(http.StatusOK, "POST", "/machines/"+a+"/?op=commission", nil, nil)
	l.waitStatus(a, StatusReady)
	if got := l.s.Enlist(labHardware(1), "ipmi", PowerParams{}); got != a {
		t.Errorf("Enlist after commissioning: %s, want %s", got, a)
	}
	ifs, err := gc.NetworkInterfaces.Get(a)
	if err != nil {
		t.Fatal(err)
	}
	const moved = "52:54:00:ff:ff:01"
	if _, err := gc.NetworkInterface.Update(a, ifs[0].ID, &entity.NetworkInterfaceUpdateParams{MACAddress: moved}); err != nil {
		t.Fatalf("changing a MAC: %v", err)
	}
	hw := labHardware(9)
	hw.NICs[0].MAC = moved
	if got := l.s.Enlist(hw, "ipmi", PowerParams{}); got != a {
		t.Errorf("Enlist by a changed MAC: %s, want %s", got, a)
	}
	r = l.do("POST", "/machines/", url.Values{"mac_addresses": {moved}})
	if r.code != http.StatusBadRequest {
		t.Errorf("creating a machine with a changed MAC in use: %s", r)
	}
}
