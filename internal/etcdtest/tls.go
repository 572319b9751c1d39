package etcdtest

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
	"testing"
	"time"
)

// TLSFiles are the PEM files of a TLS cluster: its CA, the members'
// certificate (for 127.0.0.1) and a client certificate.
type TLSFiles struct {
	CA, ServerCert, ServerKey, ClientCert, ClientKey string
}

// newTLSFiles makes a CA and the two certificates it signs, in a
// temporary directory.
func newTLSFiles(t testing.TB) *TLSFiles {
	t.Helper()
	dir := t.TempDir()
	caKey, caDER := certificate(t, &x509.Certificate{Subject: pkix.Name{CommonName: "slipway test CA"}, IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}, nil, nil)
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	f := &TLSFiles{CA: filepath.Join(dir, "ca.pem")}
	writePEM(t, f.CA, "CERTIFICATE", caDER)
	for _, c := range []struct {
		cert, key *string
		name      string
		tmpl      *x509.Certificate
	}{
		{&f.ServerCert, &f.ServerKey, "server", &x509.Certificate{Subject: pkix.Name{CommonName: "etcd"},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}},
		{&f.ClientCert, &f.ClientKey, "client", &x509.Certificate{Subject: pkix.Name{CommonName: "slipway"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}},
	} {
		key, der := certificate(t, c.tmpl, ca, caKey)
		*c.cert, *c.key = filepath.Join(dir, c.name+".pem"), filepath.Join(dir, c.name+"-key.pem")
		writePEM(t, *c.cert, "CERTIFICATE", der)
		kb, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, *c.key, "EC PRIVATE KEY", kb)
	}
	return f
}

// certificate signs tmpl with parent's key (itself when parent is nil).
func certificate(t testing.TB, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = serial, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage |= x509.KeyUsageDigitalSignature
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return key, der
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// clientConfig is a client's TLS: the CA and the client certificate.
func (f *TLSFiles) clientConfig(t testing.TB) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	b, err := os.ReadFile(f.CA)
	if err != nil || !pool.AppendCertsFromPEM(b) {
		t.Fatalf("CA %s: %v", f.CA, err)
	}
	kp, err := tls.LoadX509KeyPair(f.ClientCert, f.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{kp}, MinVersion: tls.VersionTLS12}
}
