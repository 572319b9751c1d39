package maas

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/juju/gomaasapi/v2"
)

// netEnv is a simulator behind httptest with a gomaasapi controller and a
// raw, signed HTTP client for what gomaasapi cannot do.
type netEnv struct {
	t  *testing.T
	s  *Server
	hs *httptest.Server
	c  gomaasapi.Controller
}

func newNetEnv(t *testing.T) *netEnv {
	t.Helper()
	s := New(Options{APIKey: Credentials{"ck", "tk", "ts"}, TimeScale: 0.0001})
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	c, err := gomaasapi.NewController(gomaasapi.ControllerArgs{BaseURL: hs.URL + "/MAAS", APIKey: "ck:tk:ts"})
	if err != nil {
		t.Fatalf("gomaasapi.NewController: %v", err)
	}
	return &netEnv{t: t, s: s, hs: hs, c: c}
}

// call sends a signed request: the form goes in the body of POST and PUT,
// in the query string otherwise. path is relative to the API and may carry
// "?op=...".
func (e *netEnv) call(method, path string, form url.Values) (int, []byte) {
	e.t.Helper()
	target := e.hs.URL + APIPrefix + path
	var body io.Reader
	if form != nil && (method == http.MethodPost || method == http.MethodPut) {
		body = strings.NewReader(form.Encode())
	} else if form != nil {
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		target += sep + form.Encode()
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Authorization", `OAuth oauth_version="1.0", oauth_signature_method="PLAINTEXT", oauth_consumer_key="ck", `+
		`oauth_token="tk", oauth_signature="&ts", oauth_nonce="x", oauth_timestamp="1"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// obj expects the status and decodes a JSON object.
func (e *netEnv) obj(want int, method, path string, form url.Values) map[string]any {
	e.t.Helper()
	code, b := e.call(method, path, form)
	if code != want {
		e.t.Fatalf("%s %s %v: %d %s, want %d", method, path, form, code, b, want)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		e.t.Fatalf("%s %s: %v in %s", method, path, err, b)
	}
	return out
}

func (e *netEnv) list(method, path string, form url.Values) []any {
	e.t.Helper()
	code, b := e.call(method, path, form)
	if code != http.StatusOK {
		e.t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	var out []any
	if err := json.Unmarshal(b, &out); err != nil {
		e.t.Fatalf("%s %s: %v in %s", method, path, err, b)
	}
	return out
}

// fieldErr expects a 400 whose JSON field errors hold msg for field.
func (e *netEnv) fieldErr(method, path string, form url.Values, field, msg string) {
	e.t.Helper()
	code, b := e.call(method, path, form)
	var errs map[string][]string
	if code != http.StatusBadRequest || json.Unmarshal(b, &errs) != nil {
		e.t.Errorf("%s %s %v: %d %s, want 400 with field errors", method, path, form, code, b)
		return
	}
	for _, m := range errs[field] {
		if m == msg {
			return
		}
	}
	e.t.Errorf("%s %s %v: errors %s, want %s: %q", method, path, form, b, field, msg)
}

// textErr expects a status with a plain-text message.
func (e *netEnv) textErr(want int, method, path string, form url.Values, msg string) {
	e.t.Helper()
	code, b := e.call(method, path, form)
	if code != want || string(b) != msg {
		e.t.Errorf("%s %s %v: %d %q, want %d %q", method, path, form, code, b, want, msg)
	}
}

func idIn(o map[string]any) int { return int(o["id"].(float64)) }

func vals(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

func TestNetworkingFabricsAndVLANs(t *testing.T) {
	e := newNetEnv(t)

	f0 := e.obj(200, "GET", "/fabrics/0/", nil)
	if f0["name"] != "fabric-0" || f0["class_type"] != nil || f0["resource_uri"] != APIPrefix+"/fabrics/0/" {
		t.Errorf("default fabric %v", f0)
	}
	if vl := f0["vlans"].([]any); len(vl) != 1 || idIn(vl[0].(map[string]any)) != 5001 {
		t.Errorf("default fabric VLANs %v, want 5001", vl)
	}

	fab := e.obj(200, "POST", "/fabrics/", vals("class_type", "10g"))
	fid := idIn(fab)
	if fab["name"] != fmt.Sprintf("fabric-%d", fid) || fab["class_type"] != "10g" {
		t.Errorf("new fabric %v", fab)
	}
	untagged := fab["vlans"].([]any)[0].(map[string]any)
	if len(fab["vlans"].([]any)) != 1 || untagged["vid"] != 0.0 || untagged["name"] != "untagged" || untagged["fabric_id"] != float64(fid) {
		t.Errorf("new fabric VLANs %v", fab["vlans"])
	}
	e.fieldErr("POST", "/fabrics/", vals("name", "fabric-0"), "name", "Fabric with this Name already exists.")
	if got := e.obj(200, "PUT", fmt.Sprintf("/fabrics/%d/", fid), vals("name", "storage")); got["name"] != "storage" {
		t.Errorf("renamed fabric %v", got)
	}
	if got := e.obj(200, "GET", "/fabrics/storage/", nil); idIn(got) != fid {
		t.Errorf("fabric by name %v", got)
	}
	e.textErr(404, "GET", "/fabrics/999/", nil, "No Fabric matches the given query.")

	// VLANs are addressed by VID within their fabric.
	base := fmt.Sprintf("/fabrics/%d/vlans/", fid)
	v := e.obj(200, "POST", base, vals("vid", "10", "mtu", "9000"))
	if v["vid"] != 10.0 || v["name"] != "10" || v["mtu"] != 9000.0 || v["space"] != "undefined" || v["fabric"] != "storage" ||
		v["primary_rack"] != nil || v["resource_uri"] != fmt.Sprintf("%s/vlans/%d/", APIPrefix, idIn(v)) {
		t.Errorf("new VLAN %v", v)
	}
	e.fieldErr("POST", base, vals("vid", "10"), "__all__", "VLAN with this Vid and Fabric already exists.")
	e.fieldErr("POST", base, vals("name", "x"), "vid", "This field is required.")
	e.fieldErr("POST", base, vals("vid", "5000"), "vid", "VID must be between 0 and 4094.")
	e.fieldErr("POST", base, vals("vid", "ten"), "vid", "Enter a whole number.")
	e.fieldErr("POST", base, vals("vid", "11", "mtu", "100"), "mtu", "Ensure this value is greater than or equal to 552.")
	if got := e.obj(200, "GET", base+"10/", nil); idIn(got) != idIn(v) {
		t.Errorf("VLAN by vid %v", got)
	}
	if got := e.obj(200, "GET", fmt.Sprintf("/vlans/%d/", idIn(v)), nil); got["vid"] != 10.0 {
		t.Errorf("VLAN by id %v", got)
	}
	if got := e.list("GET", base, nil); len(got) != 2 {
		t.Errorf("fabric VLANs %v", got)
	}
	e.textErr(404, "GET", base+"11/", nil, "No VLAN matches the given query.")
	up := e.obj(200, "PUT", base+"10/", vals("name", "storage-vlan", "mtu", "1500"))
	if up["name"] != "storage-vlan" || up["mtu"] != 1500.0 {
		t.Errorf("updated VLAN %v", up)
	}
	e.fieldErr("PUT", base+"10/", vals("dhcp_on", "true"), "__all__", "dhcp can only be turned on when a primary rack controller is set.")
	e.fieldErr("PUT", base+"10/", vals("primary_rack", "nosuch"), "primary_rack", msgInvalidModel)

	// gomaasapi reads fabrics and their VLANs.
	fabs, err := e.c.Fabrics()
	if err != nil || len(fabs) != 2 {
		t.Fatalf("gomaasapi Fabrics: %v, %v", fabs, err)
	}
	for _, f := range fabs {
		if f.ID() == fid && (f.Name() != "storage" || f.ClassType() != "10g" || len(f.VLANs()) != 2) {
			t.Errorf("gomaasapi fabric %s %s %d VLANs", f.Name(), f.ClassType(), len(f.VLANs()))
		}
	}

	// Deletes: not the default VLAN nor the default fabric.
	e.textErr(400, "DELETE", base+"0/", nil, "This VLAN is the default VLAN in the fabric, it cannot be deleted.")
	if code, b := e.call("DELETE", base+"10/", nil); code != 204 {
		t.Errorf("VLAN delete: %d %s", code, b)
	}
	e.textErr(400, "DELETE", "/fabrics/0/", nil, "This fabric is the default fabric, it cannot be deleted.")
	if code, b := e.call("DELETE", fmt.Sprintf("/fabrics/%d/", fid), nil); code != 204 {
		t.Errorf("fabric delete: %d %s", code, b)
	}
	if got := e.list("GET", "/fabrics/", nil); len(got) != 1 {
		t.Errorf("fabrics after delete %v", got)
	}
	if code, b := e.call("GET", "/fabrics/0/", vals("op", "bogus")); code != 400 || !strings.Contains(string(b), "Unrecognised signature") {
		t.Errorf("unknown op: %d %s", code, b)
	}
}

func TestNetworkingSubnets(t *testing.T) {
	e := newNetEnv(t)

	sn := e.obj(200, "POST", "/subnets/", vals("cidr", "10.1.0.7/24", "gateway_ip", "10.1.0.1", "dns_servers", "10.1.0.2, 8.8.8.8"))
	id := idIn(sn)
	vlan := sn["vlan"].(map[string]any)
	if sn["cidr"] != "10.1.0.0/24" || sn["name"] != "10.1.0.0/24" || sn["gateway_ip"] != "10.1.0.1" || idIn(vlan) != 5001 ||
		sn["managed"] != true || sn["allow_dns"] != true || sn["allow_proxy"] != true || sn["rdns_mode"] != 2.0 || sn["space"] != "undefined" {
		t.Errorf("new subnet %v", sn)
	}
	if d := sn["dns_servers"].([]any); len(d) != 2 || d[0] != "10.1.0.2" || d[1] != "8.8.8.8" {
		t.Errorf("dns_servers %v", d)
	}
	e.fieldErr("POST", "/subnets/", vals("name", "x"), "cidr", "This field is required.")
	e.fieldErr("POST", "/subnets/", vals("cidr", "10.1.0.0/33"), "cidr", "Required format: <network>/<prefixlen>.")
	e.fieldErr("POST", "/subnets/", vals("cidr", "10.1.0.0/24"), "cidr", "Subnet with this Cidr already exists.")
	e.fieldErr("POST", "/subnets/", vals("cidr", "10.2.0.0/24", "gateway_ip", "10.3.0.1"), "gateway_ip", "Gateway IP must be within CIDR range.")
	e.fieldErr("POST", "/subnets/", vals("cidr", "10.2.0.0/24", "gateway_ip", "nope"), "gateway_ip", msgInvalidIP)
	e.fieldErr("POST", "/subnets/", vals("cidr", "10.2.0.0/24", "vlan", "4242"), "vlan", msgInvalidModel)
	e.fieldErr("POST", "/subnets/", vals("cidr", "10.2.0.0/24", "vid", "77"), "vid", "No VLAN with vid 77 in default fabric.")
	e.fieldErr("POST", "/subnets/", vals("cidr", "10.2.0.0/24", "space", "s"), "space",
		"Spaces may no longer be set on subnets. Set the space on the underlying VLAN.")

	// fabric + vid pick the VLAN.
	v := e.obj(200, "POST", "/fabrics/0/vlans/", vals("vid", "20"))
	sn2 := e.obj(200, "POST", "/subnets/", vals("cidr", "2001:db8:20::/64", "fabric", "0", "vid", "20", "name", "v6"))
	if idIn(sn2["vlan"].(map[string]any)) != idIn(v) || sn2["name"] != "v6" || sn2["gateway_ip"] != nil {
		t.Errorf("subnet on fabric 0 vid 20: %v", sn2)
	}

	// Read by id, by cidr: (escaped or not), by name.
	for _, p := range []string{fmt.Sprintf("/subnets/%d/", id), "/subnets/cidr:10.1.0.0%2F24/", "/subnets/cidr:10.1.0.0/24/", "/subnets/10.1.0.0%2F24/"} {
		if got := e.obj(200, "GET", p, nil); idIn(got) != id {
			t.Errorf("GET %s = %v", p, got)
		}
	}
	if got := e.obj(200, "GET", "/subnets/name:v6/", nil); idIn(got) != idIn(sn2) {
		t.Errorf("subnet by name %v", got)
	}
	e.textErr(404, "GET", "/subnets/999/", nil, "No Subnet matches the given query.")

	up := e.obj(200, "PUT", fmt.Sprintf("/subnets/%d/", id), vals("gateway_ip", "10.1.0.254", "managed", "false", "allow_dns", "false"))
	if up["gateway_ip"] != "10.1.0.254" || up["managed"] != false || up["allow_dns"] != false || up["allow_proxy"] != true ||
		up["cidr"] != "10.1.0.0/24" {
		t.Errorf("updated subnet %v", up)
	}
	e.fieldErr("PUT", fmt.Sprintf("/subnets/%d/", id), vals("gateway_ip", "192.168.0.1"), "gateway_ip", "Gateway IP must be within CIDR range.")

	// Addresses: gateway, a DNS server, a reserved range.
	e.obj(200, "POST", "/ipranges/", vals("type", "reserved", "start_ip", "10.1.0.10", "end_ip", "10.1.0.19"))
	reserved := e.list("GET", fmt.Sprintf("/subnets/%d/?op=reserved_ip_ranges", id), nil)
	want := []string{"10.1.0.2-10.1.0.2:dns-server:1", "10.1.0.10-10.1.0.19:reserved:10", "10.1.0.254-10.1.0.254:gateway-ip:1"}
	if len(reserved) != len(want) {
		t.Fatalf("reserved ranges %v", reserved)
	}
	for n, r := range reserved {
		r := r.(map[string]any)
		got := fmt.Sprintf("%s-%s:%s:%v", r["start"], r["end"], r["purpose"].([]any)[0], r["num_addresses"])
		if got != want[n] {
			t.Errorf("reserved range %d = %s, want %s", n, got, want[n])
		}
	}
	free := e.list("GET", fmt.Sprintf("/subnets/%d/?op=unreserved_ip_ranges", id), nil)
	if len(free) != 3 || free[0].(map[string]any)["start"] != "10.1.0.1" || free[2].(map[string]any)["end"] != "10.1.0.253" ||
		free[2].(map[string]any)["num_addresses"] != 234.0 {
		t.Errorf("unreserved ranges %v", free)
	}
	st := e.obj(200, "GET", fmt.Sprintf("/subnets/%d/", id), vals("op", "statistics", "include_ranges", "true"))
	if st["total_addresses"] != 254.0 || st["num_unavailable"] != 12.0 || st["num_available"] != 242.0 || st["largest_available"] != 234.0 ||
		st["usage_string"] != "5%" || st["available_string"] != "95%" || st["first_address"] != "10.1.0.1" ||
		st["last_address"] != "10.1.0.254" || st["ip_version"] != 4.0 || len(st["ranges"].([]any)) != 6 {
		t.Errorf("statistics %v", st)
	}
	st6 := e.obj(200, "GET", fmt.Sprintf("/subnets/%d/?op=statistics", idIn(sn2)), nil)
	if st6["ip_version"] != 6.0 || st6["first_address"] != "2001:db8:20::1" || st6["last_address"] != "2001:db8:20:0:ffff:ffff:ffff:ffff" {
		t.Errorf("IPv6 statistics %v", st6)
	}
	if got := e.list("GET", fmt.Sprintf("/subnets/%d/?op=ip_addresses", id), nil); len(got) != 0 {
		t.Errorf("ip_addresses %v", got)
	}

	// gomaasapi decodes subnets (through the spaces).
	spaces, err := e.c.Spaces()
	if err != nil || len(spaces) != 1 || spaces[0].ID() != -1 || spaces[0].Name() != "undefined" || len(spaces[0].Subnets()) != 2 {
		t.Fatalf("gomaasapi Spaces: %v, %v", spaces, err)
	}
	for _, s := range spaces[0].Subnets() {
		if s.ID() == id && (s.CIDR() != "10.1.0.0/24" || s.Gateway() != "10.1.0.254" || s.VLAN().ID() != 5001 || len(s.DNSServers()) != 2) {
			t.Errorf("gomaasapi subnet %s %s %d %v", s.CIDR(), s.Gateway(), s.VLAN().ID(), s.DNSServers())
		}
	}

	// Deleting a subnet takes its ranges along; a fabric with subnets stays.
	f := e.obj(200, "POST", "/fabrics/", nil)
	fsn := e.obj(200, "POST", "/subnets/", vals("cidr", "10.9.0.0/24", "fabric", strconv.Itoa(idIn(f))))
	e.textErr(400, "DELETE", fmt.Sprintf("/fabrics/%d/", idIn(f)), nil, "Can't delete fabric; the following subnets are still present: 10.9.0.0/24")
	for _, sid := range []int{id, idIn(fsn)} {
		if code, b := e.call("DELETE", fmt.Sprintf("/subnets/%d/", sid), nil); code != 204 {
			t.Errorf("subnet delete: %d %s", code, b)
		}
	}
	if got := e.list("GET", "/ipranges/", nil); len(got) != 0 {
		t.Errorf("IP ranges after the subnet's delete: %v", got)
	}
}

func TestNetworkingIPRanges(t *testing.T) {
	e := newNetEnv(t)
	sn := e.obj(200, "POST", "/subnets/", vals("cidr", "192.168.10.0/24", "gateway_ip", "192.168.10.1"))
	sid := strconv.Itoa(idIn(sn))

	// The subnet is found from the addresses when not given.
	r := e.obj(200, "POST", "/ipranges/", vals("type", "dynamic", "start_ip", "192.168.10.100", "end_ip", "192.168.10.199", "comment", "pxe"))
	if r["type"] != "dynamic" || r["start_ip"] != "192.168.10.100" || r["end_ip"] != "192.168.10.199" || r["comment"] != "pxe" ||
		idIn(r["subnet"].(map[string]any)) != idIn(sn) || r["user"].(map[string]any)["username"] != "admin" ||
		r["resource_uri"] != fmt.Sprintf("%s/ipranges/%d/", APIPrefix, idIn(r)) {
		t.Errorf("new range %v", r)
	}
	rid := fmt.Sprintf("/ipranges/%d/", idIn(r))

	e.fieldErr("POST", "/ipranges/", vals("type", "bogus", "start_ip", "192.168.10.2", "end_ip", "192.168.10.3"), "type",
		"Select a valid choice. bogus is not one of the available choices.")
	e.fieldErr("POST", "/ipranges/", vals("type", "reserved", "end_ip", "192.168.10.3"), "start_ip", "This field is required.")
	e.fieldErr("POST", "/ipranges/", vals("type", "reserved", "start_ip", "172.16.0.1", "end_ip", "172.16.0.9"), "subnet", "This field is required.")
	e.fieldErr("POST", "/ipranges/", vals("type", "reserved", "subnet", sid, "start_ip", "192.168.10.20", "end_ip", "192.168.10.10"),
		"end_ip", "End IP address must not be less than Start IP address.")
	e.fieldErr("POST", "/ipranges/", vals("type", "reserved", "subnet", sid, "start_ip", "192.168.10.20", "end_ip", "192.168.11.10"),
		"end_ip", "End IP address must be within subnet: 192.168.10.0/24.")
	e.fieldErr("POST", "/ipranges/", vals("type", "reserved", "subnet", sid, "start_ip", "10.0.0.1", "end_ip", "10.0.0.2"),
		"start_ip", "IP addresses must be within subnet: 192.168.10.0/24.")
	e.fieldErr("POST", "/ipranges/", vals("type", "reserved", "subnet", sid, "start_ip", "192.168.10.0", "end_ip", "192.168.10.5"),
		"start_ip", "Reserved network address cannot be included in IP range.")
	e.fieldErr("POST", "/ipranges/", vals("type", "reserved", "subnet", sid, "start_ip", "192.168.10.150", "end_ip", "192.168.10.160"),
		"start_ip", "Requested reserved range conflicts with an existing range.")
	e.fieldErr("POST", "/ipranges/", vals("type", "dynamic", "subnet", sid, "start_ip", "192.168.10.1", "end_ip", "192.168.10.50"),
		"end_ip", "Requested dynamic range conflicts with an existing IP address or range.")

	// A reserved range beside it is fine; so is resizing the dynamic one.
	e.obj(200, "POST", "/ipranges/", vals("type", "reserved", "subnet", sid, "start_ip", "192.168.10.200", "end_ip", "192.168.10.210"))
	if got := e.obj(200, "PUT", rid, vals("end_ip", "192.168.10.150")); got["end_ip"] != "192.168.10.150" {
		t.Errorf("resized range %v", got)
	}
	e.fieldErr("PUT", rid, vals("end_ip", "192.168.10.205"), "start_ip", "Requested dynamic range conflicts with an existing IP address or range.")
	if got := e.list("GET", "/ipranges/", nil); len(got) != 2 {
		t.Errorf("ranges %v", got)
	}

	// With a dynamic range and a rack, DHCP can be turned on.
	e.fieldErr("PUT", "/fabrics/0/vlans/0/", vals("dhcp_on", "true"), "__all__", "dhcp can only be turned on when a primary rack controller is set.")
	v := e.obj(200, "PUT", "/fabrics/0/vlans/0/", vals("dhcp_on", "true", "primary_rack", e.s.rackID))
	if v["dhcp_on"] != true || v["primary_rack"] != e.s.rackID {
		t.Errorf("VLAN with DHCP %v", v)
	}
	if code, b := e.call("DELETE", rid, nil); code != 204 {
		t.Errorf("range delete %d %s", code, b)
	}
	e.textErr(404, "GET", rid, nil, "No IPRange matches the given query.")
}

func TestNetworkingSpacesAndStaticRoutes(t *testing.T) {
	e := newNetEnv(t)
	sp := e.obj(200, "POST", "/spaces/", vals("name", "storage"))
	if sp["name"] != "storage" || len(sp["vlans"].([]any)) != 0 || len(sp["subnets"].([]any)) != 0 ||
		sp["resource_uri"] != fmt.Sprintf("%s/spaces/%d/", APIPrefix, idIn(sp)) {
		t.Errorf("new space %v", sp)
	}
	e.fieldErr("POST", "/spaces/", vals("name", "storage"), "name", "Space with this Name already exists.")
	if unnamed := e.obj(200, "POST", "/spaces/", nil); unnamed["name"] != fmt.Sprintf("space-%d", idIn(unnamed)) {
		t.Errorf("unnamed space %v", unnamed)
	}

	// A VLAN in the space puts its subnets in it.
	v := e.obj(200, "POST", "/fabrics/0/vlans/", vals("vid", "30", "space", "storage"))
	if v["space"] != "storage" {
		t.Errorf("VLAN in space %v", v)
	}
	src := e.obj(200, "POST", "/subnets/", vals("cidr", "10.30.0.0/24", "vlan", strconv.Itoa(idIn(v)), "gateway_ip", "10.30.0.1"))
	dst := e.obj(200, "POST", "/subnets/", vals("cidr", "10.31.0.0/24"))
	if src["space"] != "storage" || dst["space"] != "undefined" {
		t.Errorf("subnet spaces %v %v", src["space"], dst["space"])
	}
	spaces, err := e.c.Spaces()
	if err != nil || len(spaces) != 3 {
		t.Fatalf("gomaasapi Spaces: %v, %v", spaces, err)
	}
	for _, s := range spaces {
		if s.Name() == "storage" && (len(s.Subnets()) != 1 || s.Subnets()[0].CIDR() != "10.30.0.0/24" || s.Subnets()[0].Space() != "storage") {
			t.Errorf("space storage holds %v", s.Subnets())
		}
	}
	// Renaming the space follows through VLANs and subnets.
	e.obj(200, "PUT", fmt.Sprintf("/spaces/%d/", idIn(sp)), vals("name", "stor"))
	if got := e.obj(200, "GET", fmt.Sprintf("/subnets/%d/", idIn(src)), nil); got["space"] != "stor" {
		t.Errorf("subnet space after rename %v", got["space"])
	}
	if got := e.obj(200, "GET", "/spaces/stor/", nil); len(got["subnets"].([]any)) != 1 || len(got["vlans"].([]any)) != 1 {
		t.Errorf("space by name %v", got)
	}
	if got := e.obj(200, "GET", "/spaces/-1/", nil); got["name"] != "undefined" || len(got["subnets"].([]any)) != 1 {
		t.Errorf("undefined space %v", got)
	}
	e.textErr(404, "GET", "/spaces/999/", nil, "No Space matches the given query.")

	// Static routes.
	s, d := strconv.Itoa(idIn(src)), strconv.Itoa(idIn(dst))
	rt := e.obj(200, "POST", "/static-routes/", vals("source", s, "destination", d, "gateway_ip", "10.30.0.254", "metric", "5"))
	if rt["gateway_ip"] != "10.30.0.254" || rt["metric"] != 5.0 || idIn(rt["source"].(map[string]any)) != idIn(src) ||
		idIn(rt["destination"].(map[string]any)) != idIn(dst) || rt["resource_uri"] != fmt.Sprintf("%s/static-routes/%d/", APIPrefix, idIn(rt)) {
		t.Errorf("new static route %v", rt)
	}
	e.fieldErr("POST", "/static-routes/", vals("source", s, "destination", d, "gateway_ip", "10.30.0.254"), "__all__",
		"Static route with this Source, Destination and Gateway IP already exists.")
	e.fieldErr("POST", "/static-routes/", vals("source", s, "destination", d, "gateway_ip", "10.31.0.1"), "gateway_ip", "Enter an IP address in 10.30.0.0/24.")
	e.fieldErr("POST", "/static-routes/", vals("source", s, "destination", s, "gateway_ip", "10.30.0.2"), "__all__", "source and destination cannot be the same subnet.")
	e.fieldErr("POST", "/static-routes/", vals("source", s, "gateway_ip", "10.30.0.2"), "destination", "This field is required.")
	e.fieldErr("POST", "/static-routes/", vals("source", s, "destination", "999", "gateway_ip", "10.30.0.2"), "destination", msgInvalidModel)
	routes, err := e.c.StaticRoutes()
	if err != nil || len(routes) != 1 || routes[0].Source().CIDR() != "10.30.0.0/24" || routes[0].Destination().CIDR() != "10.31.0.0/24" ||
		routes[0].GatewayIP() != "10.30.0.254" || routes[0].Metric() != 5 {
		t.Fatalf("gomaasapi StaticRoutes: %v, %v", routes, err)
	}
	if code, b := e.call("DELETE", fmt.Sprintf("/static-routes/%d/", idIn(rt)), nil); code != 204 {
		t.Errorf("static route delete %d %s", code, b)
	}
	e.textErr(404, "GET", fmt.Sprintf("/static-routes/%d/", idIn(rt)), nil, "No StaticRoute matches the given query.")

	// Deleting the space leaves its VLAN in the undefined space.
	if code, b := e.call("DELETE", fmt.Sprintf("/spaces/%d/", idIn(sp)), nil); code != 204 {
		t.Errorf("space delete %d %s", code, b)
	}
	if got := e.obj(200, "GET", fmt.Sprintf("/vlans/%d/", idIn(v)), nil); got["space"] != "undefined" {
		t.Errorf("VLAN space after the space's delete %v", got["space"])
	}
}

// readyMachine registers a Ready machine with the given MACs.
func (e *netEnv) readyMachine(hostname string, macs ...string) *machine {
	e.s.mu.Lock()
	defer e.s.mu.Unlock()
	m := e.s.newMachine(hostname, "", macs)
	m.Status = StatusReady
	return m
}

func (e *netEnv) gomaasMachine(id string) gomaasapi.Machine {
	e.t.Helper()
	ms, err := e.c.Machines(gomaasapi.MachinesArgs{SystemIDs: []string{id}})
	if err != nil || len(ms) != 1 {
		e.t.Fatalf("gomaasapi Machines(%s): %v, %v", id, ms, err)
	}
	return ms[0]
}

func gomaasSubnet(t *testing.T, c gomaasapi.Controller, cidr string) gomaasapi.Subnet {
	t.Helper()
	spaces, err := c.Spaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range spaces {
		for _, sn := range sp.Subnets() {
			if sn.CIDR() == cidr {
				return sn
			}
		}
	}
	t.Fatalf("gomaasapi sees no subnet %s", cidr)
	return nil
}

func TestNetworkingInterfaces(t *testing.T) {
	e := newNetEnv(t)
	m := e.readyMachine("web1", "52:54:00:aa:00:01", "52:54:00:aa:00:02", "52:54:00:aa:00:03")
	other := e.readyMachine("web2", "52:54:00:bb:00:01")
	base := "/nodes/" + m.SystemID + "/interfaces/"
	ifs := e.list("GET", base, nil)
	if len(ifs) != 3 {
		t.Fatalf("interfaces %v", ifs)
	}
	eth := func(n int) map[string]any { return ifs[n].(map[string]any) }
	if eth(0)["name"] != "eth0" || eth(0)["type"] != "physical" || eth(0)["resource_uri"] != fmt.Sprintf("%s%s%d/", APIPrefix, base, idIn(eth(0))) {
		t.Errorf("eth0 %v", eth(0))
	}
	e.textErr(404, "GET", base+"9999/", nil, "No Interface matches the given query.")
	e.textErr(404, "GET", "/nodes/nosuch/interfaces/", nil, "No Node matches the given query.")
	if got := e.obj(200, "GET", fmt.Sprintf("/machines/%s/interfaces/%d/", m.SystemID, idIn(eth(1))), nil); got["name"] != "eth1" {
		t.Errorf("interface under /machines/: %v", got)
	}

	// A bond of eth0 and eth1.
	bond := e.obj(200, "POST", base+"?op=create_bond", url.Values{"name": {"bond0"}, "parents": {strconv.Itoa(idIn(eth(0))), strconv.Itoa(idIn(eth(1)))},
		"bond_mode": {"802.3ad"}, "bond_xmit_hash_policy": {"layer3+4"}, "mtu": {"9000"}})
	params := bond["params"].(map[string]any)
	if bond["type"] != "bond" || bond["mac_address"] != "52:54:00:aa:00:01" || bond["effective_mtu"] != 9000.0 ||
		params["bond_mode"] != "802.3ad" || params["bond_xmit_hash_policy"] != "layer3+4" || params["bond_miimon"] != 100.0 ||
		params["bond_lacp_rate"] != "fast" || params["bond_downdelay"] != 0.0 || params["bond_updelay"] != 0.0 || params["bond_num_grat_arp"] != 1.0 ||
		fmt.Sprint(bond["parents"]) != "[eth0 eth1]" || idIn(bond["vlan"].(map[string]any)) != 5001 {
		t.Errorf("bond %v", bond)
	}
	if links := bond["links"].([]any); len(links) != 1 || links[0].(map[string]any)["mode"] != "link_up" {
		t.Errorf("a new bond's links %v, want one LINK_UP", links)
	}
	if got := e.obj(200, "GET", fmt.Sprintf("%s%d/", base, idIn(eth(0))), nil); fmt.Sprint(got["children"]) != "[bond0]" {
		t.Errorf("eth0's children %v", got["children"])
	}
	e.fieldErr("POST", base+"?op=create_bond", vals("name", "bond0", "parents", strconv.Itoa(idIn(eth(2)))), "name",
		"Node web1 already has an interface named 'bond0'.")
	e.fieldErr("POST", base+"?op=create_bond", vals("name", "bond1", "parents", strconv.Itoa(idIn(eth(0)))), "parents",
		"Interfaces already in-use: eth0.")
	e.fieldErr("POST", base+"?op=create_bond", vals("name", "bond1"), "parents", "A bond interface must have one or more parents.")
	e.fieldErr("POST", base+"?op=create_bond", vals("name", "bond1", "parents", "424242"), "parents",
		"Select a valid choice. 424242 is not one of the available choices.")
	e.fieldErr("POST", base+"?op=create_bond", vals("name", "bond1", "parents", strconv.Itoa(idIn(eth(2))), "bond_mode", "fastest"), "bond_mode",
		"'fastest' is not a valid bond_mode.  It should be one of: 'balance-rr', 'active-backup', 'balance-xor', 'broadcast', '802.3ad', 'balance-tlb', 'balance-alb'.")
	e.fieldErr("POST", base+"?op=create_bond", vals("parents", strconv.Itoa(idIn(eth(2)))), "name", "This field is required.")

	// A tagged VLAN on the bond, a subnet on it, an address.
	v := e.obj(200, "POST", "/fabrics/0/vlans/", vals("vid", "100"))
	sn := e.obj(200, "POST", "/subnets/", vals("cidr", "10.100.0.0/24", "vlan", strconv.Itoa(idIn(v)), "gateway_ip", "10.100.0.1"))
	e.obj(200, "POST", "/ipranges/", vals("type", "dynamic", "start_ip", "10.100.0.200", "end_ip", "10.100.0.250"))
	vif := e.obj(200, "POST", base+"?op=create_vlan", vals("parent", strconv.Itoa(idIn(bond)), "vlan", strconv.Itoa(idIn(v))))
	if vif["name"] != "bond0.100" || vif["type"] != "vlan" || fmt.Sprint(vif["parents"]) != "[bond0]" || idIn(vif["vlan"].(map[string]any)) != idIn(v) {
		t.Errorf("VLAN interface %v", vif)
	}
	e.fieldErr("POST", base+"?op=create_vlan", vals("parent", strconv.Itoa(idIn(bond)), "vlan", "5001"), "vlan",
		"A VLAN interface can only belong to a tagged VLAN.")
	e.fieldErr("POST", base+"?op=create_vlan", vals("parent", strconv.Itoa(idIn(eth(0))), "vlan", strconv.Itoa(idIn(v))), "parent",
		"A VLAN interface can't have a parent that is already in a bond.")
	e.fieldErr("POST", base+"?op=create_vlan", vals("vlan", strconv.Itoa(idIn(v))), "parent", "A VLAN interface must have exactly one parent.")
	vpath := fmt.Sprintf("%s%d/", base, idIn(vif))

	// Links through gomaasapi, as Juju makes them.
	gm := e.gomaasMachine(m.SystemID)
	var gvif gomaasapi.Interface
	for _, i := range gm.InterfaceSet() {
		if i.ID() == idIn(vif) {
			gvif = i
		}
	}
	if gvif == nil || gvif.Name() != "bond0.100" || gvif.VLAN().VID() != 100 || gvif.Type() != "vlan" || fmt.Sprint(gvif.Parents()) != "[bond0]" {
		t.Fatalf("gomaasapi VLAN interface %v", gvif)
	}
	gsn := gomaasSubnet(t, e.c, "10.100.0.0/24")
	if err := gvif.LinkSubnet(gomaasapi.LinkSubnetArgs{Mode: gomaasapi.LinkModeStatic, Subnet: gsn, IPAddress: "10.100.0.10", DefaultGateway: true}); err != nil {
		t.Fatalf("LinkSubnet: %v", err)
	}
	if links := gvif.Links(); len(links) != 1 || links[0].IPAddress() != "10.100.0.10" || links[0].Mode() != "static" || links[0].Subnet().ID() != idIn(sn) {
		t.Errorf("links after LinkSubnet %v", links)
	}
	mj := e.obj(200, "GET", "/machines/"+m.SystemID+"/", nil)
	gw := mj["default_gateways"].(map[string]any)["ipv4"].(map[string]any)
	if fmt.Sprint(mj["ip_addresses"]) != "[10.100.0.10]" || gw["gateway_ip"] != "10.100.0.1" || gw["link_id"] != float64(gvif.Links()[0].ID()) {
		t.Errorf("machine ip_addresses %v default_gateways %v", mj["ip_addresses"], mj["default_gateways"])
	}
	// Static without an address gets the first free one (not the gateway).
	auto := e.obj(200, "POST", vpath+"?op=link_subnet", vals("mode", "static", "subnet", strconv.Itoa(idIn(sn))))
	if l := auto["links"].([]any); len(l) != 2 || l[1].(map[string]any)["ip_address"] != "10.100.0.2" {
		t.Errorf("allocated static link %v", auto["links"])
	}
	ips := e.list("GET", fmt.Sprintf("/subnets/%d/?op=ip_addresses", idIn(sn)), nil)
	if len(ips) != 2 || ips[0].(map[string]any)["ip"] != "10.100.0.2" || ips[0].(map[string]any)["node_summary"].(map[string]any)["via"] != "bond0.100" {
		t.Errorf("subnet ip_addresses %v", ips)
	}

	// Link validation.
	op := "?op=link_subnet"
	e.textErr(404, "POST", vpath+op, vals("mode", "STATIC", "subnet", strconv.Itoa(idIn(sn)), "ip_address", "10.100.0.10"), "IP address is already in use.")
	e.fieldErr("POST", vpath+op, vals("mode", "STATIC", "subnet", strconv.Itoa(idIn(sn)), "ip_address", "10.200.0.10"), "ip_address",
		"IP address is not in the given subnet '10.100.0.0/24:10.100.0.0/24(vid=100)'.")
	e.fieldErr("POST", vpath+op, vals("mode", "STATIC", "subnet", strconv.Itoa(idIn(sn)), "ip_address", "10.100.0.210"), "ip_address",
		"IP address is inside a dynamic range 10.100.0.200 to 10.100.0.250.")
	e.fieldErr("POST", vpath+op, vals("mode", "magic", "subnet", strconv.Itoa(idIn(sn))), "mode",
		"'magic' is not a valid mode.  It should be one of: 'auto', 'dhcp', 'static', 'link_up'.")
	e.fieldErr("POST", vpath+op, vals("subnet", strconv.Itoa(idIn(sn))), "mode", "This field is required.")
	e.fieldErr("POST", vpath+op, vals("mode", "AUTO"), "subnet", "This field is required.")
	e.fieldErr("POST", vpath+op, vals("mode", "DHCP", "subnet", strconv.Itoa(idIn(sn)), "default_gateway", "true"), "default_gateway", "Cannot use in mode 'dhcp'.")
	e.fieldErr("POST", vpath+op, vals("mode", "LINK_UP"), "mode",
		"Cannot configure interface to link up (with no IP address) while other links are already configured. Specify force=True to override this behavior and delete all links.")
	other0 := fmt.Sprintf("/nodes/%s/interfaces/%d/", other.SystemID, other.Interfaces[0].ID)
	e.fieldErr("POST", other0+op, vals("mode", "STATIC", "subnet", strconv.Itoa(idIn(sn))), "subnet", msgInvalidModel)
	e.fieldErr("POST", fmt.Sprintf("%s%d/%s", base, idIn(eth(0)), op), vals("mode", "DHCP"), "bond",
		"Cannot link interface(eth0) when interface is in a bond(bond0).")

	// DHCP once; a second is refused.
	sn0 := e.obj(200, "POST", "/subnets/", vals("cidr", "10.0.0.0/24"))
	eth2 := fmt.Sprintf("%s%d/", base, idIn(eth(2)))
	if got := e.obj(200, "POST", eth2+op, vals("mode", "dhcp", "subnet", strconv.Itoa(idIn(sn0)))); got["links"].([]any)[0].(map[string]any)["mode"] != "dhcp" {
		t.Errorf("DHCP link %v", got["links"])
	}
	e.fieldErr("POST", eth2+op, vals("mode", "dhcp"), "mode", "Interface is already set to DHCP from '10.0.0.0/24:10.0.0.0/24(vid=0)'.")

	// Unlink: the last link gives way to LINK_UP.
	if err := gvif.UnlinkSubnet(gsn); err != nil {
		t.Fatalf("UnlinkSubnet: %v", err)
	}
	cur := e.obj(200, "GET", vpath, nil)
	linkID := idIn(cur["links"].([]any)[0].(map[string]any))
	e.fieldErr("POST", vpath+"?op=unlink_subnet", vals("id", "77777"), "id", fmt.Sprintf("'77777' is not a valid id.  It should be one of: '%d'.", linkID))
	un := e.obj(200, "POST", vpath+"?op=unlink_subnet", vals("id", strconv.Itoa(linkID)))
	if l := un["links"].([]any); len(l) != 1 || l[0].(map[string]any)["mode"] != "link_up" || l[0].(map[string]any)["subnet"] != nil {
		t.Errorf("links after unlinking the last %v", l)
	}

	// set_default_gateway needs a link with a gateway.
	e.fieldErr("POST", vpath+"?op=set_default_gateway", nil, "__all__", "This interface has no usable gateways.")
	e.obj(200, "POST", vpath+op, vals("mode", "AUTO", "subnet", strconv.Itoa(idIn(sn))))
	if got := e.obj(200, "POST", vpath+"?op=set_default_gateway", nil); len(got["links"].([]any)) != 1 {
		t.Errorf("after set_default_gateway %v", got["links"])
	}

	// Update through gomaasapi and PUT; a rename carries to the children.
	var gbond gomaasapi.Interface
	for _, i := range e.gomaasMachine(m.SystemID).InterfaceSet() {
		if i.Name() == "bond0" {
			gbond = i
		}
	}
	if err := gbond.Update(gomaasapi.UpdateInterfaceArgs{Name: "bond-a"}); err != nil || gbond.Name() != "bond-a" {
		t.Fatalf("gomaasapi Update: %v %s", err, gbond.Name())
	}
	if got := e.obj(200, "GET", vpath, nil); got["name"] != "bond-a.100" || fmt.Sprint(got["parents"]) != "[bond-a]" {
		t.Errorf("VLAN interface after its parent's rename %v", got)
	}
	bpath := fmt.Sprintf("%s%d/", base, idIn(bond))
	up := e.obj(200, "PUT", bpath, vals("mtu", "1500", "bond_miimon", "200", "bond_lacp_rate", "slow"))
	if up["effective_mtu"] != 1500.0 || up["params"].(map[string]any)["bond_miimon"] != 200.0 || up["params"].(map[string]any)["bond_lacp_rate"] != "slow" ||
		up["params"].(map[string]any)["bond_mode"] != "802.3ad" {
		t.Errorf("updated bond %v", up)
	}
	e.fieldErr("PUT", bpath, vals("name", "eth2"), "name", "Node web1 already has an interface named 'eth2'.")
	e.fieldErr("PUT", bpath, vals("mtu", "100"), "mtu", "Ensure this value is greater than or equal to 552.")

	// A bridge on eth2.
	br := e.obj(200, "POST", base+"?op=create_bridge", vals("parent", strconv.Itoa(idIn(eth(2))), "bridge_stp", "true"))
	if br["name"] != "br-eth2" || br["type"] != "bridge" || br["params"].(map[string]any)["bridge_stp"] != true ||
		br["params"].(map[string]any)["bridge_fd"] != 15.0 || br["params"].(map[string]any)["bridge_type"] != "standard" {
		t.Errorf("bridge %v", br)
	}

	// Disconnect drops the links and the VLAN.
	dis := e.obj(200, "POST", fmt.Sprintf("%s%d/?op=disconnect", base, idIn(br)), nil)
	if dis["vlan"] != nil || len(dis["links"].([]any)) != 0 {
		t.Errorf("disconnected %v", dis)
	}

	// Deleting the bond takes its VLAN interface along and frees the NICs.
	if err := gbond.Delete(); err != nil {
		t.Fatalf("gomaasapi Delete: %v", err)
	}
	names := []string{}
	for _, i := range e.list("GET", base, nil) {
		names = append(names, i.(map[string]any)["name"].(string))
	}
	if strings.Join(names, ",") != "eth0,eth1,eth2,br-eth2" {
		t.Errorf("interfaces after deleting the bond: %v", names)
	}
	if got := e.obj(200, "GET", fmt.Sprintf("%s%d/", base, idIn(eth(0))), nil); len(got["children"].([]any)) != 0 {
		t.Errorf("eth0's children after the bond's delete %v", got["children"])
	}

	// create_physical and tags.
	ph := e.obj(200, "POST", base+"?op=create_physical", vals("mac_address", "52:54:00:aa:00:09", "vlan", "5001"))
	if ph["name"] != "eth3" || ph["mac_address"] != "52:54:00:aa:00:09" {
		t.Errorf("new physical interface %v", ph)
	}
	e.fieldErr("POST", base+"?op=create_physical", vals("mac_address", "52:54:00:bb:00:01"), "mac_address", "This MAC address is already in use by web2.")
	e.fieldErr("POST", base+"?op=create_physical", nil, "mac_address", "This field is required.")
	if got := e.obj(200, "POST", fmt.Sprintf("%s%d/?op=add_tag", base, idIn(ph)), vals("tag", "sriov")); fmt.Sprint(got["tags"]) != "[sriov]" {
		t.Errorf("tags %v", got["tags"])
	}
}

func TestNetworkingInterfaceStateGuard(t *testing.T) {
	e := newNetEnv(t)
	m := e.readyMachine("db1", "52:54:00:cc:00:01", "52:54:00:cc:00:02")
	e.s.mu.Lock()
	m.Status = StatusDeployed
	e.s.mu.Unlock()
	base := "/nodes/" + m.SystemID + "/interfaces/"
	eth0 := fmt.Sprintf("%s%d/", base, m.Interfaces[0].ID)
	parents := url.Values{"name": {"bond0"}, "parents": {strconv.Itoa(m.Interfaces[0].ID), strconv.Itoa(m.Interfaces[1].ID)}}
	sn := e.obj(200, "POST", "/subnets/", vals("cidr", "10.0.0.0/24"))

	msg := "Cannot %s interface because the machine is not Ready, Allocated, or Broken."
	e.textErr(409, "POST", base+"?op=create_bond", parents, fmt.Sprintf(msg, "create bond"))
	e.textErr(409, "POST", base+"?op=create_vlan", vals("parent", "1", "vlan", "1"), fmt.Sprintf(msg, "create VLAN"))
	e.textErr(409, "POST", base+"?op=create_physical", vals("mac_address", "52:54:00:cc:00:09"), fmt.Sprintf(msg, "create"))
	e.textErr(409, "POST", eth0+"?op=link_subnet", vals("mode", "AUTO", "subnet", strconv.Itoa(idIn(sn))), fmt.Sprintf(msg, "link subnet"))
	e.textErr(409, "POST", eth0+"?op=unlink_subnet", vals("id", "1"), fmt.Sprintf(msg, "unlink subnet"))
	e.textErr(409, "POST", eth0+"?op=disconnect", nil, fmt.Sprintf(msg, "disconnect"))
	e.textErr(409, "DELETE", eth0, nil, fmt.Sprintf(msg, "delete interface"))

	// A deployed machine's NIC may be renamed or get a new MAC, nothing else.
	up := e.obj(200, "PUT", eth0, vals("name", "ens3", "mac_address", "52:54:00:cc:00:0a", "mtu", "9000"))
	if up["name"] != "ens3" || up["mac_address"] != "52:54:00:cc:00:0a" || up["effective_mtu"] != 1500.0 {
		t.Errorf("deployed interface update %v", up)
	}

	// gomaasapi sees the refusal as an error; Allocated and Broken machines
	// accept changes.
	var gi gomaasapi.Interface
	for _, i := range e.gomaasMachine(m.SystemID).InterfaceSet() {
		if i.Name() == "ens3" {
			gi = i
		}
	}
	if err := gi.Delete(); err == nil {
		t.Errorf("gomaasapi deleted an interface of a Deployed machine")
	}
	for _, st := range []int{StatusAllocated, StatusBroken} {
		e.s.mu.Lock()
		m.Status = st
		e.s.mu.Unlock()
		e.obj(200, "POST", eth0+"?op=link_subnet", vals("mode", "LINK_UP", "subnet", strconv.Itoa(idIn(sn)), "force", "true"))
	}
	e.s.mu.Lock()
	m.Status = StatusNew
	e.s.mu.Unlock()
	e.textErr(409, "POST", eth0+"?op=set_default_gateway", nil, fmt.Sprintf(msg, "set default gateway"))
}

// effective_mtu is MAAS's get_effective_mtu: a bond member's own MTU is
// 1500, but it carries the bond's 9000-byte frames, so its effective MTU
// is 9000 (the maximum over the interfaces built on it).
func TestEffectiveMTUOfBondMembers(t *testing.T) {
	e := newNetEnv(t)
	m := e.readyMachine("web1", "52:54:00:aa:00:01", "52:54:00:aa:00:02")
	base := "/nodes/" + m.SystemID + "/interfaces/"
	ifs := e.list("GET", base, nil)
	id := func(n int) string { return strconv.Itoa(idIn(ifs[n].(map[string]any))) }
	e.obj(200, "POST", base+"?op=create_bond", url.Values{"name": {"bond0"}, "parents": {id(0), id(1)},
		"bond_mode": {"active-backup"}, "mtu": {"9000"}})
	for _, i := range e.list("GET", base, nil) {
		i := i.(map[string]any)
		if i["effective_mtu"] != 9000.0 {
			t.Errorf("%s (%s): effective_mtu %v, want 9000", i["name"], i["type"], i["effective_mtu"])
		}
	}
}
