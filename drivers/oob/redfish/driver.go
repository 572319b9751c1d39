package redfish

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/common"
	gfredfish "github.com/stmcginnis/gofish/redfish"

	"github.com/slipway-dev/slipway/drivers"
)

// Name is the driver's name in the registry and in designs (oob.type).
const Name = "redfish"

// Settings of the driver (drivers.Config.Settings) and their defaults.
const (
	SettingTimeout      = "timeout"      // one HTTP request (default 20s)
	SettingRetries      = "retries"      // retries of a 503 answer, after its Retry-After (default 3, at most 10)
	SettingGracefulWait = "gracefulWait" // how long PowerOff waits for a graceful shutdown before forcing it (default 30s)
	SettingPollInterval = "pollInterval" // power state polling while confirming (default 1s)
	SettingResetWait    = "resetWait"    // how long a BMC may not answer while it resets after its update (default drivers.ResetWait)
)

type settings struct {
	timeout, gracefulWait, pollInterval time.Duration
	resetWait                           time.Duration
	retries                             int
}

var defaults = settings{timeout: 20 * time.Second, gracefulWait: 30 * time.Second, pollInterval: time.Second, retries: 3, resetWait: drivers.ResetWait}

// credentialsRefused is how errors say the BMC refused the credentials.
const credentialsRefused = "rejected the credentials"

// maxSessions bounds the sessions kept for reuse.
const maxSessions = 4096

// Driver is the Redfish OOB driver. It is safe for concurrent use.
type Driver struct {
	s          settings
	locks      drivers.KeyedLocks // one call at a time per BMC: a boot override is read back before a power change boots it
	mu         sync.Mutex
	sessions   map[sessionKey]kept
	transports map[string]*http.Transport // by endpoint and trust
	silent     map[string]time.Time       // update.go: since when a BMC following an update has not answered
}

// kept is a session kept for reuse, and the BMC it is with (its trust
// settings, for the logout; never its password).
type kept struct {
	ss  *gofish.Session
	bmc drivers.BMC
}

// sessionKey names a login: the endpoint, the user and a hash of the
// password (a call with another password never reuses the session).
type sessionKey struct{ endpoint, user, pw string }

var (
	_ drivers.OOB         = (*Driver)(nil)
	_ drivers.OOBBIOS     = (*Driver)(nil)
	_ drivers.OOBFirmware = (*Driver)(nil)

	_ drivers.OOBVirtualMedia = (*Driver)(nil)
)

// New makes the driver from its configuration (the registry's factory).
func New(cfg drivers.Config) (drivers.OOB, error) {
	d, err := NewDriver(cfg)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// NewDriver is New returning the concrete type.
func NewDriver(cfg drivers.Config) (*Driver, error) {
	s := defaults
	err := drivers.ParseSettings(Name, cfg.Settings, map[string]func(string) error{
		SettingTimeout:      drivers.DurationSetting(&s.timeout),
		SettingGracefulWait: drivers.DurationSetting(&s.gracefulWait),
		SettingPollInterval: drivers.DurationSetting(&s.pollInterval),
		SettingResetWait:    drivers.DurationSetting(&s.resetWait),
		SettingRetries:      drivers.IntSetting(&s.retries, 0, 10),
	})
	if err != nil {
		return nil, err
	}
	return &Driver{s: s, sessions: map[sessionKey]kept{}, transports: map[string]*http.Transport{}}, nil
}

// Close logs out of every session kept.
func (d *Driver) Close() error {
	d.mu.Lock()
	sessions := d.sessions
	d.sessions = map[sessionKey]kept{}
	d.mu.Unlock()
	for k, kp := range sessions {
		ctx, cancel := context.WithTimeout(context.Background(), d.s.timeout)
		if c, err := gofish.ConnectContext(ctx, gofish.ClientConfig{Endpoint: k.endpoint, Session: kp.ss, HTTPClient: d.client(k.endpoint, kp.bmc, nil)}); err == nil {
			c.Logout()
		}
		cancel()
	}
	return nil
}

// endpoint is the BMC's base URL.
func endpoint(b drivers.BMC) string {
	port := b.Port
	if port == 0 {
		port = 443
	}
	return "https://" + net.JoinHostPort(b.Address, strconv.Itoa(port))
}

func keyOf(b drivers.BMC) sessionKey {
	sum := sha256.Sum256([]byte(b.Password.Reveal()))
	return sessionKey{endpoint(b), b.Username, string(sum[:])}
}

// session is what a call works on: the client and the system.
type session struct {
	c   *gofish.APIClient
	sys *gfredfish.ComputerSystem
}

// with runs fn on the BMC's system, logged in (a kept session, or a new
// login); a kept session the BMC no longer knows is replaced once.
func (d *Driver) with(ctx context.Context, b drivers.BMC, fn func(s session) error) error {
	if err := ctx.Err(); err != nil {
		return classify(b, err, nil)
	}
	if b.Address == "" {
		return drivers.Errorf(drivers.Permanent, "redfish: node %s has no BMC address: set oob.address", b.Node)
	}
	unlock, err := d.locks.Lock(ctx, endpoint(b))
	if err != nil {
		return classify(b, err, nil)
	}
	defer unlock()
	seen := &tokens{} // the session tokens this call sends or gets: redacted from its error
	for attempt := 0; ; attempt++ {
		s, fresh, err := d.open(ctx, b, seen)
		if err != nil {
			return classify(b, err, seen)
		}
		err = fn(s)
		if err != nil && status(err) == http.StatusUnauthorized && !fresh && attempt == 0 {
			d.forget(b) // the BMC dropped the session: log in again
			continue
		}
		return classify(b, err, seen)
	}
}

// open connects with the kept session, or logs in and keeps it; fresh
// says it logged in.
func (d *Driver) open(ctx context.Context, b drivers.BMC, seen *tokens) (session, bool, error) {
	k := keyOf(b)
	cfg := gofish.ClientConfig{Endpoint: k.endpoint, HTTPClient: d.client(k.endpoint, b, seen), ReuseConnections: true}
	d.mu.Lock()
	ss := d.sessions[k].ss
	d.mu.Unlock()
	fresh := ss == nil
	if fresh {
		cfg.Username, cfg.Password = b.Username, b.Password.Reveal()
	} else {
		cfg.Session = ss
	}
	c, err := gofish.ConnectContext(ctx, cfg)
	if err != nil {
		return session{}, fresh, err
	}
	if fresh {
		if got, err := c.GetSession(); err == nil && got.Token != "" {
			trust := b
			trust.Password = drivers.Secret{}
			d.keep(k, kept{ss: got, bmc: trust})
		}
	}
	sys, err := system(c, b.SystemID)
	if err != nil && status(err) == http.StatusUnauthorized && !fresh {
		d.forget(b)
		return d.open(ctx, b, seen)
	}
	return session{c: c, sys: sys}, fresh, err
}

func (d *Driver) keep(k sessionKey, kp kept) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.sessions) >= maxSessions {
		for old := range d.sessions { // drop one: the BMC ends it when idle
			delete(d.sessions, old)
			break
		}
	}
	d.sessions[k] = kp
}

func (d *Driver) forget(b drivers.BMC) {
	d.mu.Lock()
	delete(d.sessions, keyOf(b))
	d.mu.Unlock()
}

// system finds the BMC's system: the one named id, or the only one.
func system(c *gofish.APIClient, id string) (*gfredfish.ComputerSystem, error) {
	systems, err := c.Service.Systems()
	if err != nil {
		return nil, err
	}
	for _, s := range systems {
		if id != "" && s.ID == id {
			return s, nil
		}
	}
	switch {
	case id != "":
		return nil, drivers.Errorf(drivers.Permanent, "the BMC has no system %s (set the node's oob.systemId to one of %s)", id, systemIDs(systems))
	case len(systems) != 1:
		return nil, drivers.Errorf(drivers.Permanent, "the BMC manages %d systems (%s): set the node's oob.systemId", len(systems), systemIDs(systems))
	}
	return systems[0], nil
}

func systemIDs(ss []*gfredfish.ComputerSystem) string {
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = s.ID
	}
	return strings.Join(ids, ", ")
}

// status is the HTTP status of a gofish error (0 when none); for a
// collection whose members failed, the status they share.
func status(err error) int {
	var e *common.Error
	if errors.As(err, &e) {
		return e.HTTPReturnedStatusCode
	}
	var ce *common.CollectionError
	if errors.As(err, &ce) {
		code := 0
		for _, f := range ce.Failures {
			if c := status(f); code == 0 || c == code {
				code = c
			} else {
				return 0
			}
		}
		return code
	}
	return 0
}

// classify makes err a classified driver error naming the BMC: 401 and
// 403 and other refusals are Permanent, the rest (no answer, 5xx, a
// deadline) Transient. No form of the password or of the session tokens
// in seen is in it (a BMC, or a proxy, may echo the request), and what
// it quotes of the BMC's answer is bounded.
func classify(b drivers.BMC, err error, seen *tokens) error {
	if err == nil {
		return nil
	}
	var de *drivers.Error
	if errors.As(err, &de) {
		return drivers.Errorf(de.Class, "redfish BMC %s: %s", endpoint(b), redact(b, de.Err, seen))
	}
	switch code := status(err); {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return drivers.Errorf(drivers.Permanent, "redfish BMC %s %s of user %s (%d): check oob.credentials", endpoint(b), credentialsRefused, b.Username, code)
	case code >= 400 && code < 500:
		return drivers.Errorf(drivers.Permanent, "redfish BMC %s refused the request: %s", endpoint(b), redact(b, err, seen))
	case errors.Is(err, context.Canceled):
		return drivers.NewError(drivers.Permanent, fmt.Errorf("redfish BMC %s: %w", endpoint(b), err))
	case redirected(err):
		return drivers.Errorf(drivers.Permanent, "redfish BMC %s: %s: check oob.address and oob.port (the BMC's own Redfish service, not a URL that redirects)", endpoint(b), redact(b, err, seen))
	}
	return drivers.Errorf(drivers.Transient, "redfish BMC %s does not answer (%s): check that it is up and reachable over HTTPS", endpoint(b), redact(b, err, seen))
}

// redirected reports whether err is (or a collection's failures hold) a
// redirect to another origin.
func redirected(err error) bool {
	if _, ok := errors.AsType[*redirectError](err); ok {
		return true
	}
	if ce, ok := errors.AsType[*common.CollectionError](err); ok {
		for _, f := range ce.Failures {
			if redirected(f) {
				return true
			}
		}
	}
	return false
}

// redact is err's message as an error may quote it: every form of the
// password, of "user:password" (HTTP Basic's) and of the session tokens
// redacted, and bounded (drivers.PeerText).
func redact(b drivers.BMC, err error, seen *tokens) string {
	secrets := seen.list()
	if pw := b.Password.Reveal(); pw != "" {
		secrets = append(secrets, pw, b.Username+":"+pw)
	}
	return drivers.PeerText(err.Error(), secrets...)
}
