package orchestrator_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/drivers/fake"
	"github.com/slipway-dev/slipway/firmwarestore"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/labimage"
	"github.com/slipway-dev/slipway/statestore"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// imgSize is the test image's size: two whole chunks and a part.
const imgSize = 2*drivers.ImageChunkSize + 1234567

// imgContent is the test image's content: the lab's deterministic image
// generator (seeded per name), so that no two chunks are alike and a
// chunk sent in the wrong place changes the SHA-256. It is generated
// once per test process (about 9 MiB, 48 callers: under -race each
// generation cost a sixth of a CPU second); every caller gets its own
// copy, so a test that changes its bytes changes no other test's.
func imgContent() []byte { return bytes.Clone(imgContentOnce()) }

// imgContentOnce is the content itself, shared: for callers that only
// read it (newImgEnv writes it to the image file).
var imgContentOnce = sync.OnceValue(func() []byte {
	b, err := io.ReadAll(labimage.Reader("gpu-golden", "amd64/generic", imgSize))
	if err != nil || len(b) != imgSize {
		panic(fmt.Sprintf("labimage: %d bytes, %v", len(b), err))
	}
	return b
})

// imgSum is the SHA-256 of the test content, in hex (made once).
var imgSum = sync.OnceValue(func() string { return sumHex(imgContentOnce()) })

// TestImgContentChunksDiffer: every chunk of the test content differs
// from every other (a content that repeats could pass the SHA-256 check
// with a chunk in the wrong place).
func TestImgContentChunksDiffer(t *testing.T) {
	t.Parallel()
	b := imgContent()
	seen := map[string]int{}
	for off := 0; off+1<<20 <= len(b); off += 1 << 20 {
		k := sumHex(b[off : off+1<<20])
		if prev, ok := seen[k]; ok {
			t.Fatalf("the MiB at %d repeats the one at %d", off, prev)
		}
		seen[k] = off
	}
}

func sumHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// imgEnv is an engine on the fake drivers with a design of nodes whose
// hardware profiles deploy the custom image gpu-golden, its file in an
// image directory.
type imgEnv struct {
	d     *design.Design
	rev   string
	srv   *fake.Server
	st    statestore.Store
	cfg   orchestrator.Config
	dir   string
	nodes []string
}

// newImgEnv builds the env; edit changes the image document before the
// design is stored.
func newImgEnv(t *testing.T, nodes int, content []byte, edit func(*design.Image)) *imgEnv {
	t.Helper()
	ctx := t.Context()
	d, err := labrun.Generated(ctx, t.TempDir(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gpu-golden.ddraw"), content, 0o600); err != nil {
		t.Fatal(err)
	}
	im := &design.Image{Metadata: design.ObjectMeta{Name: "gpu-golden"}, Spec: design.ImageSpec{Architecture: "amd64/generic",
		Custom: &design.CustomImage{Source: design.FirmwareImage{File: "gpu-golden.ddraw", SHA256: imgSum()},
			Format: "ddraw", Size: imgSize, BaseImage: "ubuntu/jammy", Title: "GPU golden"}}}
	if edit != nil {
		edit(im)
	}
	d.Images = map[string]*design.Image{"gpu-golden": im}
	env := &imgEnv{d: d, srv: fake.NewServer(fake.Script{}), st: memory.New(), dir: dir}
	for _, name := range d.NodeNames() {
		d.Nodes[name].Spec.Platform.Image = "gpu-golden"
		env.nodes = append(env.nodes, name)
	}
	env.rev = env.store(t, d)
	fw, err := firmwarestore.New(firmwarestore.Config{Dir: dir, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	env.cfg = orchestrator.Config{Store: env.st, Drivers: orchestrator.Drivers{OOB: fake.NewOOB(fake.Script{}), Server: env.srv, Network: fake.NewNetwork(fake.Script{})},
		Secrets:   func(context.Context, string) (drivers.Secret, error) { return drivers.NewSecret("test"), nil },
		TimeScale: 0.001, Images: fw}
	return env
}

// store writes d as a revision of the env's store.
func (env *imgEnv) store(t *testing.T, d *design.Design) string {
	t.Helper()
	raw, id, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.st.PutRevision(t.Context(), statestore.Revision{ID: id, Design: raw, Counts: d.Counts(), Roots: []string{"(test)"}}); err != nil {
		t.Fatal(err)
	}
	return id
}

func (env *imgEnv) engine(t *testing.T) *orchestrator.Engine {
	t.Helper()
	e, err := orchestrator.New(env.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// runTask submits req and waits for the task's end.
func runTask(t *testing.T, e *orchestrator.Engine, req record.Request) record.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req.Requester = "test"
	task, err := e.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Wait(ctx, task.ID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// customView is the fake provisioner's custom/gpu-golden.
func customView(srv *fake.Server) (fake.ImageView, bool) {
	for _, v := range srv.ImageViews() {
		if v.Name == "custom/gpu-golden" {
			return v, true
		}
	}
	return fake.ImageView{}, false
}

func calls(srv *fake.Server, method string) int {
	n := 0
	for _, c := range srv.Calls() {
		if c.Method == method {
			n++
		}
	}
	return n
}

// TestImageDeployUploadsFirst: a deploy of nodes whose profile names a
// custom image uploads it into the Site once (3 chunks for its 2.3
// chunks' size, every byte once), and each node's machine deploys that
// image, with the image's SHA-256, after the images stage.
func TestImageDeployUploadsFirst(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 2, imgContentOnce(), nil)
	e := env.engine(t)
	task := runTask(t, e, record.Request{Action: record.ActionDeployNodes})
	if task.Status != record.TaskSucceeded {
		t.Fatalf("deploy: %s: %s", task.Status, task.Message)
	}
	v, ok := customView(env.srv)
	st := env.srv.ImageStats()
	if !ok || !v.Complete || v.SHA256 != imgSum() || st.Creates != 1 || st.Chunks != 3 || st.BytesReceived != imgSize {
		t.Fatalf("provisioner: %+v (found %v), stats %+v: want one complete upload of 3 chunks, %d bytes", v, ok, st, imgSize)
	}
	for _, n := range env.nodes {
		rec, err := e.Node(t.Context(), n)
		if err != nil {
			t.Fatal(err)
		}
		name, sum := env.srv.DeployedImage(rec.MachineID)
		if name != "custom/gpu-golden" || sum != imgSum() {
			t.Errorf("%s deployed %q (%s)", n, name, sum)
		}
		if !passedBefore(rec.History, record.StageImages, record.StageDeploy) {
			t.Errorf("%s: no images stage before deploy in %v", n, rec.History)
		}
	}
}

// passedBefore reports whether the history has a transition from a
// before one from b.
func passedBefore(h []record.Transition, a, b record.Stage) bool {
	ia, ib := -1, -1
	for i, tr := range h {
		if tr.From == a && ia < 0 {
			ia = i
		}
		if tr.From == b && ib < 0 {
			ib = i
		}
	}
	return ia >= 0 && ib > ia
}

// TestImageSyncRefusedLocally: a wrong checksum, a content over the
// Image's size and a source that does not answer are each refused before
// the provisioner sees anything (it counts no create and no chunk), the
// reason naming the image, the site and what to fix.
func TestImageSyncRefusedLocally(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/gpu.img"
	ln.Close() // nothing answers there
	cases := []struct {
		name    string
		content []byte
		edit    func(*design.Image)
		want    string
	}{
		{"checksum", append([]byte("x"), imgContent()[1:]...), nil, "checksum mismatch"},
		{"over size", append(imgContent(), 0), nil, "larger than the bound of"},
		{"source does not answer", imgContent(), func(im *design.Image) {
			im.Spec.Custom.Source = design.FirmwareImage{URL: dead, SHA256: imgSum()}
		}, "download"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := newImgEnv(t, 1, c.content, c.edit)
			e := env.engine(t)
			task := runTask(t, e, record.Request{Action: record.ActionSyncImages})
			if task.Status != record.TaskFailed || !strings.Contains(task.Message, c.want) || !strings.Contains(task.Message, "gpu-golden") ||
				!strings.Contains(task.Message, "site ") {
				t.Fatalf("task %s: %s", task.Status, task.Message)
			}
			if st := env.srv.ImageStats(); st.Creates != 0 || st.Chunks != 0 || calls(env.srv, "StartImageUpload") != 0 {
				t.Fatalf("the provisioner saw the image: %+v, %d starts", st, calls(env.srv, "StartImageUpload"))
			}
			syncs, err := e.ImageSyncs(t.Context())
			if err != nil || len(syncs) != 1 || syncs[0].State != record.ImageSyncFailed || syncs[0].Error == "" {
				t.Fatalf("records %+v %v", syncs, err)
			}
		})
	}
}

// TestImageSyncChecksumRefusedByProvisioner: the provisioner refuses the
// completed content; the upload is abandoned (deleted: nothing half-made
// is left) and the sync fails saying so.
func TestImageSyncChecksumRefusedByProvisioner(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	env.srv.RefuseImageChecksums(true)
	e := env.engine(t)
	task := runTask(t, e, record.Request{Action: record.ActionSyncImages})
	if task.Status != record.TaskFailed || !strings.Contains(task.Message, "refused the uploaded content") {
		t.Fatalf("task %s: %s", task.Status, task.Message)
	}
	st := env.srv.ImageStats()
	if _, left := customView(env.srv); left || st.ChecksumRefused != 1 || st.Deletes != 1 {
		t.Fatalf("left %v, stats %+v: want the refused upload deleted", left, st)
	}
}

// TestImageSyncWaitsForRegionCopies: with several region controllers the
// provisioner holds all the bytes, verified, but says the image complete
// only after the others copied it (the fake's DelayImageCompletion); the
// sync polls until then, without sending a byte more, and a deploy only
// follows once the provisioner itself says complete.
func TestImageSyncWaitsForRegionCopies(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	env.srv.DelayImageCompletion(3)
	e := env.engine(t)
	task := runTask(t, e, record.Request{Action: record.ActionDeployNodes})
	if task.Status != record.TaskSucceeded {
		t.Fatalf("deploy: %s: %s", task.Status, task.Message)
	}
	v, _ := customView(env.srv)
	if st := env.srv.ImageStats(); !v.Complete || v.SHA256 != imgSum() || st.Creates != 1 || st.BytesReceived != imgSize {
		t.Fatalf("view %+v stats %+v: want one complete upload, %d bytes received", v, st, imgSize)
	}
	rec, err := e.Node(t.Context(), env.nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	if name, sum := env.srv.DeployedImage(rec.MachineID); name != "custom/gpu-golden" || sum != imgSum() {
		t.Fatalf("deployed %q (%s)", name, sum)
	}
	evs, err := e.Events(t.Context(), 0, 10000, task.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	copying := false
	for _, ev := range evs {
		copying = copying || strings.Contains(ev.Message, "copying to the region controllers")
	}
	if !copying {
		t.Fatal("no event says the provisioner copies the image to its region controllers")
	}
}

// earlyComplete is a server driver whose UploadImageChunk says the image
// complete at its last byte whatever the provisioner says (a driver that
// trusts its own count): the images stage must not take its word.
type earlyComplete struct{ *fake.Server }

func (s earlyComplete) UploadImageChunk(ctx context.Context, up drivers.ImageUpload, chunk []byte) (drivers.ImageUpload, error) {
	next, err := s.Server.UploadImageChunk(ctx, up, chunk)
	if err == nil && next.Offset == next.Size {
		next.Complete = true
	}
	return next, err
}

// TestImageStageAsksTheProvisioner: the sync ends (its driver says
// complete) while the provisioner's newest complete version does not
// carry the design's SHA-256 yet (its region controllers still copy it);
// the node deploys only once the provisioner's own list says so, with the
// design's content (counted from the fake provisioner's state).
func TestImageStageAsksTheProvisioner(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	env.srv.DelayImageCompletion(4)
	env.cfg.Drivers.Server = earlyComplete{env.srv}
	e := env.engine(t)
	task := runTask(t, e, record.Request{Action: record.ActionDeployNodes})
	if task.Status != record.TaskSucceeded {
		t.Fatalf("deploy: %s: %s", task.Status, task.Message)
	}
	rec, err := e.Node(t.Context(), env.nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	if name, sum := env.srv.DeployedImage(rec.MachineID); name != "custom/gpu-golden" || sum != imgSum() {
		t.Fatalf("deployed %q (%s): want custom/gpu-golden with the design's SHA-256", name, sum)
	}
	if n := calls(env.srv, "Images"); n == 0 {
		t.Fatal("the images stage never read the provisioner's images")
	}
}

// newContentRevision stores a revision of the env's design whose image
// gpu-golden has content b (file gpu-golden-b.ddraw), and returns it.
func newContentRevision(t *testing.T, env *imgEnv, b []byte) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(env.dir, "gpu-golden-b.ddraw"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	d2, err := design.DecodeRevision(mustRevision(t, env))
	if err != nil {
		t.Fatal(err)
	}
	c := d2.Images["gpu-golden"].Spec.Custom
	c.Source.File, c.Source.SHA256, c.Size = "gpu-golden-b.ddraw", sumHex(b), int64(len(b))
	return env.store(t, d2)
}

// otherContent is content of the test image's size unlike imgContent.
func otherContent() []byte {
	b, err := io.ReadAll(labimage.Reader("gpu-golden-b", "amd64/generic", imgSize))
	if err != nil {
		panic(err)
	}
	return b
}

// TestImageSyncRefusedKeepsOlderVersion: new content refused by the
// provisioner's checksum while an older version is in service: nothing is
// deleted (the older version still deploys), and the sync's reason says
// so: the refused version is left unused and the next sync uploads a
// fresh one, not that the upload was deleted.
func TestImageSyncRefusedKeepsOlderVersion(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	e := env.engine(t)
	if task := runTask(t, e, record.Request{Action: record.ActionSyncImages}); task.Status != record.TaskSucceeded {
		t.Fatalf("first sync: %s: %s", task.Status, task.Message)
	}
	rev2 := newContentRevision(t, env, otherContent())
	env.srv.RefuseImageChecksums(true)
	task := runTask(t, e, record.Request{Action: record.ActionSyncImages, Revision: rev2})
	if task.Status != record.TaskFailed || !strings.Contains(task.Message, "refused the uploaded content") {
		t.Fatalf("second sync: %s: %s", task.Status, task.Message)
	}
	v, ok := customView(env.srv)
	if st := env.srv.ImageStats(); !ok || !v.Complete || v.SHA256 != imgSum() || st.Deletes != 0 {
		t.Fatalf("view %+v (found %v), stats %+v: want the older version in service, nothing deleted", v, ok, st)
	}
	if strings.Contains(task.Message, "was deleted") || !strings.Contains(task.Message, "fresh version") {
		t.Fatalf("the reason does not say what happened: %s", task.Message)
	}
}

// putImage uploads b as custom/gpu-golden into the fake provisioner
// directly, as an operator's own tools would (no sync of the engine).
func putImage(t *testing.T, srv *fake.Server, b []byte) {
	t.Helper()
	ctx := t.Context()
	up, err := srv.StartImageUpload(ctx, drivers.ImageRef{Name: "custom/gpu-golden", Architecture: "amd64/generic", Format: "ddraw",
		SHA256: sumHex(b), Size: int64(len(b))})
	for err == nil && !up.Complete {
		end := min(up.Offset+drivers.ImageChunkSize, up.Size)
		up, err = srv.UploadImageChunk(ctx, up, b[up.Offset:end])
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestImageStatusesReadTheProvisioner: an image the Site's provisioner
// already holds (uploaded by other means, no sync run by the engine) is
// listed synced; one it holds in another version is absent, with the
// reason; when the provisioner's images cannot be read the list still
// answers, from the engine's records, and says so for that Site.
func TestImageStatusesReadTheProvisioner(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		content []byte
		fail    bool
		state   string
		errWant string
	}{
		{"held", imgContent(), false, record.ImageSynced, ""},
		{"another version", otherContent(), false, orchestrator.ImageAbsent, "newest complete version"},
		{"unreadable", imgContent(), true, orchestrator.ImageAbsent, "could not be read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := newImgEnv(t, 1, imgContentOnce(), nil)
			putImage(t, env.srv, c.content)
			if c.fail {
				env.srv = fake.NewServer(fake.Script{FailAt: "Images", FailClass: drivers.Permanent})
				env.cfg.Drivers.Server = env.srv
			}
			e := env.engine(t)
			d, err := design.DecodeRevision(mustRevision(t, env))
			if err != nil {
				t.Fatal(err)
			}
			sts, err := e.ImageStatuses(t.Context(), d)
			if err != nil || len(sts) != 1 {
				t.Fatalf("statuses %+v, %v", sts, err)
			}
			st := sts[0]
			msg := st.Error + " " + st.ProvisionerError
			if st.State != c.state || (c.errWant != "" && !strings.Contains(msg, c.errWant)) || (c.errWant == "" && msg != " ") {
				t.Fatalf("status %+v: want %s (%q)", st, c.state, c.errWant)
			}
			if c.state == record.ImageSynced && st.Progress != 100 {
				t.Fatalf("status %+v: a held image is 100%% there", st)
			}
			if syncs, _ := e.ImageSyncs(t.Context()); len(syncs) != 0 {
				t.Fatalf("a sync ran: %+v", syncs)
			}
		})
	}
}

// heldVersion is a server driver whose chunk uploads of one content
// (SHA-256 sha) wait until release is closed; held is closed when the
// first of them waits.
type heldVersion struct {
	*fake.Server
	sha     string
	held    chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	files   map[string]string // file ID -> SHA-256
}

func (h *heldVersion) StartImageUpload(ctx context.Context, img drivers.ImageRef) (drivers.ImageUpload, error) {
	up, err := h.Server.StartImageUpload(ctx, img)
	if err == nil {
		h.mu.Lock()
		h.files[up.FileID] = img.SHA256
		h.mu.Unlock()
	}
	return up, err
}

func (h *heldVersion) UploadImageChunk(ctx context.Context, up drivers.ImageUpload, chunk []byte) (drivers.ImageUpload, error) {
	h.mu.Lock()
	sha := h.files[up.FileID]
	h.mu.Unlock()
	if sha == h.sha {
		h.once.Do(func() { close(h.held) })
		select {
		case <-h.release:
		case <-ctx.Done():
			return up, ctx.Err()
		}
	}
	return h.Server.UploadImageChunk(ctx, up, chunk)
}

// startHeldSync starts an engine whose uploads of the env's content are
// held (see heldVersion), submits a sync_images task and returns once
// its upload is held.
func startHeldSync(ctx context.Context, t *testing.T, env *imgEnv) (*orchestrator.Engine, *heldVersion, record.Task) {
	t.Helper()
	h := &heldVersion{Server: env.srv, sha: imgSum(), held: make(chan struct{}), release: make(chan struct{}), files: map[string]string{}}
	env.cfg.Drivers.Server = h
	e := env.engine(t)
	syncA, err := e.Submit(ctx, record.Request{Action: record.ActionSyncImages, Requester: "test"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.held:
	case <-ctx.Done():
		t.Fatal("the sync of content A never reached its upload")
	}
	return e, h, syncA
}

// TestImageSyncKeyedByVersion: while a sync of content A is held in the
// middle of its upload, a deploy on a revision whose image has content B
// does not join it: it starts its own sync (the provisioner counts a
// second version created), and its node deploys B, as the provisioner
// says, before A's upload is let go; A's sync, superseded, ends there.
func TestImageSyncKeyedByVersion(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	e, h, syncA := startHeldSync(ctx, t, env)
	b := otherContent()
	rev2 := newContentRevision(t, env, b)
	task := runTask(t, e, record.Request{Action: record.ActionDeployNodes, Revision: rev2})
	close(h.release) // A's upload was held all through the deploy
	if task.Status != record.TaskSucceeded {
		t.Fatalf("deploy of content B: %s: %s", task.Status, task.Message)
	}
	rec, err := e.Node(t.Context(), env.nodes[0])
	if err != nil {
		t.Fatal(err)
	}
	if name, sum := env.srv.DeployedImage(rec.MachineID); name != "custom/gpu-golden" || sum != sumHex(b) {
		t.Fatalf("deployed %q (%s): want content B (%s)", name, sum, sumHex(b))
	}
	if st := env.srv.ImageStats(); st.Creates != 2 {
		t.Fatalf("stats %+v: want two versions created, one per content", st)
	}
	if got, err := e.Wait(ctx, syncA.ID); err != nil || got.Status == record.TaskSucceeded || !strings.Contains(got.Message, "superseded") {
		t.Fatalf("the sync of content A after its release: %+v %v: want it stopped, superseded by B's", got, err)
	}
}

// TestImageSyncTransientChunks: chunks whose answer is lost (the
// provisioner took them) are not sent again: the provisioner is asked
// its offset; every byte arrives once.
func TestImageSyncTransientChunks(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	env.srv.FailImageChunks(2, true)
	e := env.engine(t)
	task := runTask(t, e, record.Request{Action: record.ActionSyncImages})
	if task.Status != record.TaskSucceeded {
		t.Fatalf("task %s: %s", task.Status, task.Message)
	}
	v, _ := customView(env.srv)
	if st := env.srv.ImageStats(); !v.Complete || v.SHA256 != imgSum() || st.BytesReceived != imgSize {
		t.Fatalf("view %+v stats %+v: want complete with %d bytes received", v, st, imgSize)
	}
}

// offsetCrashStore cancels the engine once an image sync record with an
// offset past 0 and short of the end is written: a crash (simulated: the
// engine's context ends) mid-upload.
type offsetCrashStore struct {
	statestore.Store
	onTrip  func()
	tripped atomic.Bool
}

func (c *offsetCrashStore) Write(ctx context.Context, ops ...statestore.Op) ([]uint64, error) {
	revs, err := c.Store.Write(ctx, ops...)
	for _, op := range ops {
		if err == nil && op.Kind == statestore.OpPut && bytes.Contains(op.Value, []byte(`"offset":4194304`)) && c.tripped.CompareAndSwap(false, true) {
			c.onTrip()
		}
	}
	return revs, err
}

// TestImageSyncResumesAfterCrash (simulated crash: the engine's context
// is cancelled after the first chunk's offset is saved): a new engine on
// the same store resumes the task, asks the provisioner its offset and
// sends only the rest; the image completes with the right SHA-256 and
// every byte arrived once.
func TestImageSyncResumesAfterCrash(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 1, imgContentOnce(), nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cs := &offsetCrashStore{Store: env.st, onTrip: cancel}
	cfg := env.cfg
	cfg.Store = cs
	e1, task := runToCrash(ctx, t, cfg, record.Request{Action: record.ActionSyncImages, Requester: "test"})
	e1.Close()
	if v, _ := customView(env.srv); !cs.tripped.Load() || v.Complete {
		t.Fatalf("crash %v, image %+v: want a crash mid-upload", cs.tripped.Load(), v)
	}
	e2 := env.engine(t)
	wctx, wcancel := context.WithTimeout(t.Context(), time.Minute)
	defer wcancel()
	got, err := e2.Wait(wctx, task.ID)
	if err != nil || got.Status != record.TaskSucceeded {
		t.Fatalf("resumed task: %+v %v", got, err)
	}
	v, _ := customView(env.srv)
	st := env.srv.ImageStats()
	if !v.Complete || v.SHA256 != imgSum() || st.Creates != 1 || st.BytesReceived != imgSize {
		t.Fatalf("view %+v stats %+v: want one upload, complete, %d bytes received", v, st, imgSize)
	}
	syncs, err := e2.ImageSyncs(t.Context())
	if err != nil || len(syncs) != 1 || syncs[0].State != record.ImageSynced || syncs[0].Resumed < drivers.ImageChunkSize {
		t.Fatalf("records %+v %v: want synced, resumed from at least one chunk", syncs, err)
	}
}

// TestRedeployUnsyncableImageReleasesNothing: a redeploy onto a design
// revision whose image cannot be synced (its checksum is wrong) fails
// every node at the images stage, before any machine is released.
func TestRedeployUnsyncableImageReleasesNothing(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 2, imgContentOnce(), nil)
	e := env.engine(t)
	if task := runTask(t, e, record.Request{Action: record.ActionDeployNodes}); task.Status != record.TaskSucceeded {
		t.Fatalf("deploy: %s: %s", task.Status, task.Message)
	}
	d2, err := design.DecodeRevision(mustRevision(t, env))
	if err != nil {
		t.Fatal(err)
	}
	d2.Images["gpu-golden"].Spec.Custom.Source.SHA256 = strings.Repeat("ab", 32)
	rev2 := env.store(t, d2)
	releases := calls(env.srv, "Release")
	task := runTask(t, e, record.Request{Action: record.ActionRedeployNodes, Revision: rev2})
	if task.Status != record.TaskFailed {
		t.Fatalf("redeploy: %s: %s", task.Status, task.Message)
	}
	if n := calls(env.srv, "Release") - releases; n != 0 {
		t.Fatalf("the redeploy released %d machine(s)", n)
	}
	for _, n := range env.nodes {
		rec, err := e.Node(t.Context(), n)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Stage != record.StageImages || !strings.Contains(rec.Reason, "gpu-golden") {
			t.Errorf("%s: at %s: %s", n, rec.Stage, rec.Reason)
		}
		if name, sum := env.srv.DeployedImage(rec.MachineID); name != "custom/gpu-golden" || sum != imgSum() {
			t.Errorf("%s: deployed %s (%s): the previous image is not in service", n, name, sum)
		}
	}
}

func mustRevision(t *testing.T, env *imgEnv) []byte {
	t.Helper()
	r, err := env.st.Revision(t.Context(), env.rev)
	if err != nil {
		t.Fatal(err)
	}
	return r.Design
}

// TestImageSyncStandard: a standard Image document (ubuntu/focal, not in the provisioner yet) is
// imported by the provisioner from its boot source (one import, the image
// complete there afterwards); one the boot source does not offer fails
// the sync, naming it.
func TestImageSyncStandard(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		release string
		ok      bool
	}{{"focal", true}, {"warty", false}} {
		env := newImgEnv(t, 1, imgContentOnce(), func(im *design.Image) {
			im.Spec = design.ImageSpec{OS: "ubuntu", Release: c.release, Architecture: "amd64/generic"}
		})
		task := runTask(t, env.engine(t), record.Request{Action: record.ActionSyncImages})
		complete := false
		for _, v := range env.srv.ImageViews() {
			complete = complete || v.Name == "ubuntu/"+c.release && v.Complete
		}
		switch {
		case c.ok && (task.Status != record.TaskSucceeded || !complete || env.srv.ImageStats().Imports != 1):
			t.Errorf("%s: task %s (%s), complete %v, stats %+v", c.release, task.Status, task.Message, complete, env.srv.ImageStats())
		case !c.ok && (task.Status != record.TaskFailed || complete || !strings.Contains(task.Message, "ubuntu/"+c.release)):
			t.Errorf("%s: task %s (%s), complete %v", c.release, task.Status, task.Message, complete)
		}
	}
}

// TestImagePreflightNoImageStore: a deploy of nodes whose custom image
// cannot be read (no image store configured) fails at preflight, before
// any machine is touched, naming the image and the fix.
func TestImagePreflightNoImageStore(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 2, imgContentOnce(), nil)
	env.cfg.Images = nil
	preflightRefuses(t, env)
}

// TestImagePreflightNoImageDir: the same when the image store has no
// image directory for the image's file (serve without --image-dir).
func TestImagePreflightNoImageDir(t *testing.T) {
	t.Parallel()
	env := newImgEnv(t, 2, imgContentOnce(), nil)
	st, err := firmwarestore.New(firmwarestore.Config{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	env.cfg.Images = st
	preflightRefuses(t, env)
}

// preflightRefuses runs a deploy that preflight must refuse for its image.
func preflightRefuses(t *testing.T, env *imgEnv) {
	t.Helper()
	task := runTask(t, env.engine(t), record.Request{Action: record.ActionDeployNodes})
	if task.Status != record.TaskFailed || !strings.Contains(task.Message, "preflight") || !strings.Contains(task.Message, "gpu-golden") ||
		!strings.Contains(task.Message, "--image-dir") {
		t.Fatalf("deploy: %s: %s", task.Status, task.Message)
	}
	if n := calls(env.srv, "IdentifyNode") + calls(env.srv, "Commission"); n != 0 {
		t.Fatalf("%d machine call(s) before the refusal", n)
	}
}
