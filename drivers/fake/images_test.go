package fake

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

func content(n int) ([]byte, string) {
	b := make([]byte, n) // seeded random: every chunk differs
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], uint64(n))
	_, _ = rand.NewChaCha8(seed).Read(b)
	s := sha256.Sum256(b)
	return b, hex.EncodeToString(s[:])
}

func golden(b []byte, sum string) drivers.ImageRef {
	return drivers.ImageRef{Name: "custom/golden", Architecture: "amd64/generic", SHA256: sum, Size: int64(len(b))}
}

// send sends the content from up.Offset to its end.
func send(t *testing.T, f *Server, up drivers.ImageUpload, b []byte) drivers.ImageUpload {
	t.Helper()
	for up.Offset < up.Size {
		end := min(up.Offset+drivers.ImageChunkSize, up.Size)
		var err error
		if up, err = f.UploadImageChunk(context.Background(), up, b[up.Offset:end]); err != nil {
			t.Fatalf("chunk: %v", err)
		}
	}
	return up
}

// A chunk whose answer was lost is sent again: the provisioner does not
// append it twice, and the content completes with its checksum.
func TestImageChunkLostAnswerNotAppendedTwice(t *testing.T) {
	f := NewServer(Script{})
	b, sum := content(drivers.ImageChunkSize + 1000)
	ctx := context.Background()
	up, err := f.StartImageUpload(ctx, golden(b, sum))
	if err != nil {
		t.Fatal(err)
	}
	f.FailImageChunks(1, true)
	if _, err := f.UploadImageChunk(ctx, up, b[:drivers.ImageChunkSize]); drivers.Classify(err) != drivers.Transient {
		t.Fatalf("injected failure: %v", err)
	}
	if st := f.ImageStats(); st.BytesReceived != drivers.ImageChunkSize {
		t.Fatalf("the lost answer's chunk: %d bytes received", st.BytesReceived)
	}
	up, err = f.UploadImageChunk(ctx, up, b[:drivers.ImageChunkSize]) // the same chunk again
	if err != nil || up.Offset != drivers.ImageChunkSize {
		t.Fatalf("the chunk sent again: %+v %v", up, err)
	}
	if up = send(t, f, up, b); !up.Complete {
		t.Fatalf("not complete: %+v", up)
	}
	if st := f.ImageStats(); st.BytesReceived != int64(len(b)) || st.ChecksumRefused != 0 {
		t.Errorf("stats %+v, want %d bytes received once, no refusal", st, len(b))
	}
}

// A chunk that does not start where the content ends is refused and the
// error's upload says where it ends.
func TestImageChunkWrongOffset(t *testing.T) {
	f := NewServer(Script{})
	b, sum := content(3 * drivers.ImageChunkSize)
	ctx := context.Background()
	up, _ := f.StartImageUpload(ctx, golden(b, sum))
	skip := up
	skip.Offset = drivers.ImageChunkSize
	got, err := f.UploadImageChunk(ctx, skip, b[drivers.ImageChunkSize:2*drivers.ImageChunkSize])
	if drivers.Classify(err) != drivers.Transient || got.Offset != 0 {
		t.Fatalf("a chunk past the content's end: %+v %v, want Transient and offset 0", got, err)
	}
	if st := f.ImageStats(); st.Chunks != 0 {
		t.Errorf("stats %+v: the chunk was taken", st)
	}
}

// RefuseImageChecksums: the completed content is refused, nothing usable
// stays; a Deploy of the image is taken, as MAAS takes it, and fails at
// install (Failed deployment, naming the missing complete version, no
// image recorded); Abandon deletes it.
func TestImageChecksumRefusedNotDeployable(t *testing.T) {
	f := NewServer(Script{})
	b, sum := content(1000)
	ctx := context.Background()
	f.RefuseImageChecksums(true)
	up, _ := f.StartImageUpload(ctx, golden(b, sum))
	_, err := f.UploadImageChunk(ctx, up, b)
	if !errors.Is(err, drivers.ErrImageChecksum) || drivers.Classify(err) != drivers.Permanent {
		t.Fatalf("refused content: %v", err)
	}
	m := f.AddMachine(drivers.Machine{Node: "n1"})
	n := drivers.Node{NodeRef: drivers.NodeRef{Name: "n1", MachineID: m.MachineID}, Platform: drivers.Platform{Image: "custom/golden"}}
	r, err := f.Deploy(ctx, n, drivers.Deployment{})
	if err != nil || r.Status != drivers.StatusFailed || !strings.Contains(r.Message, "no complete version") {
		t.Fatalf("deploy of an image with no complete version: %+v %v, want a Failed deployment naming it", r, err)
	}
	for _, got := range f.Machines() {
		if got.MachineID == m.MachineID && got.State != StateFailedDeployment {
			t.Errorf("the machine is %s, want %s", got.State, StateFailedDeployment)
		}
	}
	if name, sha := f.DeployedImage(m.MachineID); sha != "" {
		t.Errorf("the machine records %s %s deployed", name, sha)
	}
	if r, err := f.Release(ctx, n.NodeRef, drivers.EraseNone); err != nil || r.Status == drivers.StatusFailed {
		t.Errorf("release after the failed deployment: %+v %v", r, err)
	}
	if err := f.AbandonImageUpload(ctx, up); err != nil {
		t.Fatal(err)
	}
	for _, v := range f.ImageViews() {
		if v.Name == "custom/golden" {
			t.Errorf("abandoned image still there: %+v", v)
		}
	}
	if st := f.ImageStats(); st.ChecksumRefused != 1 || st.Deletes != 1 {
		t.Errorf("stats %+v", st)
	}
}

// Deploy takes the newest complete version and records its SHA-256.
func TestImageDeployRecordsVersion(t *testing.T) {
	f := NewServer(Script{})
	b, sum := content(5000)
	ctx := context.Background()
	up, _ := f.StartImageUpload(ctx, golden(b, sum))
	send(t, f, up, b)
	b2, sum2 := content(6000)
	up2, _ := f.StartImageUpload(ctx, golden(b2, sum2))
	if _, err := f.UploadImageChunk(ctx, up2, b2[:10]); err != nil { // version 2 incomplete
		t.Fatal(err)
	}
	m := f.AddMachine(drivers.Machine{Node: "n1"})
	n := drivers.Node{NodeRef: drivers.NodeRef{Name: "n1", MachineID: m.MachineID}, Platform: drivers.Platform{Image: "custom/golden"}}
	if r, err := f.Deploy(ctx, n, drivers.Deployment{}); err != nil || r.Status != drivers.StatusDone {
		t.Fatalf("deploy: %+v %v", r, err)
	}
	if name, got := f.DeployedImage(m.MachineID); name != "custom/golden" || got != sum {
		t.Errorf("deployed %s %s, want custom/golden %s (the newest complete version)", name, got, sum)
	}
}

func TestImportUnknownRelease(t *testing.T) {
	f := NewServer(Script{})
	_, err := f.ImportImage(context.Background(), drivers.ImageRef{Name: "ubuntu/trusty", Architecture: "amd64/generic"})
	if drivers.Classify(err) != drivers.Permanent {
		t.Errorf("a release the boot source lacks: %v", err)
	}
	if st := f.ImageStats(); st.Imports != 0 {
		t.Errorf("stats %+v", st)
	}
}

// The site probe reports the images with a complete version: an
// uploaded one once it is complete.
// TestProbeReportsEveryImage: ProbeSite lists every image, an upload
// still incomplete too, as the MAAS driver's probe does (MAAS's list
// says nothing of completeness).
func TestProbeReportsEveryImage(t *testing.T) {
	f := NewServer(Script{})
	b, sum := content(100)
	ctx := context.Background()
	info, _ := f.ProbeSite(ctx)
	if want := []string{"ubuntu/jammy", "ubuntu/noble"}; !slices.Equal(info.BootImages, want) {
		t.Fatalf("at first: %v, want %v", info.BootImages, want)
	}
	if _, err := f.StartImageUpload(ctx, golden(b, sum)); err != nil {
		t.Fatal(err)
	}
	info, _ = f.ProbeSite(ctx)
	if want := []string{"custom/golden", "ubuntu/jammy", "ubuntu/noble"}; !slices.Equal(info.BootImages, want) {
		t.Errorf("with an incomplete upload: %v, want %v", info.BootImages, want)
	}
}
