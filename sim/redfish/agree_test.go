package redfish

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stmcginnis/gofish/redfish"
)

// rawClient is an HTTP client trusting the lab CA only.
func rawClient(ca *CA) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM())
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// do sends a request with the token (if any) and decodes a JSON answer.
func do(t *testing.T, hc *http.Client, method, url, token string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("X-Auth-Token", token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&doc)
	return resp.StatusCode, resp.Header, doc
}

func loginRaw(t *testing.T, hc *http.Client, s *Service) (token, location string) {
	t.Helper()
	code, h, _ := do(t, hc, "POST", s.URL()+sessionsPath, "", map[string]string{"UserName": user, "Password": pass})
	if code != http.StatusCreated || h.Get("X-Auth-Token") == "" || h.Get("Location") == "" {
		t.Fatalf("login: %d %v", code, h)
	}
	return h.Get("X-Auth-Token"), h.Get("Location")
}

func members(doc map[string]any) []string {
	var out []string
	ms, _ := doc["Members"].([]any)
	for _, m := range ms {
		if id, ok := m.(map[string]any)["@odata.id"].(string); ok {
			out = append(out, id)
		}
	}
	return out
}

// The Sessions collection lists the live sessions; one's own session (the
// login's Location) reads 200, another's too (the lab's one account is an
// administrator); DELETE logs out and the token stops working.
func TestSessionsAreLive(t *testing.T) {
	s, _, ca := start(t, Options{})
	hc := rawClient(ca)
	tokA, locA := loginRaw(t, hc, s)
	tokB, locB := loginRaw(t, hc, s)
	code, _, doc := do(t, hc, "GET", s.URL()+sessionsPath, tokA, nil)
	if got := members(doc); code != http.StatusOK || !slices.Equal(got, []string{locA, locB}) || doc["Members@odata.count"] != float64(2) {
		t.Fatalf("sessions collection: %d %v count %v, want [%s %s]", code, got, doc["Members@odata.count"], locA, locB)
	}
	code, _, doc = do(t, hc, "GET", s.URL()+locA, tokA, nil)
	if code != http.StatusOK || doc["@odata.id"] != locA || doc["UserName"] != user || doc["Id"] == "" {
		t.Fatalf("GET own session %s: %d %v", locA, code, doc)
	}
	if _, ok := doc["Password"]; ok && doc["Password"] != nil {
		t.Fatalf("the session shows a password: %v", doc)
	}
	if code, _, doc = do(t, hc, "GET", s.URL()+locB, tokA, nil); code != http.StatusOK || doc["@odata.id"] != locB {
		t.Fatalf("GET another's session with an administrator's token: %d %v", code, doc)
	}
	if code, _, _ = do(t, hc, "DELETE", s.URL()+locA, tokA, nil); code != http.StatusNoContent {
		t.Fatalf("logout: %d", code)
	}
	if code, _, _ = do(t, hc, "GET", s.URL()+systemPath, tokA, nil); code != http.StatusUnauthorized {
		t.Fatalf("the logged-out token still works: %d", code)
	}
	if code, _, _ = do(t, hc, "GET", s.URL()+locA, tokB, nil); code != http.StatusNotFound {
		t.Fatalf("GET of a closed session: %d, want 404", code)
	}
	if _, _, doc = do(t, hc, "GET", s.URL()+sessionsPath, tokB, nil); !slices.Equal(members(doc), []string{locB}) {
		t.Fatalf("after logout the collection lists %v, want [%s]", members(doc), locB)
	}
	if code, _, _ = do(t, hc, "GET", s.URL()+sessionsPath+"/1234567890ABCDEF", tokB, nil); code != http.StatusNotFound {
		t.Fatalf("the mockup's static session answers %d", code)
	}
	if st := s.Stats(); st.SessionsOpened != 2 || st.SessionsClosed != 1 {
		t.Fatalf("stats: opened %d closed %d", st.SessionsOpened, st.SessionsClosed)
	}
}

// VirtualMedia is under the Manager (where sushy and Ironic look), linked
// from it; a medium is Inserted as soon as InsertMedia answers; the
// System's path is an alias of the same medium.
func TestVirtualMediaUnderManager(t *testing.T) {
	s, _, ca := start(t, Options{})
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := c.Service.Managers()
	if err != nil || len(ms) != 1 {
		t.Fatalf("managers: %v %d", err, len(ms))
	}
	vms, err := ms[0].VirtualMedia()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(vms, func(v *redfish.VirtualMedia) bool { return v.ID == "CD1" })
	if i < 0 {
		t.Fatalf("no CD1 among the manager's %d virtual media", len(vms))
	}
	cd := vms[i]
	if cd.ODataID != managerMediaPath || !slices.Contains(cd.MediaTypes, redfish.CDMediaType) {
		t.Fatalf("manager CD1: %s %v", cd.ODataID, cd.MediaTypes)
	}
	if err := cd.InsertMedia("http://10.0.0.1/boot.iso", true, true); err != nil {
		t.Fatal(err)
	}
	if img, in := s.Media(); img != "http://10.0.0.1/boot.iso" || !in {
		t.Fatalf("right after InsertMedia answered: %q inserted %v (no task polled)", img, in)
	}
	hc := rawClient(ca)
	tok, _ := loginRaw(t, hc, s)
	for _, p := range []string{managerMediaPath, mediaPath} {
		if code, _, doc := do(t, hc, "GET", s.URL()+p, tok, nil); code != http.StatusOK || doc["Inserted"] != true || doc["Image"] != "http://10.0.0.1/boot.iso" || doc["@odata.id"] != p {
			t.Fatalf("GET %s: %d %v", p, code, doc)
		}
	}
	if err := cd.EjectMedia(); err != nil {
		t.Fatal(err)
	}
	if _, in := s.Media(); in {
		t.Fatal("still inserted after eject")
	}
	if st := s.Stats(); st.MediaInserted != 1 {
		t.Fatalf("media inserted %d", st.MediaInserted)
	}
}

// The service root and the system report the UUID the options give (the
// lab gives each BMC its machine's IPMI GUID).
func TestServiceUUIDs(t *testing.T) {
	const id = "6b1f7a42-91c3-5d0e-8a77-0c2d4e5f6a7b"
	s, _, ca := start(t, Options{UUID: id})
	hc := rawClient(ca)
	for _, p := range []string{"/redfish/v1/", "/redfish/v1"} {
		if code, _, doc := do(t, hc, "GET", s.URL()+p, "", nil); code != http.StatusOK || doc["UUID"] != id {
			t.Fatalf("service root %s: %d UUID %v, want %s", p, code, doc["UUID"], id)
		}
	}
	tok, _ := loginRaw(t, hc, s)
	if _, _, doc := do(t, hc, "GET", s.URL()+systemPath, tok, nil); doc["UUID"] != id {
		t.Fatalf("system UUID %v", doc["UUID"])
	}
	if _, _, doc := do(t, hc, "GET", s.URL()+managerPath, tok, nil); doc["ServiceEntryPointUUID"] != id || doc["UUID"] != managerUUID(id) || managerUUID(id) == id {
		t.Fatalf("manager ServiceEntryPointUUID %v UUID %v", doc["ServiceEntryPointUUID"], doc["UUID"])
	}
	if a, b := managerUUID(id), managerUUID("6b1f7a42-91c3-5d0e-8a77-0c2d4e5f6a7c"); a == b || len(a) != 36 {
		t.Fatalf("manager UUIDs %s and %s", a, b)
	}
}
