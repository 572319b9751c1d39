package ipmi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/internal/backoff"

	"github.com/slipway-dev/slipway/drivers"
	goipmi "github.com/vmware/goipmi"
)

// Name is the driver's registry name.
const Name = "ipmi"

// DefaultPort is the RMCP port a BMC listens on unless the design says
// otherwise.
const DefaultPort = 623

// Settings of the driver (drivers.Config.Settings) and their defaults.
const (
	SettingTimeout       = "timeout"       // wait for one reply before retransmitting (default 2s)
	SettingRetries       = "retries"       // retransmissions of a request after a timeout (default 3, at most 10)
	SettingBackoff       = "backoff"       // pause before the first retransmission, doubling (default 250ms)
	SettingMaxConcurrent = "maxConcurrent" // BMC operations in flight at once, all BMCs together (default 32)
	SettingPollInterval  = "pollInterval"  // power state polling while confirming a power change (default 1s)
	SettingPowerWait     = "powerWait"     // how long one call waits for a power change before answering InProgress (default 30s)
	SettingCycleTimeout  = "cycleTimeout"  // a power cycle not confirmed by then is Failed (default 5m)
)

type settings struct {
	policy
	maxConcurrent int
	pollInterval  time.Duration
	powerWait     time.Duration
	cycleTimeout  time.Duration
}

var defaults = settings{
	policy:        policy{timeout: 2 * time.Second, retries: 3, backoff: 250 * time.Millisecond},
	maxConcurrent: 32,
	pollInterval:  time.Second,
	powerWait:     30 * time.Second,
	cycleTimeout:  5 * time.Minute,
}

const maxRetries = 10

// Driver is the built-in IPMI OOB driver. It is safe for concurrent use:
// calls for one BMC (address and port) run one at a time, and at most
// maxConcurrent calls run at once.
type Driver struct {
	s        settings
	sem      chan struct{}
	keptIdle time.Duration // how long a kept session may wait for its next call (maxKeptIdle)

	mu     sync.Mutex
	locks  map[string]*bmcLock
	cycles map[string]*cycleState
}

type bmcLock struct {
	ch   chan struct{} // holds one token while a call runs
	refs int
}

// cycleState is a power cycle issued and not yet confirmed.
type cycleState struct {
	issued   time.Time
	lastCall time.Time // of the last PowerCycle call waiting for it
	fromOff  bool      // the machine was off: the "cycle" was a power on
	sawOff   bool      // the machine was seen off since the cycle was issued
}

var _ drivers.OOB = (*Driver)(nil)

// New returns the driver configured by cfg.Settings (see the Setting
// constants). Unknown settings and bad values are Permanent errors naming
// the setting.
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
	err := drivers.ParseSettings("ipmi", cfg.Settings, map[string]func(string) error{
		SettingTimeout:       drivers.DurationSetting(&s.timeout),
		SettingBackoff:       drivers.DurationSetting(&s.backoff),
		SettingPollInterval:  drivers.DurationSetting(&s.pollInterval),
		SettingPowerWait:     drivers.DurationSetting(&s.powerWait),
		SettingCycleTimeout:  drivers.DurationSetting(&s.cycleTimeout),
		SettingRetries:       drivers.IntSetting(&s.retries, 0, maxRetries),
		SettingMaxConcurrent: drivers.IntSetting(&s.maxConcurrent, 1, 1<<16),
	})
	if err != nil {
		return nil, err
	}
	return &Driver{s: s, sem: make(chan struct{}, s.maxConcurrent), keptIdle: maxKeptIdle, locks: map[string]*bmcLock{}, cycles: map[string]*cycleState{}}, nil
}

// String names the driver.
func (d *Driver) String() string { return fmt.Sprintf("oob driver %q (built in)", Name) }

// target is a validated drivers.BMC.
type target struct {
	addr  string // host:port
	v2    bool
	suite cipherSuite
	priv  byte
	user  string
	bmc   drivers.BMC
}

// newTarget checks what the design says about the BMC; its errors are
// Permanent and never reveal the password.
func newTarget(b drivers.BMC) (target, error) {
	node := b.Node
	if node == "" {
		node = "?"
	}
	bad := func(format string, args ...any) (target, error) {
		return target{}, drivers.Errorf(drivers.Permanent, "ipmi: node %s: "+format, append([]any{node}, args...)...)
	}
	t := target{user: b.Username, bmc: b}
	if b.Address == "" {
		return bad("the BMC has no address")
	}
	port := b.Port
	if port == 0 {
		port = DefaultPort
	}
	if port < 0 || port > 65535 {
		return bad("port %d is out of range", b.Port)
	}
	t.addr = net.JoinHostPort(b.Address, strconv.Itoa(port))
	switch b.Protocol {
	case "", "lanplus":
		t.v2 = true
		id := b.CipherSuite
		if id == 0 {
			id = 3
		}
		cs, ok := cipherSuites[id]
		if !ok {
			return bad("cipher suite %d is not supported (use 3, the default, or 17; also 1, 2, 15, 16)", b.CipherSuite)
		}
		t.suite = cs
		if n := len(b.Password.Reveal()); n > 20 {
			return bad("the BMC password is longer than 20 bytes, the most IPMI v2.0 carries")
		}
	case "lan":
		if n := len(b.Password.Reveal()); n > 16 {
			return bad("the BMC password is longer than 16 bytes, the most IPMI v1.5 carries")
		}
	default:
		return bad("protocol %q: use lanplus (IPMI v2.0, the default) or lan (IPMI v1.5)", b.Protocol)
	}
	switch b.Privilege {
	case "", "administrator":
		t.priv = goipmi.PrivLevelAdmin
	case "operator":
		t.priv = goipmi.PrivLevelOperator
	default:
		return bad("privilege %q: use administrator or operator", b.Privilege)
	}
	if len(b.Username) > 16 {
		return bad("user name %q is longer than 16 bytes, the most IPMI carries", b.Username)
	}
	return t, nil
}

func (t target) describe() string {
	if t.v2 {
		return fmt.Sprintf("lanplus, cipher suite %d", t.suite.id)
	}
	return "lan: IPMI v1.5 with MD5"
}

// call is one driver call on one BMC: it holds the BMC's lock, a slot of
// the global limit (except while it sleeps) and an open session.
type call struct {
	d    *Driver
	ctx  context.Context
	t    target
	lock *bmcLock
	slot bool
	l    *link
	s    session
}

// with runs f on an open session with the BMC, one call per BMC at a time
// and at most maxConcurrent calls at once.
func (d *Driver) with(ctx context.Context, b drivers.BMC, f func(c *call) error) error {
	if ctx.Err() != nil {
		return ctxError(ctx, bmcLabel(b), "not started")
	}
	t, err := newTarget(b)
	if err != nil {
		return err
	}
	c := &call{d: d, ctx: ctx, t: t}
	if err := c.acquire(); err != nil {
		return err
	}
	defer c.release()
	if err := c.openOrTake(); err != nil {
		return err
	}
	err = f(c)
	if err == nil && c.keep() {
		return nil
	}
	c.close()
	return err
}

// sessionKey is what a kept session may be reused for (drivers'
// session scopes): this driver, the BMC, the same credentials (the
// password as its hash), privilege and protocol.
type sessionKey struct {
	d          *Driver
	addr, user string
	pw         [sha256.Size]byte
	priv       byte
	v2         bool
	suite      int
}

// keptSession is a session kept in a scope, with the context its socket
// was opened with (only a call with that same context reuses it: the
// socket gives up when that context ends) and when it was last used.
type keptSession struct {
	ctx  context.Context
	l    *link
	s    session
	used time.Time
}

// maxKeptIdle is how long a kept session may wait for its next call: far
// below the 60 s after which BMCs commonly drop an idle session, so that
// a call never finds its session gone.
const maxKeptIdle = 10 * time.Second

func (c *call) sessionKey() sessionKey {
	k := sessionKey{d: c.d, addr: c.t.addr, user: c.t.user, pw: sha256.Sum256([]byte(c.t.bmc.Password.Reveal())), priv: c.t.priv, v2: c.t.v2}
	if c.t.v2 {
		k.suite = c.t.suite.id
	}
	return k
}

// openOrTake uses the session the caller's scope keeps for this BMC and
// these credentials, opened with the same context; else opens one.
func (c *call) openOrTake() error {
	if v, ok := drivers.TakeSession(c.ctx, c.sessionKey()).(*keptSession); ok {
		if v.ctx == c.ctx && time.Since(v.used) < c.d.keptIdle {
			c.l, c.s = v.l, v.s
			return nil
		}
		v.s.close()
		v.l.close()
	}
	return c.open()
}

// keep gives the session to the caller's scope for its next call to the
// BMC (true), or says there is no scope to keep it in.
func (c *call) keep() bool {
	k := &keptSession{ctx: c.ctx, l: c.l, s: c.s, used: time.Now()}
	return drivers.KeepSession(c.ctx, c.sessionKey(), k, func() { k.s.close(); k.l.close() })
}

func bmcLabel(b drivers.BMC) string {
	port := b.Port
	if port == 0 {
		port = DefaultPort
	}
	return net.JoinHostPort(b.Address, strconv.Itoa(port))
}

func (c *call) acquire() error {
	d := c.d
	d.mu.Lock()
	l := d.locks[c.t.addr]
	if l == nil {
		l = &bmcLock{ch: make(chan struct{}, 1)}
		d.locks[c.t.addr] = l
	}
	l.refs++
	d.mu.Unlock()
	c.lock = l
	select {
	case l.ch <- struct{}{}:
	case <-c.ctx.Done():
		c.unref()
		return ctxError(c.ctx, c.t.addr, "waiting for another call to this BMC")
	}
	if err := c.takeSlot(); err != nil {
		<-l.ch
		c.unref()
		return err
	}
	return nil
}

func (c *call) takeSlot() error {
	select {
	case c.d.sem <- struct{}{}:
		c.slot = true
		return nil
	case <-c.ctx.Done():
		return ctxError(c.ctx, c.t.addr, "waiting for a free slot (maxConcurrent)")
	}
}

func (c *call) release() {
	if c.slot {
		<-c.d.sem
		c.slot = false
	}
	<-c.lock.ch
	c.unref()
}

func (c *call) unref() {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if c.lock.refs--; c.lock.refs == 0 {
		delete(c.d.locks, c.t.addr)
	}
}

// pause sleeps between polls without holding a slot of the global limit.
func (c *call) pause(d time.Duration) error {
	<-c.d.sem
	c.slot = false
	if err := backoff.Sleep(c.ctx, d); err != nil {
		return ctxError(c.ctx, c.t.addr, "waiting between polls")
	}
	return c.takeSlot()
}

func (c *call) open() error {
	l, err := dial(c.ctx, c.t.addr, c.d.s.policy)
	if err != nil {
		return err
	}
	pw := []byte(c.t.bmc.Password.Reveal())
	defer clear(pw)
	var s session
	if c.t.v2 {
		s, err = openV2(l, c.t.suite, c.t.user, pw, c.t.priv)
	} else {
		s, err = openV15(l, c.t.user, pw, c.t.priv)
	}
	if err != nil {
		l.close()
		return err
	}
	c.l, c.s = l, s
	return nil
}

func (c *call) close() {
	c.s.close()
	c.l.close()
}

// cmd runs a request that must succeed.
func (c *call) cmd(r request) (reply, error) {
	p, err := c.s.do(r)
	if err != nil {
		return p, err
	}
	if p.cc != goipmi.CommandCompleted {
		return p, commandError(c.t.addr, r, p.cc)
	}
	return p, nil
}

// power reads the power state with Get Chassis Status.
func (c *call) power() (bool, error) {
	r := request{netFn: goipmi.NetworkFunctionChassis, cmd: goipmi.CommandChassisStatus, name: "Get Chassis Status"}
	p, err := c.cmd(r)
	if err != nil {
		return false, err
	}
	st := &goipmi.ChassisStatusResponse{}
	if err := decode(p, st); err != nil {
		return false, drivers.Errorf(drivers.Transient, "BMC %s: short Get Chassis Status response", c.t.addr)
	}
	return st.IsSystemPowerOn(), nil
}

// control sends Chassis Control.
func (c *call) control(ctl goipmi.ChassisControl) error {
	_, err := c.cmd(request{netFn: goipmi.NetworkFunctionChassis, cmd: goipmi.CommandChassisControl,
		data: []byte{byte(ctl)}, name: "Chassis Control (power " + ctl.String() + ")"})
	return err
}

func onOff(on bool) drivers.PowerState {
	if on {
		return drivers.PowerOn
	}
	return drivers.PowerOff
}

// waitPower polls the power state until it is want, for at most powerWait
// (and the context). For a cycle (cs non-nil) "on" counts once the machine
// was seen off since the cycle was issued, or a poll interval has passed
// (a BMC may cycle faster than it is polled).
func (c *call) waitPower(want bool, cs *cycleState) (bool, error) {
	deadline := time.Now().Add(c.d.s.powerWait)
	for {
		on, err := c.power()
		if err != nil {
			return false, err
		}
		if cs != nil && !on {
			c.d.mu.Lock()
			cs.sawOff = true
			c.d.mu.Unlock()
		}
		if on == want && (cs == nil || c.cycleSettled(cs)) {
			return true, nil
		}
		if time.Now().Add(c.d.s.pollInterval).After(deadline) {
			return false, nil
		}
		if err := c.pause(c.d.s.pollInterval); err != nil {
			return false, err
		}
	}
}

func (c *call) cycleSettled(cs *cycleState) bool {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	return cs.fromOff || cs.sawOff || time.Since(cs.issued) >= c.d.s.pollInterval
}

// Probe opens a session, which proves the BMC reachable and the
// credentials good, and reads Get Device ID and Get System GUID.
func (d *Driver) Probe(ctx context.Context, b drivers.BMC) (drivers.BMCInfo, error) {
	var info drivers.BMCInfo
	err := d.with(ctx, b, func(c *call) error {
		info.Reachable, info.Authorized = true, true
		p, err := c.cmd(request{netFn: goipmi.NetworkFunctionApp, cmd: goipmi.CommandGetDeviceID, name: "Get Device ID"})
		if err != nil {
			return err
		}
		if len(p.data) < 11 {
			return drivers.Errorf(drivers.Transient, "BMC %s: short Get Device ID response", c.t.addr)
		}
		dd := p.data
		mfr := uint32(dd[6]) | uint32(dd[7])<<8 | uint32(dd[8]&0x0f)<<16
		product := uint16(dd[9]) | uint16(dd[10])<<8
		info.Vendor = vendor(mfr)
		info.Firmware = fmt.Sprintf("%d.%02x", dd[2]&0x7f, dd[3])
		info.Description = fmt.Sprintf("IPMI %d.%d BMC at %s (%s): device ID 0x%02x revision %d, product 0x%04x",
			dd[4]&0x0f, dd[4]>>4, c.t.addr, c.t.describe(), dd[0], dd[1]&0x0f, product)
		guid := c.s.systemGUID()
		if g, err := c.s.do(request{netFn: goipmi.NetworkFunctionApp, cmd: cmdGetSystemGUID, name: "Get System GUID"}); err == nil &&
			g.cc == goipmi.CommandCompleted && len(g.data) >= 16 {
			copy(guid[:], g.data)
		} else if err != nil {
			return err
		}
		if guid != ([16]byte{}) {
			info.GUID = formatGUID(guid)
		}
		return nil
	})
	if err != nil {
		var ae *AuthError
		var nr *noReplyError
		switch {
		case errors.As(err, &ae):
			return drivers.BMCInfo{Reachable: true, Description: fmt.Sprintf("BMC at %s rejected the credentials", ae.Target)}, err
		case errors.As(err, &nr):
			return drivers.BMCInfo{}, err
		case info.Reachable:
			return info, err
		}
		return drivers.BMCInfo{}, err
	}
	return info, nil
}

func vendor(id uint32) string {
	if id == 0 {
		return "unspecified"
	}
	if id <= 0xffff {
		if s := goipmi.OemID(id).String(); !strings.HasPrefix(s, "Unknown") {
			return s
		}
	}
	return fmt.Sprintf("IANA enterprise %d", id)
}

// formatGUID writes the 16 GUID bytes in wire order, grouped 8-4-4-4-12.
func formatGUID(g [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", g[0:4], g[4:6], g[6:8], g[8:10], g[10:16])
}

// PowerStatus reads the power state (Get Chassis Status).
func (d *Driver) PowerStatus(ctx context.Context, b drivers.BMC) (drivers.PowerState, error) {
	state := drivers.PowerUnknown
	err := d.with(ctx, b, func(c *call) error {
		on, err := c.power()
		if err == nil {
			state = onOff(on)
		}
		return err
	})
	if err != nil {
		return drivers.PowerUnknown, err
	}
	return state, nil
}

// PowerOn powers the machine on (Chassis Control power up) unless it is
// on, and confirms by polling; Done once on, InProgress if it is not on
// within powerWait.
func (d *Driver) PowerOn(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	return d.setPower(ctx, b, true)
}

// PowerOff powers the machine off at once (Chassis Control power down, not
// a soft shutdown) unless it is off, and confirms like PowerOn.
func (d *Driver) PowerOff(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	return d.setPower(ctx, b, false)
}

func (d *Driver) setPower(ctx context.Context, b drivers.BMC, want bool) (drivers.Result, error) {
	var res drivers.Result
	err := d.with(ctx, b, func(c *call) error {
		d.mu.Lock()
		delete(d.cycles, c.t.addr) // an explicit power change ends a pending cycle
		d.mu.Unlock()
		on, err := c.power()
		if err != nil {
			return err
		}
		if on == want {
			res = drivers.Done("ipmi: %s (node %s) is already %s", c.t.addr, nodeName(b), onOff(want))
			return nil
		}
		ctl := goipmi.ControlPowerDown
		if want {
			ctl = goipmi.ControlPowerUp
		}
		if err := c.control(ctl); err != nil {
			return err
		}
		ok, err := c.waitPower(want, nil)
		if err != nil {
			return err
		}
		if ok {
			res = drivers.Done("ipmi: powered %s %s (node %s)", onOff(want), c.t.addr, nodeName(b))
		} else {
			res = drivers.InProgress(d.s.pollInterval, "ipmi: asked %s (node %s) to power %s; it still reports %s",
				c.t.addr, nodeName(b), onOff(want), onOff(!want))
		}
		return nil
	})
	if err != nil {
		return drivers.Result{}, err
	}
	return res, nil
}

// PowerCycle works from any state: a machine that is off is powered on,
// one that is on gets Chassis Control power cycle. Either way the call
// then polls until the machine is on again and answers Done; if that takes
// longer than powerWait it answers InProgress, and the next PowerCycle
// call keeps waiting for the same cycle instead of starting another. A
// cycle not confirmed within cycleTimeout is Failed.
func (d *Driver) PowerCycle(ctx context.Context, b drivers.BMC) (drivers.Result, error) {
	var res drivers.Result
	err := d.with(ctx, b, func(c *call) error {
		d.mu.Lock()
		cs := d.cycles[c.t.addr]
		if cs != nil && time.Since(cs.lastCall) > d.s.cycleTimeout {
			delete(d.cycles, c.t.addr) // stale: nobody asked for a long time
			cs = nil
		}
		if cs != nil {
			cs.lastCall = time.Now()
		}
		d.mu.Unlock()
		if cs == nil {
			on, err := c.power()
			if err != nil {
				return err
			}
			ctl := goipmi.ControlPowerCycle
			if !on {
				ctl = goipmi.ControlPowerUp
			}
			if err := c.control(ctl); err != nil {
				return err
			}
			cs = &cycleState{issued: time.Now(), lastCall: time.Now(), fromOff: !on}
			d.mu.Lock()
			d.cycles[c.t.addr] = cs
			d.mu.Unlock()
		}
		ok, err := c.waitPower(true, cs)
		if err != nil {
			return err // the cycle stays pending: the next call confirms it
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		switch {
		case ok:
			delete(d.cycles, c.t.addr)
			if cs.fromOff {
				res = drivers.Done("ipmi: %s (node %s) was off: powered it on", c.t.addr, nodeName(b))
			} else {
				res = drivers.Done("ipmi: power cycled %s (node %s); it is on again", c.t.addr, nodeName(b))
			}
		case time.Since(cs.issued) > d.s.cycleTimeout:
			delete(d.cycles, c.t.addr)
			res = drivers.Failed("ipmi: %s (node %s) did not power on within %v of the power cycle", c.t.addr, nodeName(b), d.s.cycleTimeout)
		default:
			res = drivers.InProgress(d.s.pollInterval, "ipmi: power cycle of %s (node %s) under way: waiting for it to power on", c.t.addr, nodeName(b))
		}
		return nil
	})
	if err != nil {
		return drivers.Result{}, err
	}
	return res, nil
}

// Boot devices and flags of Set System Boot Options parameter 5.
var bootSelectors = map[string]goipmi.BootDevice{"pxe": goipmi.BootDevicePxe, "disk": goipmi.BootDeviceDisk}

const (
	bootFlagValid      = 0x80
	bootFlagPersistent = 0x40
	bootFlagEFI        = 0x20
	bootSelectorMask   = 0x3c
)

// SetBootDevice sets the next boot device with a raw Set System Boot
// Options parameter 5 (goipmi's SetBootDevice can only set one-time
// legacy boot): valid, persistent and EFI flags and the device selector.
// It reads the flags first and does nothing when they already say so.
func (d *Driver) SetBootDevice(ctx context.Context, b drivers.BMC, dev drivers.BootDevice) (drivers.Result, error) {
	sel, ok := bootSelectors[dev.Device]
	if !ok {
		if ctx.Err() != nil {
			return drivers.Result{}, ctxError(ctx, bmcLabel(b), "not started")
		}
		return drivers.Result{}, drivers.Errorf(drivers.Permanent, "ipmi: boot device %q: use pxe or disk", dev.Device)
	}
	flags := byte(bootFlagValid)
	if dev.Persistent {
		flags |= bootFlagPersistent
	}
	if dev.EFI {
		flags |= bootFlagEFI
	}
	what := bootText(dev)
	var res drivers.Result
	err := d.with(ctx, b, func(c *call) error {
		cur, err := c.bootFlags()
		if err != nil {
			return err
		}
		if cur != nil && cur[0]&0xe0 == flags && goipmi.BootDevice(cur[1]&bootSelectorMask) == sel {
			res = drivers.Done("ipmi: %s (node %s) already boots %s", c.t.addr, nodeName(b), what)
			return nil
		}
		res, err = c.setAndReadBack(b, what, flags, sel)
		return err
	})
	if err != nil {
		return drivers.Result{}, err
	}
	return res, nil
}

// setAndReadBack sets the boot flags and judges them read back. A valid
// override with the wrong EFI or persistent bit is set once more (some
// BMCs keep it the second time) before it fails.
func (c *call) setAndReadBack(b drivers.BMC, what string, flags byte, sel goipmi.BootDevice) (drivers.Result, error) {
	var err error
	for try := 0; try < 2; try++ {
		if err = c.setBootFlags([]byte{flags, byte(sel), 0, 0, 0}); err != nil {
			return drivers.Result{}, err
		}
		after, rerr := c.bootFlags()
		if rerr != nil {
			return drivers.Result{}, rerr
		}
		var res drivers.Result
		res, err = readBack(c, b, what, flags, sel, after)
		if err == nil || !wrongBits(flags, sel, after) {
			return res, err
		}
	}
	return drivers.Result{}, err
}

// wrongBits: the override reads back valid and with the right device but
// its persistent or EFI bit is not what was set.
func wrongBits(flags byte, sel goipmi.BootDevice, after []byte) bool {
	return after != nil && after[0]&bootFlagValid != 0 && goipmi.BootDevice(after[1]&bootSelectorMask) == sel &&
		after[0]&0xe0 != flags
}

// readBack judges the boot flags read back after setting them. Another
// device is a transient ErrBootNotKept; so is a valid override whose
// persistent or EFI bit differs (the machine would boot legacy, or keep
// the override): wrongBits. The right device with the valid bit clear
// (OpenIPMI's ipmi_sim reads back 00 04 00 00 00; real BMCs clear the
// valid bit at once or after 60 seconds) is Done, saying
// drivers.BootFlagsCleared: the caller sets the override again right
// before powering on.
func readBack(c *call, b drivers.BMC, what string, flags byte, sel goipmi.BootDevice, after []byte) (drivers.Result, error) {
	switch {
	case after == nil || after[0]&0xe0 == flags && goipmi.BootDevice(after[1]&bootSelectorMask) == sel:
		return drivers.Done("ipmi: %s (node %s) boots %s", c.t.addr, nodeName(b), what), nil
	case goipmi.BootDevice(after[1]&bootSelectorMask) != sel:
		return drivers.Result{}, drivers.NewError(drivers.Transient, fmt.Errorf("ipmi: %s (node %s) accepted booting %s but reads back boot flags %x, another device: %w",
			c.t.addr, nodeName(b), what, after, drivers.ErrBootNotKept))
	case wrongBits(flags, sel, after):
		return drivers.Result{}, drivers.NewError(drivers.Transient, fmt.Errorf("ipmi: %s (node %s) accepted booting %s twice but reads back boot flags %x, "+
			"valid with %s: the machine would not boot as asked; check the BMC's boot settings: %w",
			c.t.addr, nodeName(b), what, after, bitsText(flags, after[0]), drivers.ErrBootNotKept))
	}
	return drivers.Done("ipmi: %s (node %s) accepted booting %s and reads back boot flags %x, the device right but %s "+
		"(BMCs may clear the override at once or after 60 s): set it again right before powering on",
		c.t.addr, nodeName(b), what, after, drivers.BootFlagsCleared), nil
}

// bitsText names the persistent and EFI bits read back that differ from
// those set.
func bitsText(want, got byte) string {
	var diff []string
	for _, f := range []struct {
		bit  byte
		name string
	}{{bootFlagEFI, "EFI"}, {bootFlagPersistent, "persistent"}} {
		switch {
		case want&f.bit != 0 && got&f.bit == 0:
			diff = append(diff, "the "+f.name+" bit clear")
		case want&f.bit == 0 && got&f.bit != 0:
			diff = append(diff, "the "+f.name+" bit set")
		}
	}
	return strings.Join(diff, " and ")
}

func bootText(dev drivers.BootDevice) string {
	s := "from " + dev.Device
	if dev.Persistent {
		s += " persistently"
	} else {
		s += " next time only"
	}
	if dev.EFI {
		s += " (EFI)"
	} else {
		s += " (legacy BIOS)"
	}
	return s
}

// bootFlags reads Get System Boot Options parameter 5; nil when the BMC
// does not support reading it.
func (c *call) bootFlags() ([]byte, error) {
	data := encode(goipmi.SystemBootOptionsRequest{Param: goipmi.BootParamBootFlags})
	p, err := c.s.do(request{netFn: goipmi.NetworkFunctionChassis, cmd: goipmi.CommandGetSystemBootOptions, data: data,
		name: "Get System Boot Options"})
	if err != nil {
		return nil, err
	}
	res := &goipmi.SystemBootOptionsResponse{}
	if p.cc != goipmi.CommandCompleted || decode(p, res) != nil || len(res.Data) < 2 || res.Param&0x7f != goipmi.BootParamBootFlags {
		return nil, nil
	}
	return res.Data, nil
}

// setBootFlags writes parameter 5 the way ipmitool does: set in progress,
// boot info acknowledge, the flags, commit; the BMC may not support the
// first two (then they are skipped).
func (c *call) setBootFlags(flags []byte) error {
	set := func(param uint8, data ...byte) (reply, error) {
		return c.s.do(request{netFn: goipmi.NetworkFunctionChassis, cmd: goipmi.CommandSetSystemBootOptions,
			data: encode(&goipmi.SetSystemBootOptionsRequest{Param: param, Data: data}), name: "Set System Boot Options"})
	}
	p, err := set(goipmi.BootParamSetInProgress, 0x01)
	if err != nil {
		return err
	}
	inProgress := p.cc == goipmi.CommandCompleted
	if _, err := set(goipmi.BootParamInfoAck, 0x01, 0x01); err != nil {
		return err
	}
	r := request{netFn: goipmi.NetworkFunctionChassis, cmd: goipmi.CommandSetSystemBootOptions,
		data: encode(&goipmi.SetSystemBootOptionsRequest{Param: goipmi.BootParamBootFlags, Data: flags}), name: "Set System Boot Options (boot flags)"}
	p, err = c.s.do(r)
	if err != nil {
		return err
	}
	if inProgress {
		if p.cc == goipmi.CommandCompleted {
			_, _ = set(goipmi.BootParamSetInProgress, 0x02) // commit write
		}
		_, _ = set(goipmi.BootParamSetInProgress, 0x00) // set complete
	}
	if p.cc != goipmi.CommandCompleted {
		return commandError(c.t.addr, r, p.cc)
	}
	return nil
}

func nodeName(b drivers.BMC) string {
	if b.Node == "" {
		return "?"
	}
	return b.Node
}
