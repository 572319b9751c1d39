package introspection

import (
	"fmt"
	"net/http"
	"regexp"
)

// ReportImage is the image a node says it runs, in a boot action report
// (optional): the provisioner's name of it (custom/gpu-golden,
// ubuntu/jammy) and, for a custom image, the SHA-256 of what was
// installed. It is stored with the report, as the node said it.
type ReportImage struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256,omitempty"`
}

var (
	reportImageName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}/[a-zA-Z0-9][a-zA-Z0-9._-]{0,127}$`)
	reportImageSHA  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// check refuses an image that is not "os/release" with an optional
// lower-case hex SHA-256 (nil: no image reported).
func (im *ReportImage) check() error {
	if im == nil {
		return nil
	}
	if !reportImageName.MatchString(im.Name) {
		return problem(http.StatusBadRequest, "the report's image name must be os/release (e.g. custom/gpu-golden), at most 192 characters")
	}
	if im.SHA256 != "" && !reportImageSHA.MatchString(im.SHA256) {
		return problem(http.StatusBadRequest, fmt.Sprintf("the report's image sha256 must be 64 lower-case hex digits (image %s)", im.Name))
	}
	return nil
}

// sameImage: both absent, or equal.
func sameImage(a, b *ReportImage) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
