// Package gnmi is the network driver for data-centre switches that speak
// gNMI with the OpenConfig models (openconfig-interfaces, -if-ethernet,
// -if-aggregate, -vlan, -network-instance, -lacp, -lldp): SONiC, Arista
// EOS, Nokia SR Linux (with its OpenConfig layer on), Cisco NX-OS. It
// uses the gNMI protocol buffers and gRPC (github.com/openconfig/gnmi)
// and builds its paths and JSON values itself: the driver touches a
// dozen leaves, too few to carry generated ygot structs for.
//
// Per switch it reads once (Get, JSON_IETF) and sets only what differs
// from drivers.PortPlan, in one SetRequest (one transaction on the
// switch); a port PortPlan does not name is never in a request.
package gnmi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	gpb "github.com/openconfig/gnmi/proto/gnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/slipway-dev/slipway/drivers"
)

// Name is the driver's registry name.
const Name = "gnmi"

// Settings. The driver's own: SettingTimeout. Each switch's, as
// "switch.NAME.KEY": SwitchTLS, SwitchCAFile, SwitchSkipVerify,
// SwitchTarget (besides address and username, and the secret
// switch.NAME.password).
const (
	SettingTimeout   = "timeout"     // each RPC's deadline (default 10s)
	SwitchTLS        = "tls"         // "true": TLS (real targets); default plain TCP, to a loopback address only unless "false" is given
	SwitchCAFile     = "ca_file"     // PEM CA bundle the switch's certificate chains to
	SwitchSkipVerify = "skip_verify" // "true": TLS without checking the certificate (a lab only)
	SwitchTarget     = "target"      // the gNMI path target naming the switch (default its name)
)

// Bounds.
const (
	defaultTimeout = 10 * time.Second
	maxRecvMsg     = 16 << 20 // bytes of one answer (a switch's whole /interfaces)
	maxCAFile      = 1 << 20
)

// Driver is the gnmi network driver.
type Driver struct {
	switches map[string]*endpoint
	timeout  time.Duration
}

// endpoint is one switch and its connection.
type endpoint struct {
	drivers.SwitchEndpoint
	target string
	conn   *grpc.ClientConn
	client gpb.GNMIClient
	lock   chan struct{} // one read-compare-set at a time on the switch
}

// New reads the configuration and makes a lazy connection per switch
// (no traffic until a call).
func New(cfg drivers.Config) (drivers.Network, error) {
	d, err := Open(cfg)
	if err != nil {
		return nil, err // not a nil *Driver in a non-nil interface
	}
	return d, nil
}

// Open is New returning the concrete driver (Close it when done).
func Open(cfg drivers.Config) (*Driver, error) {
	sws, rest, err := drivers.Switches(cfg)
	if err != nil {
		return nil, err
	}
	d := &Driver{switches: map[string]*endpoint{}, timeout: defaultTimeout}
	if err := drivers.ParseSettings(Name, rest, map[string]func(string) error{
		SettingTimeout: drivers.DurationSetting(&d.timeout),
	}); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(sws)) {
		e, err := dial(sws[name])
		if err != nil {
			d.Close()
			return nil, err
		}
		d.switches[name] = e
	}
	return d, nil
}

// dial makes the switch's client connection.
func dial(sw drivers.SwitchEndpoint) (*endpoint, error) {
	e := &endpoint{SwitchEndpoint: sw, target: sw.Name, lock: make(chan struct{}, 1)}
	useTLS, tlsSet, skip, caFile := false, false, false, ""
	bad := func(key string, err error) error {
		return drivers.Errorf(drivers.Permanent, "%s: setting switch.%s.%s: %v", Name, sw.Name, key, err)
	}
	for _, k := range slices.Sorted(maps.Keys(sw.Settings)) {
		v := strings.TrimSpace(sw.Settings[k])
		var err error
		switch k {
		case SwitchTLS:
			useTLS, err = strconv.ParseBool(v)
			tlsSet = true
		case SwitchSkipVerify:
			skip, err = strconv.ParseBool(v)
		case SwitchCAFile:
			caFile = v
		case SwitchTarget:
			e.target = v
		default:
			err = fmt.Errorf("unknown (known: address, username, %s, %s, %s, %s)", SwitchCAFile, SwitchSkipVerify, SwitchTarget, SwitchTLS)
		}
		if err != nil {
			return nil, bad(k, err)
		}
	}
	if err := checkTransport(sw, useTLS, tlsSet, skip); err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	if useTLS {
		tc, err := tlsConfig(sw.Address, caFile, skip)
		if err != nil {
			return nil, bad(SwitchCAFile, err)
		}
		creds = credentials.NewTLS(tc)
	}
	conn, err := grpc.NewClient(sw.Address, grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecvMsg)),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 100 * time.Millisecond,
			Multiplier: 1.6, Jitter: 0.2, MaxDelay: 5 * time.Second}, MinConnectTimeout: 5 * time.Second}))
	if err != nil {
		return nil, drivers.Errorf(drivers.Permanent, "%s: switch %s: address %q: %v (setting switch.%s.address)", Name, sw.Name, sw.Address, err, sw.Name)
	}
	e.conn, e.client = conn, gpb.NewGNMIClient(conn)
	return e, nil
}

// checkTransport refuses a password sent in the clear unless the
// operator said so: plain TCP to a switch that is not on this host
// needs setting tls "false" (its default is plain TCP for the lab's
// loopback target); skip_verify without TLS is refused, not ignored.
func checkTransport(sw drivers.SwitchEndpoint, useTLS, tlsSet, skip bool) error {
	if skip && !useTLS {
		return drivers.Errorf(drivers.Permanent, "%s: switch %s: setting switch.%s.%s needs switch.%s.%s \"true\" (plain TCP has no certificate to check)",
			Name, sw.Name, sw.Name, SwitchSkipVerify, sw.Name, SwitchTLS)
	}
	if useTLS || tlsSet || sw.Password.IsZero() || loopback(sw.Address) {
		return nil
	}
	return drivers.Errorf(drivers.Permanent, "%s: switch %s at %s: plain TCP would send its password in the clear: give setting switch.%s.%s \"true\" "+
		"(with switch.%s.%s, the CA its certificate chains to), or switch.%s.%s \"false\" to send it in the clear knowingly",
		Name, sw.Name, sw.Address, sw.Name, SwitchTLS, sw.Name, SwitchCAFile, sw.Name, SwitchTLS)
}

// loopback reports whether a gRPC address is on this host (a loopback
// IP, localhost or a unix socket).
func loopback(address string) bool {
	if strings.HasPrefix(address, "unix:") {
		return true
	}
	address = strings.TrimPrefix(address, "dns:///")
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = strings.Trim(address, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func tlsConfig(address, caFile string, skip bool) (*tls.Config, error) {
	host := address
	if i := strings.LastIndexByte(address, ':'); i > 0 {
		host = strings.Trim(address[:i], "[]")
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host, InsecureSkipVerify: skip} //nolint:gosec // skip_verify is the operator's explicit choice
	if caFile == "" {
		return tc, nil
	}
	fi, err := os.Stat(caFile)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxCAFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", caFile, maxCAFile)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	tc.RootCAs = pool
	return tc, nil
}

// Close closes the switches' connections.
func (d *Driver) Close() {
	for _, e := range d.switches {
		if e.conn != nil {
			_ = e.conn.Close()
		}
	}
}

// String names the driver.
func (d *Driver) String() string { return fmt.Sprintf("network driver %q (built in)", Name) }

// Probe asks every switch its capabilities.
func (d *Driver) Probe(ctx context.Context) (drivers.NetworkInfo, error) {
	if err := ctx.Err(); err != nil {
		return drivers.NetworkInfo{}, err
	}
	if len(d.switches) == 0 {
		return drivers.NetworkInfo{Reachable: true, Description: "gnmi: no switches configured (settings switch.NAME.address)"}, nil
	}
	var seen []string
	for _, name := range slices.Sorted(maps.Keys(d.switches)) {
		e := d.switches[name]
		rctx, cancel := d.rpcContext(ctx, e)
		resp, err := e.client.Capabilities(rctx, &gpb.CapabilityRequest{})
		cancel()
		if err != nil {
			return drivers.NetworkInfo{}, e.rpcError(ctx, "Capabilities", err)
		}
		if !slices.Contains(resp.GetSupportedEncodings(), gpb.Encoding_JSON_IETF) {
			return drivers.NetworkInfo{}, drivers.Errorf(drivers.Permanent,
				"%s: switch %s (%s) does not offer the JSON_IETF encoding the driver uses", Name, name, e.Address)
		}
		seen = append(seen, fmt.Sprintf("%s (gNMI %s, %d models)", name, resp.GetGNMIVersion(), len(resp.GetSupportedModels())))
	}
	return drivers.NetworkInfo{Reachable: true, Description: "gnmi: " + strings.Join(seen, ", ")}, nil
}

// rpcContext bounds one RPC and carries the switch's credentials as
// gRPC metadata (never in a log or an error).
func (d *Driver) rpcContext(ctx context.Context, e *endpoint) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	if e.Username != "" || !e.Password.IsZero() {
		ctx = withCredentials(ctx, e.Username, e.Password.Reveal())
	}
	return ctx, cancel
}

// acquire takes the switch's lock, or gives up when ctx ends.
func (e *endpoint) acquire(ctx context.Context) (func(), error) {
	select {
	case e.lock <- struct{}{}:
		return func() { <-e.lock }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: waiting for switch %s: %w", Name, e.Name, ctx.Err())
	}
}

var (
	_ drivers.Network       = (*Driver)(nil)
	_ drivers.NetworkReader = (*Driver)(nil)
)
