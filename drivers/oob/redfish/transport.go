package redfish

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// maxRetryAfter bounds the wait a 503's Retry-After asks for.
const maxRetryAfter = 10 * time.Second

// client is the HTTP client of a BMC: its trust (CA file, pinned
// fingerprint, insecure, or the system's roots), connections kept per
// endpoint and trust, and 503 answers retried.
func (d *Driver) client(ep string, b drivers.BMC) *http.Client {
	key := strings.Join([]string{ep, b.CAFile, b.Fingerprint, strconv.FormatBool(b.Insecure)}, "|")
	d.mu.Lock()
	t := d.transports[key]
	if t == nil {
		t = &http.Transport{TLSClientConfig: tlsConfig(b), MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute,
			TLSHandshakeTimeout: d.s.timeout, ResponseHeaderTimeout: d.s.timeout}
		d.transports[key] = t
	}
	d.mu.Unlock()
	return &http.Client{Timeout: d.s.timeout, Transport: retry503{next: t, retries: d.s.retries}}
}

// tlsConfig is how the BMC's certificate is checked. A CA file that can't
// be read checks against an empty pool: every connection fails, saying
// why (verifyError).
func tlsConfig(b drivers.BMC) *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case b.Insecure:
		c.InsecureSkipVerify = true // the design says so (oob.insecure)
	case b.Fingerprint != "":
		want := strings.ToLower(strings.ReplaceAll(b.Fingerprint, ":", ""))
		c.InsecureSkipVerify = true // the pinned fingerprint is checked instead
		c.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("the BMC sent no certificate")
			}
			sum := sha256.Sum256(raw[0])
			if got := hex.EncodeToString(sum[:]); got != want {
				return fmt.Errorf("the BMC's certificate has SHA-256 %s, not the pinned oob.fingerprint: check the BMC, or update the fingerprint if its certificate was replaced", got)
			}
			return nil
		}
	case b.CAFile != "":
		pool := x509.NewCertPool()
		if pem, err := os.ReadFile(b.CAFile); err == nil {
			pool.AppendCertsFromPEM(pem)
		}
		c.RootCAs = pool
	}
	return c
}

// retry503 resends a request the BMC answered 503 after the wait its
// Retry-After asks (at most maxRetryAfter, and never past the request's
// deadline), at most retries times.
type retry503 struct {
	next    http.RoundTripper
	retries int
}

func (r retry503) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	for attempt := 0; ; attempt++ {
		if body != nil {
			req.Body = io.NopCloser(bytes.NewReader(body))
		}
		resp, err := r.next.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || attempt >= r.retries {
			return resp, err
		}
		wait := retryAfter(resp.Header.Get("Retry-After"))
		resp.Body.Close()
		select {
		case <-req.Context().Done():
			return nil, req.Context().Err()
		case <-time.After(wait):
		}
	}
}

// retryAfter reads a Retry-After of seconds (1s when absent or a date).
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return time.Second
	}
	return min(time.Duration(n)*time.Second, maxRetryAfter)
}
