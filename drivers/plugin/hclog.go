package plugin

import (
	"encoding/json"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// zerologSink receives hclog's JSON lines (go-plugin's own logs and the
// plugin's stderr, which go-plugin parses) and re-emits them as zerolog
// events with their level, message and fields.
type zerologSink struct{ log zerolog.Logger }

func (z zerologSink) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimSpace(string(p)), "\n") {
		if line == "" {
			continue
		}
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			z.log.Info().Str("source", "plugin").Msg(line)
			continue
		}
		lvl, err := zerolog.ParseLevel(strings.ToLower(str(entry["@level"])))
		if err != nil || lvl == zerolog.NoLevel {
			lvl = zerolog.InfoLevel
		}
		msg := str(entry["@message"])
		ev := z.log.WithLevel(lvl).Str("source", "plugin")
		if m := str(entry["@module"]); m != "" {
			ev = ev.Str("module", m)
		}
		for k, v := range entry {
			if !strings.HasPrefix(k, "@") && k != "timestamp" {
				ev = ev.Interface(k, v)
			}
		}
		ev.Msg(msg)
	}
	return len(p), nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// newHCLogger returns an hclog.Logger that writes into log.
func newHCLogger(name string, log zerolog.Logger) hclog.Logger {
	level := hclog.Info
	if log.GetLevel() <= zerolog.DebugLevel {
		level = hclog.Debug
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Level:      level,
		Output:     zerologSink{log: log},
		JSONFormat: true,
	})
}

// NewLogger returns the logger a plugin should use: JSON lines on stderr,
// which the orchestrator reads into its own log with their level and fields.
func NewLogger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Debug, Output: os.Stderr, JSONFormat: true})
}
