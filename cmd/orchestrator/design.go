package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
)

// loaded is a design read from roots, with every finding.
type loaded struct {
	design   *design.Design
	findings design.Findings
	files    int
	elapsed  time.Duration
}

// load reads, resolves and validates the design in roots. The error is for
// problems reading files (exit 2); design problems are findings.
func (a *app) load(ctx context.Context, roots []string) (*loaded, error) {
	start := time.Now()
	res, err := yamlingest.LoadLimited(ctx, roots, a.limits)
	var le *yamlingest.LimitError
	if errors.As(err, &le) {
		flag := map[bool]string{false: "--max-file-bytes", true: "--max-design-bytes"}[le.Design]
		return nil, usageErr(fmt.Errorf("%w; if it is meant to be this large, raise %s", err, flag))
	}
	if err != nil {
		return nil, usageErr(err)
	}
	d, findings := design.Build(res.Sources)
	all := append(design.Findings(res.Findings), findings...)
	all.Sort()
	l := &loaded{design: d, findings: all, files: len(res.Files), elapsed: time.Since(start)}
	a.log.Debug().Int("files", l.files).Int("documents", len(res.Sources)).
		Int("findings", len(all)).Dur("elapsed", l.elapsed).Msg("design loaded")
	return l, nil
}

func (l *loaded) summary() string {
	e, w := l.findings.Count()
	return fmt.Sprintf("%d files, %d nodes: %d errors, %d warnings (%s)", l.files, len(l.design.Nodes), e, w, l.elapsed.Round(time.Millisecond))
}
