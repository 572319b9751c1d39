package server

import (
	"testing"

	"github.com/slipway-dev/slipway/api"
)

// TestHAEngineServesImages: the replica group's API engine answers GET
// /api/v1/images (the API asks its engine for api.ImageViewer; one that
// is not answers 501, as it did under etcd).
func TestHAEngineServesImages(t *testing.T) {
	var e any = &haEngine{}
	if _, ok := e.(api.ImageViewer); !ok {
		t.Fatal("haEngine is not an api.ImageViewer: GET /api/v1/images answers 501 in a replica group")
	}
}
