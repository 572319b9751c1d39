package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/drivers"
	maasdrv "github.com/slipway-dev/slipway/drivers/server/maas"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/maas"
)

// slipway verifies the file into the engine's image store (timed apart)
// then runs the engine's sync_images task of the image into the lab's
// region, timed from its submission until the task ended (after MAAS's
// answer to the last chunk).
func (r *ImagesResult) slipway(ctx context.Context, env *labrun.Env) error {
	start := time.Now()
	if _, err := env.Images.ImagePath(ctx, benchImageName, design.FirmwareImage{File: benchImageFile, SHA256: r.SHA256}, r.Bytes); err != nil {
		return fmt.Errorf("verify the bench image: %w", err)
	}
	r.VerifySeconds = round3(time.Since(start).Seconds())
	e, err := env.Engine(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	region := env.Lab.Regions()[0].MAAS
	settle()
	before := region.ImageStats()
	start = time.Now()
	task, err := e.Submit(ctx, record.Request{Action: record.ActionSyncImages, Revision: env.Revision, Requester: "bench",
		Options: &record.TaskOptions{Image: benchImageName}})
	if err != nil {
		return err
	}
	if task, err = e.Wait(ctx, task.ID); err != nil {
		return err
	}
	took := time.Since(start)
	if task.Status != record.TaskSucceeded {
		return fmt.Errorf("the engine's sync_images task %s: %s", task.Status, task.Message)
	}
	after := region.ImageStats()
	r.Slipway = r.outcome(region, "slipway sync_images (engine runner, MAAS driver, 4 MiB chunks)", benchImageName,
		after.Chunks-before.Chunks, took, after.BytesReceived-before.BytesReceived)
	return nil
}

// outcome reads the resource name from the region's state.
func (r *ImagesResult) outcome(region *maas.Server, way, name string, requests int, took time.Duration, received int64) UploadRun {
	u := UploadRun{Way: way, Requests: requests, Seconds: round3(took.Seconds()), Received: received}
	u.MiBps = round3(float64(r.Bytes) / (1 << 20) / max(took.Seconds(), 1e-6))
	for _, b := range region.BootResources() {
		if b.Type == "Uploaded" && b.Name == name {
			u.Complete, u.SHA256OK = b.Complete, b.SHA256 == r.SHA256 && b.Held == r.Bytes
		}
	}
	return u
}

// curls uploads the same file to the same region with curl: once whole,
// and (unless b.noChunked) once in 4 MiB chunks, one curl each; each to a
// resource of its own created through the MAAS API (the MAAS driver's
// create, no content), its upload_uri read from the API.
func (r *ImagesResult) curls(ctx context.Context, env *labrun.Env, dir string, b imagesBench) error {
	info := env.Lab.Info()
	srv, err := maasdrv.New(drivers.Config{Settings: map[string]string{maasdrv.SettingURL: info.MAASURL},
		Secrets: map[string]drivers.Secret{maasdrv.SecretAPIKey: drivers.NewSecret(info.APIKey)}})
	if err != nil {
		return err
	}
	creds, err := maas.ParseAPIKey(info.APIKey)
	if err != nil {
		return err
	}
	c := curlClient{bin: b.curl, creds: creds, hdr: filepath.Join(dir, "curl-headers"), base: strings.TrimSuffix(info.MAASURL, "/MAAS"),
		file: filepath.Join(env.ImageSourceDir(), benchImageFile)}
	region := env.Lab.Regions()[0].MAAS
	ways := []struct {
		name, way string
		chunk     int64
	}{{"bench-curl", "curl -T FILE -X PUT (one request)", 0}, {"bench-curl-chunked", "curl per 4 MiB chunk", drivers.ImageChunkSize}}
	for i, w := range ways {
		if i == 1 && b.noChunked {
			break
		}
		uri, err := c.create(ctx, srv.(drivers.ServerImages), w.name, r)
		if err != nil {
			return err
		}
		settle()
		before := region.ImageStats()
		start := time.Now()
		n, err := c.upload(ctx, uri, r.Bytes, w.chunk)
		if err != nil {
			return fmt.Errorf("%s: %w", w.way, err)
		}
		u := r.outcome(region, w.way, w.name, n, time.Since(start), region.ImageStats().BytesReceived-before.BytesReceived)
		if i == 0 {
			r.Curl = u
		} else {
			r.CurlChunked = &u
		}
	}
	return nil
}

// ratios are Slipway's throughput over curl's.
func (r *ImagesResult) ratios() {
	if r.Curl.MiBps > 0 {
		r.Ratio = round3(r.Slipway.MiBps / r.Curl.MiBps)
		cold := float64(r.Bytes) / (1 << 20) / (r.Slipway.Seconds + r.VerifySeconds)
		r.RatioCold = round3(cold / r.Curl.MiBps)
	}
	if r.CurlChunked != nil && r.CurlChunked.MiBps > 0 {
		r.RatioChunked = round3(r.Slipway.MiBps / r.CurlChunked.MiBps)
	}
}

// check fails a run the region does not confirm: every upload complete
// with the file's SHA-256, each byte received once.
func (r *ImagesResult) check() error {
	for _, u := range []*UploadRun{&r.Slipway, &r.Curl, r.CurlChunked} {
		if u != nil && (!u.Complete || !u.SHA256OK || u.Received != r.Bytes) {
			return fmt.Errorf("%s: the region holds it complete %v, SHA-256 and size as the file's %v, %d bytes received of %d",
				u.Way, u.Complete, u.SHA256OK, u.Received, r.Bytes)
		}
	}
	return nil
}

// settle writes the dirty pages out (sync(2)) before an upload is timed:
// each way writes 512 MiB into the region's directory, and the next one
// measured while the kernel flushes the previous one's would pay for it.
func settle() { syscall.Sync() }

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// curlClient uploads with the curl binary, the OAuth header in a 0600
// file (-H @file), never in curl's arguments.
type curlClient struct {
	bin, hdr, base, file string
	creds                maas.Credentials
}

// create makes an empty uploaded resource through the API and returns
// its file's upload_uri (absolute), as the API gives it.
func (c curlClient) create(ctx context.Context, srv drivers.ServerImages, name string, r *ImagesResult) (string, error) {
	up, err := srv.StartImageUpload(ctx, drivers.ImageRef{Name: "custom/" + name, Architecture: benchImageArch, Format: "ddraw",
		SHA256: r.SHA256, Size: r.Bytes, Title: name, BaseImage: "ubuntu/jammy"})
	if err != nil {
		return "", fmt.Errorf("create %s through the MAAS API: %w", name, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+maas.APIPrefix+"/boot-resources/"+up.ResourceID+"/", nil)
	if err != nil {
		return "", err
	}
	c.creds.Sign(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var res struct {
		Sets map[string]struct {
			Files map[string]struct {
				UploadURI string `json:"upload_uri"`
			} `json:"files"`
		} `json:"sets"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&res); err != nil {
		return "", fmt.Errorf("read boot-resources/%s/: %w", up.ResourceID, err)
	}
	for _, s := range res.Sets {
		for _, f := range s.Files {
			if f.UploadURI != "" {
				return c.base + f.UploadURI, nil
			}
		}
	}
	return "", fmt.Errorf("boot-resources/%s/ gives no upload_uri", up.ResourceID)
}

// upload PUTs the file to uri: whole (chunk 0: curl -T FILE) or chunk
// bytes at a time (one curl each, the chunk on its stdin); it returns
// the requests made.
func (c curlClient) upload(ctx context.Context, uri string, size, chunk int64) (int, error) {
	if chunk <= 0 {
		// curl -T appends the file's name to a URL whose path ends in
		// "/" (as upload_uri does): the request target is given apart.
		u, err := url.Parse(uri)
		if err != nil {
			return 0, err
		}
		return 1, c.put(ctx, u.Scheme+"://"+u.Host+"/upload", nil, "-T", c.file, "--request-target", u.RequestURI())
	}
	f, err := os.Open(c.file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	for off := int64(0); off < size; off += chunk {
		n++
		if err := c.put(ctx, uri, io.NewSectionReader(f, off, min(chunk, size-off)), "--data-binary", "@-"); err != nil {
			return n, fmt.Errorf("chunk at %d: %w", off, err)
		}
	}
	return n, nil
}

// put runs one curl PUT with a freshly signed header file.
func (c curlClient) put(ctx context.Context, uri string, stdin io.Reader, body ...string) error {
	req, _ := http.NewRequest(http.MethodPut, uri, nil)
	c.creds.Sign(req)
	hdr := "Authorization: " + req.Header.Get("Authorization") + "\nContent-Type: application/octet-stream\nExpect:\n"
	if err := os.WriteFile(c.hdr, []byte(hdr), 0o600); err != nil {
		return err
	}
	args := append([]string{"-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "-H", "@" + c.hdr}, body...)
	cmd := exec.CommandContext(ctx, c.bin, append(args, uri)...)
	cmd.Stdin = stdin
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("curl: %w", err)
	}
	if code := strings.TrimSpace(string(out)); code != "200" {
		return fmt.Errorf("curl: the region answered %s to PUT %s", code, uri)
	}
	return nil
}
