package server

import (
	"fmt"
	"path/filepath"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/ingest/archive"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
)

// DesignConfig is serve's configuration of design uploads (Config
// embeds it). Zero values take the defaults.
type DesignConfig struct {
	DesignMaxFileBytes ByteSize `yaml:"designMaxFileBytes"` // one YAML file; default 8MiB
	DesignMaxBytes     ByteSize `yaml:"designMaxBytes"`     // all files of a design; default 16MiB
	DesignMaxFiles     int      `yaml:"designMaxFiles"`     // files in an uploaded archive; default 20000
	DesignParses       int      `yaml:"designParses"`       // uploads parsed at once; default 2
	UploadDir          string   `yaml:"uploadDir"`          // default: uploads/ next to the state database
}

// designLimits sets the API's upload settings from the file's.
func (c Config) designLimits(cfg *api.Config) error {
	lim := yamlingest.Limits{FileBytes: int64(c.DesignMaxFileBytes), DesignBytes: int64(c.DesignMaxBytes)}
	if c.DesignMaxFiles < 0 || c.DesignParses < 0 {
		return fmt.Errorf("config designMaxFiles %d, designParses %d: want positive numbers (0: the default)", c.DesignMaxFiles, c.DesignParses)
	}
	cfg.DesignLimits = archive.Limits{Limits: lim, Files: c.DesignMaxFiles}
	cfg.DesignParses = c.DesignParses
	cfg.UploadDir = c.UploadDir
	if cfg.UploadDir == "" {
		cfg.UploadDir = filepath.Join(c.dir(), "uploads")
	}
	return nil
}
