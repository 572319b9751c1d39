package maas

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/slipway-dev/slipway/drivers"
)

// Boot images (drivers.ServerImages) through MAAS's boot-resources API
// (src/maasserver/api/boot_resources.py): a resource per image name and
// architecture, with versions (sets) of files. A custom image is an
// Uploaded resource (MAAS keeps its name without "custom/"), created
// with its SHA-256 and size and no content, whose one file is then sent
// in chunks that MAAS appends; MAAS checks the SHA-256 when the last byte
// arrives and only then is that version complete. A deploy takes the
// newest complete version, so an incomplete one is never deployed. A
// standard image is a boot-source selection that MAAS's import fetches.

var _ drivers.ServerImages = (*Driver)(nil)

// maxImagesAnswer bounds an answer of the boot-resources API.
const maxImagesAnswer = 8 << 20

// imageReads is how many resources Images reads at once.
const imageReads = 4

// mBootResource is a boot resource as boot-resources/ lists it and, with
// its sets, as boot-resources/{id}/ reads it.
type mBootResource struct {
	ID           int                 `json:"id"`
	Type         string              `json:"type"` // Synced, Uploaded, Generated
	Name         string              `json:"name"`
	Architecture string              `json:"architecture"`
	BaseImage    string              `json:"base_image"`
	Title        string              `json:"title"`
	Sets         map[string]mBootSet `json:"sets"`
}

type mBootSet struct {
	Version  string               `json:"version"`
	Label    string               `json:"label"`
	Size     int64                `json:"size"`
	Complete bool                 `json:"complete"`
	Progress float64              `json:"progress"`
	Files    map[string]mBootFile `json:"files"`
}

type mBootFile struct {
	Filename  string  `json:"filename"`
	Filetype  string  `json:"filetype"`
	SHA256    string  `json:"sha256"`
	Size      int64   `json:"size"`
	Complete  bool    `json:"complete"`
	Progress  float64 `json:"progress"`
	UploadURI string  `json:"upload_uri"`
}

const typeUploaded = "Uploaded"

// provisionerName is a resource's image name as the design and a deploy
// name it: an Uploaded resource's bare name is custom/<name>.
func provisionerName(typ, name string) string {
	if typ == typeUploaded && !strings.Contains(name, "/") {
		return "custom/" + name
	}
	return name
}

// newestFirst is the resource's sets, the newest version first (MAAS
// names an upload's versions YYYYmmdd, then YYYYmmdd.1, .2, ...).
func (r *mBootResource) newestFirst() []mBootSet {
	sets := make([]mBootSet, 0, len(r.Sets))
	for v, s := range r.Sets {
		if s.Version == "" {
			s.Version = v
		}
		sets = append(sets, s)
	}
	slices.SortFunc(sets, func(a, b mBootSet) int { return compareVersions(b.Version, a.Version) })
	return sets
}

// compareVersions orders MAAS set versions: by the part before the first
// dot, then by the revision after it as a number.
func compareVersions(a, b string) int {
	ad, ar, _ := strings.Cut(a, ".")
	bd, br, _ := strings.Cut(b, ".")
	if c := cmp.Or(cmp.Compare(len(ad), len(bd)), cmp.Compare(ad, bd)); c != 0 {
		return c
	}
	an, aerr := strconv.Atoi(ar)
	bn, berr := strconv.Atoi(br)
	if aerr == nil && berr == nil || ar == "" || br == "" {
		return cmp.Compare(an, bn) // "" is revision 0
	}
	return cmp.Compare(ar, br)
}

// onlyFile is a set's content file: an upload's set has one.
func (s mBootSet) onlyFile() (mBootFile, bool) {
	if len(s.Files) != 1 {
		return mBootFile{}, false
	}
	for _, f := range s.Files {
		return f, true
	}
	return mBootFile{}, false
}

// view is the resource as a drivers.ProvisionerImage.
func (r *mBootResource) view() drivers.ProvisionerImage {
	p := drivers.ProvisionerImage{ID: strconv.Itoa(r.ID), Name: provisionerName(r.Type, r.Name),
		Architecture: r.Architecture, Custom: r.Type == typeUploaded}
	for i, s := range r.newestFirst() {
		if i == 0 && !s.Complete {
			p.Pending, p.Progress = true, s.Progress
		}
		if s.Complete {
			p.Complete = true
			if f, ok := s.onlyFile(); ok && p.Custom {
				p.SHA256, p.Size = f.SHA256, f.Size
			}
			break
		}
	}
	return p
}

// listResources lists the boot resources (typ: "", synced or uploaded).
func (d *Driver) listResources(ctx context.Context, typ string) ([]mBootResource, error) {
	var params map[string][]string
	if typ != "" {
		params = map[string][]string{"type": {typ}}
	}
	var res []mBootResource
	if err := d.c.callLimit(ctx, http.MethodGet, "boot-resources/", "", params, &res, maxImagesAnswer); err != nil {
		return nil, err
	}
	return res, nil
}

// readResource reads a boot resource with its sets.
func (d *Driver) readResource(ctx context.Context, id int) (*mBootResource, error) {
	var r mBootResource
	if err := d.c.callLimit(ctx, http.MethodGet, fmt.Sprintf("boot-resources/%d/", id), "", nil, &r, maxImagesAnswer); err != nil {
		return nil, err
	}
	return &r, nil
}

// Images lists MAAS's boot resources, each read with its versions (a few
// at once).
func (d *Driver) Images(ctx context.Context) ([]drivers.ProvisionerImage, error) {
	res, err := d.listResources(ctx, "")
	if err != nil {
		return nil, imageErr("list the boot images", err)
	}
	out := make([]drivers.ProvisionerImage, len(res))
	errs := make([]error, len(res))
	sem := make(chan struct{}, imageReads)
	var wg sync.WaitGroup
	for i := range res {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			r, err := d.readResource(ctx, res[i].ID)
			if isNotFound(err) { // deleted since the list
				return
			}
			if err != nil {
				errs[i] = err
				return
			}
			out[i] = r.view()
		})
	}
	wg.Wait()
	if err := firstErr(errs); err != nil {
		return nil, imageErr("read the boot images", err)
	}
	return slices.DeleteFunc(out, func(p drivers.ProvisionerImage) bool { return p.ID == "" }), nil
}

func firstErr(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// imageErr names what failed; a 403 says which right is missing.
func imageErr(what string, err error) error {
	if err == nil {
		return nil
	}
	var fe *forbiddenError
	if errors.As(err, &fe) {
		return drivers.NewError(drivers.Permanent, fmt.Errorf("maas: %s: the API key's user is not a MAAS administrator, "+
			"and only administrators manage boot images: use an admin user's key (maas.apiKey): %w", what, unclassed(err)))
	}
	return drivers.NewError(drivers.Classify(err), fmt.Errorf("maas: %s: %w", what, unclassed(err)))
}

// unclassed is the error a classified error carries, so that a message
// built around it names its class once.
func unclassed(err error) error {
	var e *drivers.Error
	if errors.As(err, &e) {
		return e.Err
	}
	return err
}

// heldBytes is how many bytes of the file the region that receives the
// upload holds, from its progress percent (MAAS reports no byte count):
// MAAS's progress is over every region controller's copy
// (100 * sum of the regions' bytes / (size * regions)), and an upload
// writes only the receiving region's copy (the others copy it once it is
// complete), so the bytes held are progress * size * regions / 100,
// rounded to the byte and at most the size.
func heldBytes(f mBootFile, regions int) int64 {
	if f.Complete {
		return f.Size
	}
	held := int64(math.Round(float64(f.Size) * float64(max(regions, 1)) * f.Progress / 100))
	return min(max(held, 0), f.Size)
}

// maxRegions bounds the region controllers counted.
const maxRegions = 1000

// regionCount is how many region controllers MAAS has (GET
// regioncontrollers/), which its upload progress is divided by. A MAAS
// that answers 404 (no such endpoint: a single region, as the lab before
// it modelled several) counts one.
func (d *Driver) regionCount(ctx context.Context) (int, error) {
	var regions []struct {
		SystemID string `json:"system_id"`
	}
	err := d.c.callLimit(ctx, http.MethodGet, "regioncontrollers/", "", nil, &regions, maxImagesAnswer)
	if isNotFound(err) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	return min(max(len(regions), 1), maxRegions), nil
}
