package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/orchestrator/record"
)

// Image syncs: the leader's engine syncs each design image into the
// provisioner of every Site whose nodes deploy it. One sync of a Site's
// image runs at a time (whoever asks joins it); syncs of different
// images or Sites run side by side, at most maxImageSyncs at once. A
// custom image's content is read and verified here first (its SHA-256
// and size, by ImageContent), so that nothing reaches the provisioner
// before it is known good; it is then uploaded chunk by chunk from the
// offset the provisioner reports, the offset saved after every chunk.

// collImageSyncs keeps the ImageSync records (key: site/image).
const collImageSyncs = "image_syncs"

func init() {
	kinds[collImageSyncs] = storedrec.NewKind("image sync record", reflect.TypeFor[record.ImageSync]())
}

// maxImageSyncs bounds the image syncs running at once (all Sites).
const maxImageSyncs = 4

// imageEventStep: a progress event is written every this many percent of
// an upload (not per chunk: a 64 GiB image is 16,384 chunks).
const imageEventStep = 10

// ImageContent gives a custom image's content verified: read from the
// image directory or fetched from its URL, its SHA-256 and size checked
// against the Image document's (package firmwarestore). The path is
// where the verified bytes are.
type ImageContent interface {
	ImagePath(ctx context.Context, image string, src design.FirmwareImage, size int64) (string, error)
}

// imageJob is one sync of an image into a Site.
type imageJob struct {
	key  string
	done chan struct{}
	err  error // set before done is closed
	// waiters are the nodes to wake when it ends.
	mu      sync.Mutex
	waiters map[string]bool
	// tasks follow the sync (the last to ask names it in its record);
	// stop ends it when the last one that may stop it lets it go.
	tasks map[string]bool
	last  string
	stop  context.CancelCauseFunc
}

// follow records that task follows the job: the record names the last
// task that asked for it, so that task's CLI draws its progress.
func (j *imageJob) follow(task string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.tasks == nil {
		j.tasks = map[string]bool{}
	}
	j.tasks[task], j.last = true, task
}

// release lets task's interest in the job go: when no task follows it
// any more, the sync is stopped (the upload stays resumable).
func (j *imageJob) release(task string, cause error) {
	j.mu.Lock()
	delete(j.tasks, task)
	if j.last == task {
		j.last = ""
		for t := range j.tasks {
			j.last = max(j.last, t)
		}
	}
	idle := len(j.tasks) == 0
	j.mu.Unlock()
	if idle && j.stop != nil {
		j.stop(cause)
	}
}

func (j *imageJob) lastTask() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.last
}

func (j *imageJob) finished() (bool, error) {
	select {
	case <-j.done:
		return true, j.err
	default:
		return false, nil
	}
}

func (j *imageJob) wait(node string) {
	j.mu.Lock()
	if j.waiters == nil {
		j.waiters = map[string]bool{}
	}
	j.waiters[node] = true
	j.mu.Unlock()
}

// imageSyncs are the syncs running (zero value ready).
type imageSyncs struct {
	mu      sync.Mutex
	running map[string]*imageJob
	slots   chan struct{}
	reads   imageReads // the lists' recent reads of each Site
}

// runImages is a task's image syncs, by site/image: the nodes of the
// task follow those (a retry is a new run: it syncs again).
type runImages struct {
	mu   sync.Mutex
	jobs map[string]*imageJob
}

// serverImages is the image API of site's provisioner (through the
// wrappers of the server driver: site multiplexer, rebinding, metrics).
func (e *Engine) serverImages(ctx context.Context, site string) (drivers.ServerImages, error) {
	return drivers.ImagesAt(ctx, e.cfg.Drivers.Server, site)
}

// jobKey names a sync: the Site, the image and its version (a custom
// image's SHA-256, a standard one's provisioner name), so that a sync of
// another revision's content is never taken for this one's.
func jobKey(site string, im *design.Image) string {
	v := im.ProvisionerName() + " " + im.Arch()
	if c := im.Spec.Custom; c != nil {
		v = c.Source.SHA256
	}
	return site + "/" + im.Metadata.Name + "@" + v
}

// imageJobFor is the sync of im into site that run follows: the one it
// started, else the one running, else a new one.
func (e *Engine) imageJobFor(run *taskRun, d *design.Design, site string, im *design.Image) *imageJob {
	key := jobKey(site, im)
	run.imgs.mu.Lock()
	defer run.imgs.mu.Unlock()
	if j := run.imgs.jobs[key]; j != nil {
		return j
	}
	j := e.startImageSync(run.id, run.corr, d, site, im)
	j.follow(run.id)
	if run.imgs.jobs == nil {
		run.imgs.jobs = map[string]*imageJob{}
	}
	run.imgs.jobs[key] = j
	return j
}

// startImageSync starts the sync of im into site, or returns the one
// running. A stopped engine returns a job that failed at once.
func (e *Engine) startImageSync(task, corr string, d *design.Design, site string, im *design.Image) *imageJob {
	key := jobKey(site, im)
	s := &e.imgs
	s.mu.Lock()
	if j := s.running[key]; j != nil {
		s.mu.Unlock()
		return j
	}
	if s.running == nil {
		s.running, s.slots = map[string]*imageJob{}, make(chan struct{}, maxImageSyncs)
	}
	olds := e.supersede(site, im, key)
	j := &imageJob{key: key, done: make(chan struct{}), tasks: map[string]bool{task: true}, last: task}
	e.mu.Lock()
	if e.ctx == nil || e.closed {
		e.mu.Unlock()
		s.mu.Unlock()
		j.err = errors.New("the engine is stopping")
		close(j.done)
		return j
	}
	e.wg.Add(1)
	ctx, stop := context.WithCancelCause(e.ctx)
	j.stop = stop
	e.mu.Unlock()
	s.running[key] = j
	s.mu.Unlock()
	go func() {
		defer e.wg.Done()
		for _, o := range olds { // their uploads stopped (abandoned) first
			select {
			case <-o.done:
			case <-ctx.Done():
			}
		}
		j.err = e.runImageSync(ctx, task, corr, d, site, im)
		stop(nil)
		s.mu.Lock()
		delete(s.running, key)
		s.mu.Unlock()
		close(j.done)
		j.mu.Lock()
		for n := range j.waiters {
			e.wake(n)
		}
		j.mu.Unlock()
	}()
	return j
}

// errSuperseded is the cause of a sync stopped because a sync of
// another version of its image into its Site started.
var errSuperseded = errors.New("superseded")

// supersede stops the running syncs of other versions of im into site
// (called with e.imgs.mu held) and returns them: the newest version
// asked wins, and an older one's upload never completes after it (MAAS
// deploys the version created last among the complete ones).
func (e *Engine) supersede(site string, im *design.Image, key string) []*imageJob {
	prefix := site + "/" + im.Metadata.Name + "@"
	var olds []*imageJob
	for k, o := range e.imgs.running {
		if k != key && strings.HasPrefix(k, prefix) {
			olds = append(olds, o)
			if o.stop != nil {
				o.stop(fmt.Errorf("%w by a sync of version %s", errSuperseded, strings.TrimPrefix(key, prefix)))
			}
		}
	}
	return olds
}

// runImageSync syncs im into site: waits for a slot, then imports or
// uploads it, recording each step; its error is the failed sync's reason.
func (e *Engine) runImageSync(ctx context.Context, task, corr string, d *design.Design, site string, im *design.Image) error {
	sy := newImageSync(site, im, task)
	sy.Correlation = corr
	if old, ok, _ := e.imageSync(ctx, sy.Key()); ok && old.SHA256 == sy.SHA256 {
		sy.ResourceID, sy.FileID, sy.Offset = old.ResourceID, old.FileID, old.Offset
	}
	_ = e.saveImageSync(ctx, &sy, "info", "sync of image %s (%s) into site %s asked", im.Metadata.Name, sy.Name, site)
	path, err := e.imageContent(ctx, &sy, im) // outside the upload slot
	if err == nil {
		select {
		case e.imgs.slots <- struct{}{}:
			defer func() { <-e.imgs.slots }()
		case <-ctx.Done():
			return e.interrupted(ctx, &sy)
		}
		sy.State, sy.Started = record.ImageSyncing, now()
		if err := e.saveImageSync(ctx, &sy, "info", "sync of image %s into site %s started", im.Metadata.Name, site); err != nil {
			return err
		}
		err = e.syncImage(ctx, &sy, im, path)
	}
	if ctx.Err() != nil {
		return e.interrupted(ctx, &sy)
	}
	if errors.Is(err, errRecordWrite) {
		return err
	}
	if err != nil {
		sy.State, sy.Error = record.ImageSyncFailed, err.Error()
		_ = e.saveImageSync(ctx, &sy, "error", "sync of image %s into site %s failed: %v", im.Metadata.Name, site, err)
		return err
	}
	sy.State, sy.Error = record.ImageSynced, ""
	if sy.Custom {
		sy.Offset = sy.Size
	}
	return e.saveImageSync(ctx, &sy, "info", "image %s (%s) is complete in site %s", im.Metadata.Name, sy.Name, site)
}

// interrupted records a sync stopped before its end (the engine stopped,
// or every task that asked for it was cancelled) and says so.
func (e *Engine) interrupted(ctx context.Context, sy *record.ImageSync) error {
	why := "the engine stopped"
	if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) {
		why = c.Error()
	}
	sy.State = ImageInterrupted
	sy.Error = fmt.Sprintf("interrupted (%s) at %d of %d bytes: the provisioner keeps what it received, an incomplete version it never deploys; the next sync resumes there", why, sy.Offset, sy.Size)
	if errors.Is(context.Cause(ctx), errSuperseded) {
		sy.Error = fmt.Sprintf("interrupted (%s) at %d of %d bytes: %s", why, sy.Offset, sy.Size, e.abandonSuperseded(ctx, sy))
	}
	_ = e.saveImageSync(ctx, sy, "warn", "sync of image %s into site %s %s", sy.Image, sy.Site, sy.Error)
	return fmt.Errorf("site %s, image %s: %s", sy.Site, sy.Image, sy.Error)
}

// abandonSuperseded gives up the upload of a superseded version (when
// one was started) through the provisioner's AbandonImageUpload, so that
// nothing of it is resumed, and says what was done.
func (e *Engine) abandonSuperseded(ctx context.Context, sy *record.ImageSync) string {
	if !sy.Custom || sy.FileID == "" {
		return "no upload of it had started"
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*imageListTimeout)
	defer cancel()
	si, err := e.serverImages(actx, sy.Site)
	if err != nil {
		return fmt.Sprintf("its upload could not be abandoned (%v): look at boot resource %s", err, sy.ResourceID)
	}
	up := drivers.ImageUpload{ResourceID: sy.ResourceID, FileID: sy.FileID, Offset: sy.Offset, Size: sy.Size}
	ref := drivers.ImageRef{Name: sy.Name, Architecture: sy.Architecture, SHA256: sy.SHA256, Size: sy.Size}
	left := e.abandon(actx, si, sy, ref, up, "superseded")
	sy.ResourceID, sy.FileID, sy.Offset = "", "", 0
	return "its upload was abandoned: " + left
}

// markInterruptedSyncs, at Start (no sync runs yet), records every sync
// left syncing or pending by an engine that stopped (or was killed) as
// interrupted: a task resumed next starts it again.
func (e *Engine) markInterruptedSyncs(ctx context.Context) {
	syncs, err := e.ImageSyncs(ctx)
	if err != nil {
		e.log.Warn().Err(err).Msg("read the image sync records")
		return
	}
	for i := range syncs {
		sy := &syncs[i]
		if sy.State != record.ImageSyncing && sy.State != record.ImageSyncPending {
			continue
		}
		sy.State = ImageInterrupted
		sy.Error = fmt.Sprintf("interrupted (serve stopped during the sync) at %d of %d bytes: the provisioner keeps what it received, an incomplete version it never deploys; the next sync resumes there", sy.Offset, sy.Size)
		_ = e.saveImageSync(ctx, sy, "warn", "sync of image %s into site %s %s", sy.Image, sy.Site, sy.Error)
	}
}

// imageJobKey is jobKey from a sync's record.
func imageJobKey(sy *record.ImageSync) string {
	v := sy.Name + " " + sy.Architecture
	if sy.Custom {
		v = sy.SHA256
	}
	return sy.Site + "/" + sy.Image + "@" + v
}

// lastTask is the task that last asked for the running sync of sy.
func (s *imageSyncs) lastTask(sy *record.ImageSync) string {
	s.mu.Lock()
	j := s.running[imageJobKey(sy)]
	s.mu.Unlock()
	if j == nil {
		return ""
	}
	return j.lastTask()
}

func newImageSync(site string, im *design.Image, task string) record.ImageSync {
	sy := record.ImageSync{Site: site, Image: im.Metadata.Name, Name: im.ProvisionerName(), Architecture: im.Arch(),
		State: record.ImageSyncPending, Task: task}
	if c := im.Spec.Custom; c != nil {
		sy.Custom, sy.SHA256, sy.Size = true, c.Source.SHA256, c.Size
	}
	return sy
}

// imageRef is im as the provisioner is told about it.
func imageRef(im *design.Image) drivers.ImageRef {
	ref := drivers.ImageRef{Name: im.ProvisionerName(), Architecture: im.Arch()}
	if c := im.Spec.Custom; c != nil {
		ref.Format, ref.SHA256, ref.Size, ref.Title, ref.BaseImage = c.Format, c.Source.SHA256, c.Size, c.Title, c.BaseImage
	}
	return ref
}

// syncImage runs one sync: an import for a standard image, a verified
// upload for a custom one.
func (e *Engine) syncImage(ctx context.Context, sy *record.ImageSync, im *design.Image, path string) error {
	si, err := e.serverImages(ctx, sy.Site)
	if err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, e.timeout(record.StageImages))
	defer cancel()
	if !sy.Custom {
		err = e.importImage(tctx, si, sy, im)
	} else {
		err = e.uploadImage(tctx, si, sy, im, path)
	}
	if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) && !strings.Contains(err.Error(), "lifecycle.timeouts.images") {
		err = fmt.Errorf("%w; the sync did not finish within lifecycle.timeouts.images (%s): raise it for a large image or a slow link; the next sync resumes from what the provisioner holds", err, e.timeout(record.StageImages))
	}
	return err
}

// importImage asks the provisioner to import a standard image and waits
// until it is complete.
func (e *Engine) importImage(ctx context.Context, si drivers.ServerImages, sy *record.ImageSync, im *design.Image) error {
	ref := imageRef(im)
	for {
		var res drivers.Result
		err := e.imageCall(ctx, sy, "import", func(ctx context.Context) (err error) {
			res, err = si.ImportImage(ctx, ref)
			return err
		})
		switch {
		case err != nil:
			return err
		case res.Status == drivers.StatusDone:
			return nil
		case res.Status == drivers.StatusFailed:
			return fmt.Errorf("site %s, image %s: the provisioner failed its import of %s: %s (check its boot source)", sy.Site, sy.Image, sy.Name, res.Message)
		}
		if !sleep(ctx, min(e.scaled(max(res.RetryAfter, 5*time.Second)), e.cfg.MaxWait)) {
			return fmt.Errorf("site %s, image %s: the import of %s did not finish within lifecycle.timeouts.images (%s): %w", sy.Site, sy.Image, sy.Name, e.timeout(record.StageImages), ctx.Err())
		}
	}
}

// imageCall runs fn, retrying a transient error with backoff (the retry
// policy's attempts); the error names the site, image and call.
func (e *Engine) imageCall(ctx context.Context, sy *record.ImageSync, what string, fn func(context.Context) error) error {
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || drivers.Classify(err) != drivers.Transient || attempt >= e.cfg.Retry.Attempts {
			return fmt.Errorf("site %s, image %s: %s: %w (after %d attempt(s))", sy.Site, sy.Image, what, err, attempt)
		}
		wait := e.scaled(e.cfg.Retry.backoff(attempt))
		e.imageEvent(sy, "warn", "site %s, image %s: %s failed (%v); attempt %d in %s", sy.Site, sy.Image, what, err, attempt+1, wait.Round(time.Millisecond))
		if !sleep(ctx, wait) {
			return fmt.Errorf("site %s, image %s: %s: %w", sy.Site, sy.Image, what, ctx.Err())
		}
	}
}

// imageSync reads the record of site/image.
func (e *Engine) imageSync(ctx context.Context, key string) (record.ImageSync, bool, error) {
	var sy record.ImageSync
	err := e.rec.getJSON(ctx, collImageSyncs, key, &sy)
	if errors.Is(err, ErrNotFound) {
		return sy, false, nil
	}
	return sy, err == nil, err
}

// errRecordWrite marks a sync ended because its record could not be
// written: under a replica group, this engine may have lost its
// leadership (its writes fenced), and must send the provisioner nothing
// more; the leader resumes from the provisioner's offset.
var errRecordWrite = errors.New("the sync's record could not be written")

// saveImageSync writes the record with an image.sync event; its error
// (logged) wraps errRecordWrite.
func (e *Engine) saveImageSync(ctx context.Context, sy *record.ImageSync, level, format string, args ...any) error {
	sy.Updated = now()
	if t := e.imgs.lastTask(sy); t != "" {
		sy.Task = t
	}
	var b batch
	b.put(collImageSyncs, sy.Key(), *sy)
	if format != "" {
		b.event(imageSyncEvent(sy, level, format, args...))
	}
	if sy.State != record.ImageSyncing && sy.State != record.ImageSyncPending {
		defer e.imgs.reads.drop(sy.Site) // the sync ended: the next list reads afresh
	}
	if err := e.rec.write(context.WithoutCancel(ctx), &b); err != nil {
		e.log.Warn().Err(err).Str("site", sy.Site).Str("image", sy.Image).Msg("save the image sync record")
		return fmt.Errorf("site %s, image %s: %w (%v): this engine stops uploading (a replica no longer leading must not go on); the leader resumes from the provisioner's offset", sy.Site, sy.Image, errRecordWrite, err)
	}
	return nil
}

func imageSyncEvent(sy *record.ImageSync, level, format string, args ...any) record.Event {
	return record.Event{Time: now(), Task: sy.Task, Level: level, Kind: "image", Type: record.EventImageSync,
		Message: fmt.Sprintf(format, args...), Correlation: sy.Correlation}
}

// imageEvent writes an image.sync event alone.
func (e *Engine) imageEvent(sy *record.ImageSync, level, format string, args ...any) {
	var b batch
	b.event(imageSyncEvent(sy, level, format, args...))
	_ = e.rec.write(e.ctx, &b)
}

// ImageSyncs returns the image sync records, by site/image, sorted.
func (e *Engine) ImageSyncs(ctx context.Context) ([]record.ImageSync, error) {
	out, err := listSlice[record.ImageSync](ctx, e.cfg.Store, collImageSyncs, "")
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out, err
}
