package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	apitypes "github.com/slipway-dev/slipway/api/apitypes"
	"github.com/slipway-dev/slipway/auth"
	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// ImageViewer is what GET /images needs of the engine (the
// orchestrator's Engine is one); an Engine that is not one answers 501.
type ImageViewer interface {
	ImageStatuses(ctx context.Context, d *design.Design) ([]orchestrator.ImageStatus, error)
}

func (s *Server) imageRoutes() []route {
	view, op := auth.RoleViewer, auth.RoleOperator
	return []route{
		{Method: "GET", Path: v1 + "/images", Role: view, Response: apitypes.Images{}, Problems: []int{http.StatusNotImplemented},
			Query:   []param{{Name: "site", Doc: "only this Site's"}},
			Summary: "the current design's images per Site: provisioner name, architecture, a custom image's sha256 and size, sync state and progress, the nodes deploying each", handler: s.listImages},
		{Method: "GET", Path: v1 + "/images/:name", Role: view, Response: apitypes.Images{}, Problems: []int{http.StatusNotFound, http.StatusNotImplemented},
			Summary: "one Image document of the current design, in each Site whose nodes deploy it", handler: s.getImage},
		{Method: "POST", Path: v1 + "/images/sync", Role: op, Mutating: true, Request: apitypes.ImageSyncRequest{}, OptionalBody: true,
			OK: []int{http.StatusCreated}, Response: apitypes.Task{}, Problems: []int{http.StatusConflict, http.StatusUnprocessableEntity},
			Summary: "start a sync_images task: the design's images (or one, in one Site) into the Sites' provisioners, custom ones verified before a byte is sent", handler: s.syncImages},
	}
}

// imageSites answers the current design's images, narrowed to one image
// and one site when given ("": all).
func (s *Server) imageSites(c echo.Context, image, site string) (apitypes.Images, error) {
	iv, ok := s.cfg.Engine.(ImageViewer)
	if !ok {
		return apitypes.Images{}, problem(http.StatusNotImplemented, "this server's engine does not sync images")
	}
	ctx := c.Request().Context()
	d, err := s.currentDesignOrNil(ctx)
	if err != nil {
		return apitypes.Images{}, err
	}
	out := apitypes.Images{Images: []apitypes.ImageSite{}}
	if d == nil {
		if image != "" {
			return out, problem(http.StatusNotFound, "no design is applied yet")
		}
		return out, nil
	}
	if image != "" && d.Images[image] == nil {
		return out, problem(http.StatusNotFound, fmt.Sprintf("the current design has no Image document %.80q", image))
	}
	sts, err := iv.ImageStatuses(ctx, d)
	if err != nil {
		return out, err
	}
	for _, st := range sts {
		if (image == "" || st.Image == image) && (site == "" || st.Site == site) {
			out.Images = append(out.Images, wireImage(st))
		}
	}
	return out, nil
}

func wireImage(st orchestrator.ImageStatus) apitypes.ImageSite {
	nodes := st.Nodes
	if nodes == nil {
		nodes = []string{}
	}
	return apitypes.ImageSite{Site: st.Site, Image: st.Image, Name: st.Name, Architecture: st.Architecture, Custom: st.Custom,
		SHA256: st.SHA256, Size: st.Size, State: st.State, Progress: st.Progress, Error: st.Error, Nodes: nodes, Task: st.Task,
		Updated: st.Updated, Resumed: st.Resumed, ProvisionerError: st.ProvisionerError}
}

func (s *Server) listImages(c echo.Context) error {
	site := c.QueryParam("site")
	if len(site) > record.MaxFilterValueLen {
		return problem(http.StatusBadRequest, fmt.Sprintf("site: a name of %d bytes, at most %d", len(site), record.MaxFilterValueLen))
	}
	out, err := s.imageSites(c, "", site)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) getImage(c echo.Context) error {
	out, err := s.imageSites(c, c.Param("name"), "")
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// syncImages starts a sync_images task.
func (s *Server) syncImages(c echo.Context) error {
	var b apitypes.ImageSyncRequest
	if c.Request().ContentLength != 0 {
		if err := bindStrict(c, &b); err != nil {
			return err
		}
	}
	opts := &record.TaskOptions{Site: b.Site, Image: b.Image}
	if err := opts.Check(record.ActionSyncImages); err != nil {
		return problem(http.StatusBadRequest, err.Error())
	}
	if *opts == (record.TaskOptions{}) {
		opts = nil
	}
	if err := s.checkSyncTarget(c, b); err != nil {
		return err
	}
	auditWhat(c, AuditWhat{Action: "images.sync", Verb: string(record.ActionSyncImages)})
	t, err := s.cfg.Engine.Submit(c.Request().Context(), record.Request{Action: record.ActionSyncImages, Requester: who(c), Correlation: requestIDOf(c), Options: opts})
	if err != nil {
		status, _ := statusOf(err)
		if status == http.StatusInternalServerError {
			return problem(http.StatusUnprocessableEntity, err.Error())
		}
		return err
	}
	auditWhat(c, AuditWhat{Action: "images.sync", Verb: string(record.ActionSyncImages), Task: t.ID})
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/tasks/"+t.ID)
	return c.JSON(http.StatusCreated, wireTask(t))
}

// checkSyncTarget refuses (422) a sync naming an image or a Site the
// current design does not have, before any task is made.
func (s *Server) checkSyncTarget(c echo.Context, b apitypes.ImageSyncRequest) error {
	if b.Image == "" && b.Site == "" {
		return nil
	}
	d, err := s.currentDesignOrNil(c.Request().Context())
	if err != nil || d == nil {
		return err // no design: the task says so
	}
	if b.Image != "" && d.Images[b.Image] == nil {
		return problem(http.StatusUnprocessableEntity, fmt.Sprintf("the current design has no Image document %.80q (orchestrator images list shows its images)", b.Image))
	}
	if b.Site != "" && d.SiteNamed(b.Site) == nil {
		return problem(http.StatusUnprocessableEntity, fmt.Sprintf("the current design has no Site %.80q", b.Site))
	}
	return nil
}
