package api

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/designlayer"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/statestore"
)

// DesignLayer keeps the sources of applied uploads and the API-managed
// layer of the design (package designlayer).
type DesignLayer interface {
	SaveSources(ctx context.Context, rev string, src designlayer.Sources) error
	CopySources(ctx context.Context, from, rev string) error
	Sources(ctx context.Context, rev string) (designlayer.Sources, error)
	Layer(ctx context.Context) ([]designlayer.Entry, error)
	PutOps(entries []designlayer.Entry) ([]statestore.Op, error)
	Write(ctx context.Context, ops ...statestore.Op) error
}

// upload is a design upload read into dir, built with the layer.
type upload struct {
	dir   string
	roots []string
	res   *yamlingest.Result
	d     *design.Design
	fs    design.Findings
	// kept are the layer's entries built over the upload; taken those the
	// upload defines itself (they leave the layer when it is applied).
	kept, taken []designlayer.Entry
}

// buildUpload builds the upload with the layer's entries it does not
// define as one more root; findings name files as they are in the upload.
func (s *Server) buildUpload(ctx context.Context, up *upload) error {
	sources, fs := up.res.Sources, design.Findings(up.res.Findings)
	if s.cfg.Layer != nil {
		entries, err := s.cfg.Layer.Layer(ctx)
		if err != nil {
			return err
		}
		up.kept, up.taken = designlayer.Split(entries, designlayer.Defined(sources))
		ls, lf, err := designlayer.LayerSources(up.kept, len(up.roots))
		if err != nil {
			return err
		}
		sources, fs = slices.Concat(sources, ls), slices.Concat(fs, lf)
	}
	d, more := design.Build(sources)
	all := slices.Concat(fs, more)
	for i := range all {
		all[i].File = strings.TrimPrefix(all[i].File, up.dir+string(filepath.Separator))
	}
	all.Sort()
	up.d, up.fs = d, all
	return nil
}

// saveSources keeps the upload's files as the sources of revision rev.
func (s *Server) saveSources(ctx context.Context, up *upload, rev string) error {
	if s.cfg.Layer == nil {
		return nil
	}
	src, err := designlayer.Collect(up.dir, up.roots, up.res.Files)
	if err != nil {
		return err
	}
	return s.cfg.Layer.SaveSources(ctx, rev, src)
}

// takeOver removes from the layer the entries the applied upload defines.
func (s *Server) takeOver(ctx context.Context, up *upload) ([]string, error) {
	if s.cfg.Layer == nil || len(up.taken) == 0 {
		return nil, nil
	}
	keys := make([]string, len(up.taken))
	for i, e := range up.taken {
		keys[i] = e.Key()
	}
	return keys, s.cfg.Layer.Write(ctx, designlayer.DeleteOps(keys)...)
}

// withLayerRoot is roots with the layer's, when the design has a layer.
func withLayerRoot(roots []string, layered bool) []string {
	if !layered || slices.Contains(roots, designlayer.LayerRoot) {
		return roots
	}
	return append(slices.Clip(roots), designlayer.LayerRoot)
}

var errNoLayer = problem(http.StatusNotImplemented, "this server keeps no design layer")

func (s *Server) layerRoutes() []route {
	return []route{
		{Method: "GET", Path: v1 + "/designs/layer", Role: auth.RoleViewer, Produces: "application/yaml",
			Problems: []int{http.StatusNotImplemented},
			Summary:  "the design's API-managed layer (onboarded nodes) as YAML, to commit to git as a root over the design's", handler: s.exportLayer},
	}
}

func (s *Server) exportLayer(c echo.Context) error {
	if s.cfg.Layer == nil {
		return errNoLayer
	}
	entries, err := s.cfg.Layer.Layer(c.Request().Context())
	if err != nil {
		return err
	}
	y, err := designlayer.YAML(entries)
	if err != nil {
		return err
	}
	c.Response().Header().Set("Content-Disposition", `attachment; filename="api-layer.yaml"`)
	return c.Blob(http.StatusOK, "application/yaml", y)
}
