package maas

import (
	"strings"
	"testing"

	segjson "github.com/segmentio/encoding/json"

	"github.com/slipway-dev/slipway/drivers"
)

// FuzzBootResourceAnswer: any answer of boot-resources/{id}/ is read
// without a panic, and what it makes of it stays within its bounds: a
// resumed upload's offset is a whole number of chunks within the size.
func FuzzBootResourceAnswer(f *testing.F) {
	f.Add(`{"id": 3, "type": "Uploaded", "name": "g", "architecture": "amd64/generic", "sets": {"20261202": {"version": "20261202", "complete": false, "progress": 50,
	 "files": {"root-dd": {"sha256": "` + strings.Repeat("a", 64) + `", "size": 8388608, "complete": false, "progress": 50, "upload_uri": "/MAAS/api/2.0/boot-resources/3/upload/9/"}}}}}`)
	f.Add(`{"id": 1, "sets": {"a.b": {"complete": true, "files": {}}, "20261202.x": {}}}`)
	f.Fuzz(func(t *testing.T, answer string) {
		var r mBootResource
		if segjson.Unmarshal([]byte(answer), &r) != nil {
			return
		}
		_ = r.view()
		ref := drivers.ImageRef{Name: "custom/g", SHA256: strings.Repeat("a", 64), Size: 8388608}
		up, ok, _ := resumable(&r, ref, 1+len(answer)%3)
		if ok && !up.Complete && (up.Offset < 0 || up.Offset > up.Size || up.Offset%drivers.ImageChunkSize != 0 && up.Offset != up.Size) {
			t.Fatalf("resume at %d of %d", up.Offset, up.Size)
		}
	})
}

// FuzzUploadFileID: an upload URI yields a numeric file ID of the
// resource it names, or none.
func FuzzUploadFileID(f *testing.F) {
	f.Add("/MAAS/api/2.0/boot-resources/12/upload/34/", 12)
	f.Add("12/upload/", 12)
	f.Fuzz(func(t *testing.T, uri string, rid int) {
		id, ok := uploadFileID(uri, rid)
		if ok && (id == "" || strings.ContainsAny(id, "/?#")) {
			t.Fatalf("%q: file ID %q", uri, id)
		}
		_ = compareVersions(uri, id)
	})
}
