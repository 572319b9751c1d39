package server

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	maasdrv "github.com/slipway-dev/slipway/drivers/server/maas"
	"github.com/slipway-dev/slipway/gitsync"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	secretstore "github.com/slipway-dev/slipway/secrets/store"
)

// Config is the file `serve --config` reads (YAML). Durations are
// Go durations ("10s", "2m").
type Config struct {
	State         string `yaml:"state"`
	PluginDir     string `yaml:"pluginDir"`
	InstanceID    string `yaml:"instanceID"` // the MAAS agent_name of owned machines
	GlobalLimit   int    `yaml:"globalLimit"`
	MAASLimit     int    `yaml:"provisionerLimit"`
	OOBLimit      int    `yaml:"oobLimit"`
	RetryAttempts int    `yaml:"retryAttempts"`
	RetryBase     string `yaml:"retryBase"`
	RetryMax      string `yaml:"retryMax"`
	DeployRetries int    `yaml:"deployRetries"`

	// PluginSHA256 pins plugins: file name -> SHA-256 (hex); a pinned
	// plugin with another sum is never started (drivers/registry).
	PluginSHA256 map[string]string `yaml:"pluginSHA256"`

	// Lifecycle defaults the Site's spec.lifecycle overrides: failed
	// commissionings retried (the MAAS driver's budget), the erase policy
	// of destroy and decommission, and stage timeouts (stage: duration).
	CommissionRetries *int              `yaml:"commissionRetries"`
	Erase             string            `yaml:"erase"`
	Timeouts          map[string]string `yaml:"timeouts"`
	PollInterval      string            `yaml:"pollInterval"`
	SweepInterval     string            `yaml:"sweepInterval"`
	ReleaseLeaks      bool              `yaml:"releaseLeaks"`
	// FullPollInterval: how often the poll reads every waiting machine
	// whatever the provisioner's changes say (default 5m, scaled).
	FullPollInterval string `yaml:"fullPollInterval"`
	// BootstrapDeadline: how long a bootstrapping node may stay silent
	// (default 20m).
	BootstrapDeadline string `yaml:"bootstrapDeadline"`
	// TimeScale multiplies the engine's own waits (drivers' hints,
	// back-off, stage timeouts, maxWait) for the virtual lab, whose
	// phases run at the lab's --time-scale; 1 (the default) for a site.
	TimeScale float64 `yaml:"timeScale"`
	// MemoryLimit is Go's soft memory limit for serve (runtime/debug
	// SetMemoryLimit, like GOMEMLIMIT): the garbage collector works harder
	// as the heap nears it, instead of letting it double. 0: none.
	MemoryLimit ByteSize `yaml:"memoryLimit"`
	// Control API (serve).
	Listen         string   `yaml:"listen"`         // default 127.0.0.1:8700
	TLSCert        string   `yaml:"tlsCert"`        // with tlsKey: serve HTTPS
	TLSKey         string   `yaml:"tlsKey"`         //
	AdminTokenFile string   `yaml:"adminTokenFile"` // default: admin.token next to the state database
	KeyFile        string   `yaml:"keyFile"`        // secret encryption key; default: slipway.key next to the state database
	TrustedProxies []string `yaml:"trustedProxies"` // CIDRs whose X-Forwarded-For the audit and introspection believe
	// Event stream lifetime and token recheck; audit records of
	// unauthenticated refusals per minute (see apilimits.go).
	EventStreamMaxLifetime  string `yaml:"eventStreamMaxLifetime"`  // default 15m
	EventStreamRecheck      string `yaml:"eventStreamRecheck"`      // default 5s
	AuditRefusalsPerAddress int    `yaml:"auditRefusalsPerAddress"` // default 20
	AuditRefusalsTotal      int    `yaml:"auditRefusalsTotal"`      // default 60
	// Connections of one source address (an IPv6 /64) open at once before
	// one of their requests authenticates, on the control API and on the
	// introspection API (0: the defaults, 64 and 256; -1: no cap).
	ConnsPerSource              int `yaml:"connsPerSource"`
	IntrospectionConnsPerSource int `yaml:"introspectionConnsPerSource"`
	// ReadyCheckTTL: how long GET /readyz reuses its upstream checks
	// (readycheck.go; default 5s).
	ReadyCheckTTL string `yaml:"readyCheckTTL"`
	// Introspection API (what deploying nodes call). Served when
	// introspectionListen is set (serve: default :8701).
	IntrospectionListen      string `yaml:"introspectionListen"`
	IntrospectionURL         string `yaml:"introspectionURL"`         // what nodes call; default: the Site's introspection.url
	IntrospectionKeyFile     string `yaml:"introspectionKeyFile"`     // token key; default: introspection.key next to the state database
	IntrospectionCheckSource bool   `yaml:"introspectionCheckSource"` // a node's calls must come from one of its addresses
	// Firmware images of hardware profiles' baselines (firmware.go): the
	// directory an image's file: names, the listener the BMCs fetch
	// verified images from (default :8702 when firmwareDir is set) and
	// the URL they reach it at (default: the listener's address).
	FirmwareDir    string `yaml:"firmwareDir"`
	FirmwareListen string `yaml:"firmwareListen"`
	FirmwareURL    string `yaml:"firmwareURL"`
	// OS images (Image documents) the engine syncs into the Sites'
	// provisioners (images.go): the directory a custom image's file:
	// names (verified in place), and where images fetched from URLs are
	// kept verified, the newest version of each (default image-cache
	// beside the state).
	ImageDir   string `yaml:"imageDir"`
	ImageCache string `yaml:"imageCache"`
	// A URL image's download fails when nothing arrives for
	// imageFetchIdleTimeout (default 2m), or when it lasts longer than
	// 30 minutes plus the image's size at imageFetchMinRate bytes/s
	// (default 4MiB: 64 GiB has 4.9 h).
	ImageFetchIdleTimeout string   `yaml:"imageFetchIdleTimeout"`
	ImageFetchMinRate     ByteSize `yaml:"imageFetchMinRate"`
	// BMCEndpoints overrides where a node's BMC is reached (host:port), by
	// node, or by node/type for one of its methods (e.g. n1/redfish),
	// e.g. through a NAT or, in tests, the virtual lab's loopback ports.
	BMCEndpoints map[string]string `yaml:"bmcEndpoints"`
	// SecretRefs lists the env: and file: references serve resolves
	// (default none: only secret:NAME; see secretrefs.go).
	SecretRefs secretRefsConfig `yaml:"secretRefs"`
	// Design uploads: size limits, parses at once, upload directory
	// (designlimits.go).
	DesignConfig `yaml:",inline"`
	// A replica group on etcd (servegroup.go).
	HAConfig `yaml:",inline"`
	// Git is the git remote serve follows (gitsource.go; nil: none).
	Git *gitsync.Config `yaml:"git"`
	// serving: the engine runs under serve, which holds references to
	// SecretRefs (the CLI's local commands resolve every one).
	serving bool
	// startEmpty: serve on a single state file starts with no design
	// applied yet and takes its first through the API (nodesign.go).
	startEmpty bool
}

// Flag is a command-line value for a config key: it takes the key when it
// is Given on the command line, or when the file leaves the key out.
type Flag struct {
	Key   string // the config key, e.g. "listen" for --listen
	Value string
	Given bool
}

// LoadConfig is the one place a server's configuration is made: the file
// at path decoded (unknown keys refused; "" is no file), the flags laid
// over it, and the whole validated, each error naming its key.
func LoadConfig(path string, flags ...Flag) (Config, error) {
	c, err := decode(path)
	if err != nil {
		return c, err
	}
	for _, f := range flags {
		if err := c.set(f); err != nil {
			return c, err
		}
	}
	return c, c.Validate()
}

// decode reads the configuration file's keys.
func decode(path string) (Config, error) {
	var c Config
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("read config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("config %s: %w (see docs/operations.md for the keys)", path, err)
	}
	return c, nil
}

// set lays a flag over the file's key.
func (c *Config) set(f Flag) error {
	if f.Key == "leaseTTL" {
		n, err := strconv.Atoi(f.Value)
		if err != nil {
			return fmt.Errorf("config leaseTTL %q: want whole seconds in 2..300", f.Value)
		}
		if f.Given || c.LeaseTTL == 0 {
			c.LeaseTTL = n
		}
		return nil
	}
	dst, ok := c.stringKeys()[f.Key]
	if !ok {
		return fmt.Errorf("config key %q: no flag sets it", f.Key)
	}
	if *dst == "" || f.Given {
		*dst = f.Value
	}
	return nil
}

// stringKeys are the keys a flag may set.
func (c *Config) stringKeys() map[string]*string {
	return map[string]*string{"state": &c.State, "pluginDir": &c.PluginDir, "keyFile": &c.KeyFile, "listen": &c.Listen,
		"tlsCert": &c.TLSCert, "tlsKey": &c.TLSKey, "introspectionListen": &c.IntrospectionListen,
		"store": &c.Store, "etcdPrefix": &c.EtcdPrefix, "etcdCA": &c.EtcdCA, "etcdCert": &c.EtcdCert, "etcdKey": &c.EtcdKey,
		"replicaID": &c.ReplicaID, "advertiseURL": &c.AdvertiseURL, "dataDir": &c.DataDir,
		"firmwareDir": &c.FirmwareDir, "firmwareListen": &c.FirmwareListen, "firmwareURL": &c.FirmwareURL,
		"imageDir": &c.ImageDir, "imageCache": &c.ImageCache}
}

// Validate checks every key once, before anything is opened or listened
// on: the engine's (durations, lifecycle defaults, BMC endpoints), the
// control API's (stream, audit, connection, readiness and upload
// limits), secretRefs and the replica group's. Each error names its key.
func (c Config) Validate() error {
	for _, check := range []func() error{
		func() error { return c.durations(&orchestrator.Config{}) },
		func() error { _, err := parseEndpoints(c.BMCEndpoints); return err },
		func() error { return c.apiLimits(&api.Config{}) },
		func() error { return c.readyCheck(&api.Config{}) },
		func() error { return c.designLimits(&api.Config{}) },
		c.SecretRefs.check,
		c.checkGroup,
		c.checkGit,
		c.checkFirmware,
		c.checkImageFetch,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// checkGroup checks TLS and the replica group's keys.
func (c Config) checkGroup() error {
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return fmt.Errorf("config tlsCert, tlsKey: TLS needs both --tls-cert and --tls-key")
	}
	if c.LeaseTTL != 0 && (c.LeaseTTL < 2 || c.LeaseTTL > 300) {
		return fmt.Errorf("config leaseTTL %d: want whole seconds in 2..300", c.LeaseTTL)
	}
	if err := c.etcdLimits().Check(); err != nil {
		return fmt.Errorf("config etcdMaxTxnOps, etcdMaxRequestBytes: %w", err)
	}
	if c.Store == "" {
		return nil
	}
	if _, err := EtcdEndpoints(c.Store); err != nil {
		return fmt.Errorf("config store %w", err)
	}
	return nil
}

func duration(field, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("config %s %q: want a duration like 10s or 2m", field, s)
	}
	return d, nil
}

// durations sets cfg's durations from the file's.
func (c Config) durations(cfg *orchestrator.Config) error {
	for _, f := range []struct {
		name string
		val  string
		dst  *time.Duration
	}{{"retryBase", c.RetryBase, &cfg.Retry.Base}, {"retryMax", c.RetryMax, &cfg.Retry.Max},
		{"pollInterval", c.PollInterval, &cfg.PollInterval}, {"fullPollInterval", c.FullPollInterval, &cfg.FullPollInterval},
		{"sweepInterval", c.SweepInterval, &cfg.SweepInterval},
		{"bootstrapDeadline", c.BootstrapDeadline, &cfg.BootstrapDeadline}} {
		var err error
		if *f.dst, err = duration(f.name, f.val); err != nil {
			return err
		}
	}
	if err := c.lifecycle(cfg); err != nil {
		return err
	}
	if c.TimeScale < 0 || c.TimeScale > 1 {
		return fmt.Errorf("config timeScale %g: want a number in (0, 1] (1 for a real site)", c.TimeScale)
	}
	if c.TimeScale > 0 && c.TimeScale < 1 {
		cfg.TimeScale = c.TimeScale
		cfg.MaxWait = max(time.Duration(float64(2*time.Minute)*c.TimeScale), 200*time.Millisecond)
	}
	return nil
}

// lifecycle checks the lifecycle defaults and puts them in cfg, with the
// bounds the Site's lifecycle rule applies.
func (c Config) lifecycle(cfg *orchestrator.Config) error {
	if n := c.CommissionRetries; n != nil && (*n < 0 || *n > design.MaxRetries) {
		return fmt.Errorf("config commissionRetries %d: want 0..%d", *n, design.MaxRetries)
	}
	if c.Erase != "" && !drivers.Erase(c.Erase).Valid() {
		return fmt.Errorf("config erase %.40q: use none, quick or secure (or leave it out for the driver's default)", c.Erase)
	}
	cfg.Erase = drivers.Erase(c.Erase)
	for stage, v := range c.Timeouts {
		if !slices.Contains(design.TimeoutStages, stage) {
			return fmt.Errorf("config timeouts.%.40s: no such stage; use one of %s", stage, strings.Join(design.TimeoutStages, ", "))
		}
		d, err := duration("timeouts."+stage, v)
		if err != nil {
			return err
		}
		if d < design.MinStageTimeout || d > design.MaxStageTimeout {
			return fmt.Errorf("config timeouts.%s %s: want %s..%s", stage, d, design.MinStageTimeout, design.MaxStageTimeout)
		}
		if cfg.Timeouts == nil {
			cfg.Timeouts = map[record.Stage]time.Duration{}
		}
		cfg.Timeouts[record.Stage(stage)] = d
	}
	return nil
}

// driverSettings are the server driver settings the configuration gives.
func (c Config) driverSettings() map[string]string {
	out := map[string]string{}
	if c.InstanceID != "" {
		out[maasdrv.SettingInstance] = c.InstanceID
	}
	if c.CommissionRetries != nil {
		out[maasdrv.SettingCommissionRetries] = strconv.Itoa(*c.CommissionRetries)
	}
	return out
}

// dir holds the keys, the first admin token and uploads: dataDir, else
// the state file's directory.
func (c Config) dir() string {
	if c.DataDir != "" {
		return c.DataDir
	}
	return filepath.Dir(c.State)
}

// keyFile is where the secret encryption key lives.
func (c Config) keyFile() string {
	if c.KeyFile != "" {
		return c.KeyFile
	}
	return filepath.Join(c.dir(), secretstore.DefaultKeyFile)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

type endpoint struct {
	host string
	port int
}

func parseEndpoints(m map[string]string) (map[string]endpoint, error) {
	out := make(map[string]endpoint, len(m))
	for node, hp := range m {
		h, p, err := net.SplitHostPort(hp)
		port, perr := strconv.Atoi(p)
		if err != nil || perr != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("config bmcEndpoints.%s %q: want host:port", node, hp)
		}
		out[node] = endpoint{h, port}
	}
	return out, nil
}
