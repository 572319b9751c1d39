package orchestrator_test

import (
	"context"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// claimsComplete is a server driver whose StartImageUpload says every
// custom image complete at once, uploading nothing.
type claimsComplete struct{ *fake.Server }

func (s claimsComplete) StartImageUpload(ctx context.Context, img drivers.ImageRef) (drivers.ImageUpload, error) {
	return drivers.ImageUpload{ResourceID: "1", FileID: "1", Offset: img.Size, Size: img.Size, Complete: true}, nil
}

// TestImageStageFailsEarlyOnOtherContent: the sync ends while the Site's
// provisioner's newest complete version is other content, none pending,
// and no sync of the design's runs: the node fails at the images stage
// at once, its reason naming the image, the Site and the next step,
// instead of waiting out lifecycle.timeouts.images.
func TestImageStageFailsEarlyOnOtherContent(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	putImage(t, env.srv, otherContent())
	env.cfg.Drivers.Server = claimsComplete{env.srv}
	e := env.engine(t)
	task := runTask(t, e, record.Request{Action: record.ActionDeployNodes})
	if task.Status == record.TaskSucceeded {
		t.Fatalf("deploy: %s: %s", task.Status, task.Message)
	}
	_, res, err := e.Task(t.Context(), task.ID)
	if err != nil || len(res) != 1 {
		t.Fatalf("results %+v %v", res, err)
	}
	why := res[0].Reason
	for _, want := range []string{"gpu-golden", "site synthetic", sumHex(otherContent()), "orchestrator images sync"} {
		if !strings.Contains(why, want) {
			t.Fatalf("reason %q: want it to name %q", why, want)
		}
	}
	if strings.Contains(why, "timeout") {
		t.Fatalf("reason %q: want the early failure, not the stage's timeout", why)
	}
}
