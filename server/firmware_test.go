package server

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/design"
)

// TestFirmwareServed: firmwareDir and firmwareListen (the --firmware-dir
// and --firmware-listen flags' keys) serve the firmware store: an image
// of the directory, once verified, is fetched at the URL the engine gives
// the BMCs, byte for byte; without either key nothing is served.
func TestFirmwareServed(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	img := []byte("SLIPWAY-LAB-FIRMWARE component=bios version=2.19.1\n" + strings.Repeat("x", 1000))
	if err := os.WriteFile(filepath.Join(dir, "bios.bin"), img, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig("", Flag{Key: "state", Value: filepath.Join(data, "s.db"), Given: true},
		Flag{Key: "firmwareDir", Value: dir, Given: true}, Flag{Key: "firmwareListen", Value: "127.0.0.1:0", Given: true})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Log: zerolog.Nop(), Stderr: io.Discard}
	st, stop, err := o.startFirmware(c)
	if err != nil || st == nil {
		t.Fatalf("startFirmware: %v", err)
	}
	defer stop()
	h := sha256.Sum256(img)
	url, err := st.ImageURL(t.Context(), design.FirmwareImage{File: "bios.bin", SHA256: hex.EncodeToString(h[:])}, "p", "bios")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(got) != string(img) {
		t.Errorf("GET %s: %s, %d bytes, want the image", url, resp.Status, len(got))
	}
	if _, err := os.Stat(filepath.Join(data, "firmware-cache", hex.EncodeToString(h[:]))); err != nil {
		t.Errorf("the verified copy is not kept beside the state: %v", err)
	}
	if st, _, err := o.startFirmware(Config{}); st != nil || err != nil {
		t.Errorf("without firmwareDir or firmwareListen: %v %v, want nothing served", st, err)
	}
}

// TestFirmwareNeedsAReachableURL: the URL the BMCs are given must be one
// they can reach. A listener on every address (the default :8702, or
// :PORT) without firmwareURL gave them http://[::]:8702/firmware/…, which
// no BMC can fetch: the configuration is refused naming firmwareURL. A
// firmwareURL with user information or not http(s) is refused too.
func TestFirmwareNeedsAReachableURL(t *testing.T) {
	state := Flag{Key: "state", Value: filepath.Join(t.TempDir(), "s.db"), Given: true}
	dir := Flag{Key: "firmwareDir", Value: t.TempDir(), Given: true}
	for _, tc := range []struct {
		flags []Flag
		want  string // "" = accepted
	}{
		{[]Flag{dir}, "firmwareURL"},
		{[]Flag{dir, {Key: "firmwareListen", Value: ":0", Given: true}}, "firmwareURL"},
		{[]Flag{dir, {Key: "firmwareListen", Value: "0.0.0.0:0", Given: true}}, "firmwareURL"},
		{[]Flag{dir, {Key: "firmwareListen", Value: "127.0.0.1:0", Given: true}}, ""},
		{[]Flag{dir, {Key: "firmwareURL", Value: "http://10.0.0.5:8702", Given: true}}, ""},
		{[]Flag{dir, {Key: "firmwareURL", Value: "http://u:pw@10.0.0.5:8702", Given: true}}, "firmwareURL"},
		{[]Flag{dir, {Key: "firmwareURL", Value: "ftp://10.0.0.5", Given: true}}, "firmwareURL"},
		{nil, ""},
	} {
		_, err := LoadConfig("", append([]Flag{state}, tc.flags...)...)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.flags, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("the error repeats the URL's password: %v", err)
		}
	}
}
