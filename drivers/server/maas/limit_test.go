package maas

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// TestReadLimits: an answer longer than the read's limit is refused
// (Permanent), JSON and raw alike; one within it is decoded.
func TestReadLimits(t *testing.T) {
	big := `{"cpu_count": 4, "hardware_info": {"system_vendor": "` + strings.Repeat("x", 1<<20) + `"}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(big))
	}))
	defer srv.Close()
	c, err := newClient(srv.URL+"/MAAS", "a:b:c", 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	var hw mHardware
	err = c.callLimit(t.Context(), http.MethodGet, "machines/abc/", "", nil, &hw, 64<<10)
	if drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("JSON read over its limit: %v", err)
	}
	if _, err := c.getRawLimit(t.Context(), "machines/abc/", "details", 64<<10); drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("raw read over its limit: %v", err)
	}
	if err := c.callLimit(t.Context(), http.MethodGet, "machines/abc/", "", nil, &hw, 2<<20); err != nil || hw.CPUCount != 4 {
		t.Errorf("within the limit: %v %+v", err, hw.CPUCount)
	}
}
