package redfish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/slipway-dev/slipway/drivers"
)

// maxPushImage bounds an image the driver pushes to a BMC.
const maxPushImage = 4 << 30

// pushTimeout bounds fetching the image and pushing it.
const pushTimeout = 30 * time.Minute

// pushUpdate pushes u's image to the BMC's MultipartHttpPushUri (for a
// BMC without SimpleUpdate): it fetches the image from u.ImageURL into a
// temporary file, checks its SHA-256, and posts it with its targets as
// UpdateParameters. The task monitor, as simpleUpdate's.
func pushUpdate(ctx context.Context, s session, pushURI string, u drivers.FirmwareUpdate) (handle, running string, err error) {
	f, err := multipartImage(ctx, u)
	if err != nil {
		return "", "", err
	}
	defer func() { f.Close(); os.Remove(f.Name()) }()
	resp, err := s.c.RunRawRequestWithHeaders(http.MethodPost, pushURI, f, f.contentType, nil)
	if err != nil {
		running, err := refusal(err, u)
		return "", running, err
	}
	defer resp.Body.Close()
	h, err := monitorOf(resp)
	return h, "", err
}

// pushFile is a multipart body in a temporary file.
type pushFile struct {
	*os.File
	contentType string
}

// multipartImage writes the multipart body: UpdateParameters (Targets as
// inventory URIs, applied at once), then UpdateFile, the image fetched
// and checked against u.SHA256.
func multipartImage(ctx context.Context, u drivers.FirmwareUpdate) (*pushFile, error) {
	f, err := os.CreateTemp("", "slipway-push-*")
	if err != nil {
		return nil, err
	}
	pf := &pushFile{File: f}
	fail := func(err error) (*pushFile, error) { f.Close(); os.Remove(f.Name()); return nil, err }
	mw := multipart.NewWriter(f)
	pf.contentType = mw.FormDataContentType()
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="UpdateParameters"`)
	h.Set("Content-Type", "application/json")
	pw, err := mw.CreatePart(h)
	if err != nil {
		return fail(err)
	}
	params := map[string]any{"Targets": inventoryURIs(u.Targets), "@Redfish.OperationApplyTime": "Immediate"}
	if err := json.NewEncoder(pw).Encode(params); err != nil {
		return fail(err)
	}
	h = textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="UpdateFile"; filename="image.bin"`)
	h.Set("Content-Type", "application/octet-stream")
	fw, err := mw.CreatePart(h)
	if err != nil {
		return fail(err)
	}
	if err := fetchImage(ctx, fw, u); err != nil {
		return fail(err)
	}
	if err := mw.Close(); err != nil {
		return fail(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fail(err)
	}
	return pf, nil
}

// fetchImage copies the image at u.ImageURL to w (bounded), checking its
// SHA-256 when u names one.
func fetchImage(ctx context.Context, w io.Writer, u drivers.FirmwareUpdate) error {
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.ImageURL, nil)
	if err != nil {
		return drivers.Errorf(drivers.Permanent, "the image URL: %v", err)
	}
	where := hideURLParts(u.ImageURL)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return drivers.Errorf(drivers.Transient, "fetching the image %s to push it: %s", where, hideURLParts(drivers.PeerText(err.Error())))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return drivers.Errorf(drivers.Transient, "fetching the image %s to push it: %s", where, resp.Status)
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, sum), io.LimitReader(resp.Body, maxPushImage+1))
	switch got := hex.EncodeToString(sum.Sum(nil)); {
	case err != nil:
		return drivers.Errorf(drivers.Transient, "fetching the image %s to push it: %v", where, err)
	case n > maxPushImage:
		return drivers.Errorf(drivers.Permanent, "the image %s is larger than %d bytes", where, int64(maxPushImage))
	case u.SHA256 != "" && !strings.EqualFold(got, u.SHA256):
		return drivers.Errorf(drivers.Permanent, "the image %s has SHA-256 %s, not %s: not pushed", where, got, u.SHA256)
	}
	return nil
}

func inventoryURIs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = serviceRoot + "/UpdateService/FirmwareInventory/" + url.PathEscape(id)
	}
	return out
}
