package gnmi_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	gnmidrv "github.com/slipway-dev/slipway/drivers/network/gnmi"
	simgnmi "github.com/slipway-dev/slipway/sim/gnmi"
)

// selfSigned makes a certificate for 127.0.0.1 and writes it as a CA
// file.
func selfSigned(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "lab switch"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, file
}

// TestTLS: over TLS the driver checks the switch's certificate against
// ca_file; a certificate it does not trust fails as a switch that does
// not answer, naming it; skip_verify connects anyway.
func TestTLS(t *testing.T) {
	cert, caFile := selfSigned(t)
	tg := lab(t, simgnmi.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	d := open(t, tg.Addr(), testPassword, map[string]string{"tls": "true", "ca_file": caFile})
	if _, err := d.ConfigurePorts(t.Context(), driverNode(), drivers.PhaseProduction); err != nil {
		t.Fatalf("over TLS with the CA: %v", err)
	}
	_, other := selfSigned(t)
	d = open(t, tg.Addr(), testPassword, map[string]string{"tls": "true", "ca_file": other})
	_, err := d.Probe(t.Context())
	wantErr(t, err, drivers.Transient, "conformance-sw", tg.Addr())
	d = open(t, tg.Addr(), testPassword, map[string]string{"tls": "true", "skip_verify": "true"})
	if _, err := d.Probe(t.Context()); err != nil {
		t.Errorf("skip_verify: %v", err)
	}
	d = open(t, tg.Addr(), testPassword, nil)
	_, err = d.Probe(t.Context())
	wantErr(t, err, drivers.Transient, "conformance-sw")
}

// TestPlaintextNeedsExplicitSetting: the switch's password crosses the
// network in the clear over plain TCP, so a switch at a non-loopback
// address with a password and no tls setting is refused at Open, naming
// the switch and the settings; tls "false" is the operator saying so; a
// loopback address (the lab) needs nothing; skip_verify without TLS is
// refused rather than ignored.
func TestPlaintextNeedsExplicitSetting(t *testing.T) {
	cfg := func(addr string, extra map[string]string) drivers.Config {
		settings, secrets := map[string]string{}, map[string]drivers.Secret{}
		drivers.SwitchSettings(drivers.SwitchEndpoint{Name: "leaf-1", Address: addr, Username: testUser,
			Password: drivers.NewSecret(testPassword), Settings: extra}, settings, secrets)
		return drivers.Config{Settings: settings, Secrets: secrets}
	}
	for _, addr := range []string{"10.1.2.3:57400", "leaf-1.example.net:6030", "[2001:db8::1]:57400"} {
		d, err := gnmidrv.Open(cfg(addr, nil))
		if err == nil {
			d.Close()
		}
		wantErr(t, err, drivers.Permanent, "leaf-1", addr, "switch.leaf-1.tls")
		if err != nil && strings.Contains(err.Error(), testPassword) {
			t.Errorf("error names the password: %v", err)
		}
	}
	for _, c := range []struct {
		addr  string
		extra map[string]string
	}{
		{"10.1.2.3:57400", map[string]string{"tls": "false"}},
		{"10.1.2.3:57400", map[string]string{"tls": "true"}},
		{"127.0.0.1:57400", nil},
		{"localhost:57400", nil},
		{"[::1]:57400", nil},
	} {
		d, err := gnmidrv.Open(cfg(c.addr, c.extra))
		if err != nil {
			t.Errorf("%s %v: %v", c.addr, c.extra, err)
			continue
		}
		d.Close()
	}
	_, err := gnmidrv.Open(cfg("127.0.0.1:57400", map[string]string{"skip_verify": "true"}))
	wantErr(t, err, drivers.Permanent, "leaf-1", "skip_verify")
}
