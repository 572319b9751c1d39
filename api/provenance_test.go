package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/apitest"
)

// TestUploadProvenanceRefused: POST /designs refuses a provenance it
// cannot record (a git commit that is not hex, a root with a control
// character) with a 400, before it reads the upload.
func TestUploadProvenanceRefused(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t)
	for _, q := range []string{"git_commit=not-hex", "root=a%0Ab", "root="} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL+"/api/v1/designs?"+q, strings.NewReader("not read"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+s.Token[api.RoleOperator])
		req.Header.Set("Content-Type", "application/gzip")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("?%s: %d, want 400", q, resp.StatusCode)
		}
	}
}
