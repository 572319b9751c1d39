package maas

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/batch"
)

// Name is the driver's registry name.
const Name = "maas"

// Settings of the driver (drivers.Config.Settings) and their defaults.
const (
	SettingURL         = "url"         // MAAS URL, e.g. http://maas:5240/MAAS (required)
	SettingInstance    = "instanceID"  // this orchestrator's ID: the agent_name of the machines it owns (default "slipway")
	SettingTimeout     = "timeout"     // per request (default 30s)
	SettingRetries     = "retries"     // on 503/429 and network errors (default 4)
	SettingQuickErase  = "quickErase"  // release with quick_erase (default false: full erase)
	SettingSecureErase = "secureErase" // release with secure_erase (default false; over quickErase)
	SettingErase       = "erase"       // erase disks on release (default true)
	SettingCacheTTL    = "cacheTTL"    // how long a machine read answers repeated reads (default 5s; 0s: no read cache; cache.go)
	// SettingCacheFeedTTL: how long after a machine's state was read the
	// change feed may keep answering it (default 1m, the engine's full
	// read period; 0s: never; cache_feed.go).
	SettingCacheFeedTTL = "cacheFeedTTL"
	// SettingTagWindow: how long a tag's batch gathers the machines
	// tagged before its update_nodes request is sent (default 200ms;
	// tags.go).
	SettingTagWindow = "tagWindow"
	// SettingSkipBMCConfig: commission with skip_bmc_config (default
	// true: Slipway owns the BMC and its credentials; "false" lets MAAS's
	// commissioning configure the BMC, a site record's policy).
	SettingSkipBMCConfig = "skipBMCConfig"
	SecretAPIKey         = "apiKey" // drivers.Config.Secrets key of the MAAS API key
)

// OwnerDataNode is the owner data key naming the design node of a machine.
const OwnerDataNode = "slipway_node"

// Driver is the MAAS server driver.
type Driver struct {
	c          *client
	instance   string
	erase      bool
	quickErase bool
	// secureErase: releases that name no erase policy erase securely
	// (a site record's policy.erase secure).
	secureErase bool

	commissionRetries int  // SettingCommissionRetries (lifecycle.go)
	skipBMCConfig     bool // SettingSkipBMCConfig

	tagging   tagBatches                        // tags.go: machine IDs by tag and op
	tagWindow time.Duration                     // SettingTagWindow
	tagsMade  madeTags                          // tags.go: tags created lately
	lookups   batch.Batcher[string, []mMachine] // identify.go: machines by hostname or MAC
	claimMu   sync.Mutex                        // identify.go: one choice by constraints at a time (claimBy)
	uploads   sync.Map                          // images_upload.go: "resourceID/fileID" -> the SHA-256 of its content
	// storageSources: machines whose storage is the design's, to clone
	// (storage_clone.go).
	storageSources storageTemplates
	// feedSeen: the event IDs the change feed answered lately, to read
	// again behind its cursor (changes.go).
	feedSeen seenEvents
}

// NewDriver configures a driver from its settings and the API key secret.
func NewDriver(cfg drivers.Config) (*Driver, error) {
	u := cfg.Settings[SettingURL]
	if u == "" {
		return nil, drivers.Errorf(drivers.Permanent, "maas: setting %q is required (the Site's maas.url)", SettingURL)
	}
	key := cfg.Secrets[SecretAPIKey]
	if key.IsZero() {
		return nil, drivers.Errorf(drivers.Permanent, "maas: the API key is missing (the Site's maas.apiKey secret reference)")
	}
	timeout, err := durationSetting(cfg, SettingTimeout, 30*time.Second)
	if err != nil {
		return nil, err
	}
	retries, err := intSetting(cfg, SettingRetries, 4)
	if err != nil {
		return nil, err
	}
	commRetries, err := intSetting(cfg, SettingCommissionRetries, defaultCommissionRetries)
	if err != nil {
		return nil, err
	}
	c, err := newClient(u, key.Reveal(), timeout, retries)
	if err != nil {
		return nil, err
	}
	ttl := defaultMachineTTL
	if v, ok := cfg.Settings[SettingCacheTTL]; ok && v != "" {
		if ttl, err = time.ParseDuration(v); err != nil || ttl < 0 {
			return nil, drivers.Errorf(drivers.Permanent, "maas: setting %s=%q is not a duration like 5s (0s turns the read cache off)", SettingCacheTTL, v)
		}
	}
	c.cache = newReadCache(ttl)
	if v, ok := cfg.Settings[SettingCacheFeedTTL]; ok && v != "" {
		if c.cache.feedTTL, err = time.ParseDuration(v); err != nil || c.cache.feedTTL < 0 {
			return nil, drivers.Errorf(drivers.Permanent, "maas: setting %s=%q is not a duration like 1m (0s: the change feed keeps no read)", SettingCacheFeedTTL, v)
		}
	}
	d := &Driver{c: c, instance: cfg.Settings[SettingInstance], erase: cfg.Settings[SettingErase] != "false",
		quickErase: cfg.Settings[SettingQuickErase] == "true", secureErase: cfg.Settings[SettingSecureErase] == "true",
		commissionRetries: commRetries, skipBMCConfig: cfg.Settings[SettingSkipBMCConfig] != "false"}
	d.lookups.Max = lookupBatch
	d.lookups.Wait = drivers.Waiting // the engine's slot serves others meanwhile
	if d.tagWindow, err = durationSetting(cfg, SettingTagWindow, defaultTagWindow); err != nil {
		return nil, err
	}
	if d.instance == "" {
		d.instance = "slipway"
	}
	return d, nil
}

func durationSetting(cfg drivers.Config, key string, def time.Duration) (time.Duration, error) {
	v, ok := cfg.Settings[key]
	if !ok || v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, drivers.Errorf(drivers.Permanent, "maas: setting %s=%q is not a positive duration like 30s", key, v)
	}
	return d, nil
}

func intSetting(cfg drivers.Config, key string, def int) (int, error) {
	v, ok := cfg.Settings[key]
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, drivers.Errorf(drivers.Permanent, "maas: setting %s=%q is not a non-negative integer", key, v)
	}
	return n, nil
}

// String names the driver.
func (d *Driver) String() string { return fmt.Sprintf("server driver %q (built in)", Name) }
