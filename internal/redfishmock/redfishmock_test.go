package redfishmock

import (
	"encoding/json"
	"testing"
)

// Every document decodes and names itself by the path it is served at.
func TestDocumentsNameTheirPath(t *testing.T) {
	paths := Paths()
	if len(paths) < 15 {
		t.Fatalf("only %d documents", len(paths))
	}
	for _, p := range paths {
		b, ok := Get(p + "/")
		if !ok {
			t.Fatalf("Get(%s/) found nothing", p)
		}
		var doc struct {
			ID string `json:"@odata.id"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if doc.ID != p && doc.ID != p+"/" {
			t.Errorf("%s names itself %s", p, doc.ID)
		}
	}
	if _, ok := Get(Root + "/../etc"); ok {
		t.Error("a path out of the mockup was served")
	}
}
