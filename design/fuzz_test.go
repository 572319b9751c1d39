package design

import (
	"strings"
	"testing"
)

// FuzzParseSize: no input panics; accepted sizes are positive and
// consistent (a percentage has no bytes, a fixed size no percentage).
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"10g", "512mi", "1t", "25%", ">20g", "0.5b", "", ">", "1e400g", "100%", "-1g"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sz, err := ParseSize(s)
		if err != nil {
			return
		}
		if (sz.Percent > 0) == (sz.Bytes > 0) {
			t.Fatalf("%q: %+v: exactly one of bytes and percent must be set", s, sz)
		}
		if sz.Bytes < 0 || sz.Percent < 0 || sz.Percent > 100 {
			t.Fatalf("%q: %+v out of range", s, sz)
		}
	})
}

// FuzzParseSecretRef: no input panics, and no error repeats its input.
func FuzzParseSecretRef(f *testing.F) {
	for _, s := range []string{"secret:bmc-admin", "env:BMC_PASS", "file:/etc/x", "hunter2", "secret:", "vault:x", "env:1X"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ref, err := ParseSecretRef(s)
		if err != nil {
			if len(s) >= 4 && strings.Contains(err.Error(), s) && !strings.Contains(secretMessages, s) {
				t.Fatalf("error %q repeats the input", err)
			}
			return
		}
		if ref.String() != s {
			t.Fatalf("%q parsed to %q", s, ref.String())
		}
	})
}

// secretMessages is the text of ParseSecretRef's errors: an input that is
// part of that text is found in the message without having leaked.
const secretMessages = "not a secret reference; write secret:NAME, env:VAR or file:/path, never the secret itself " +
	"secret:NAME needs a NAME of letters, digits, '.', '_' or '-' env:VAR needs an environment variable name " +
	"file:/path needs an absolute path not a secret reference (unknown scheme); write secret:NAME, env:VAR or file:/path, never the secret itself"

// FuzzImageName: no platform.image or image fields panic ImageOf, the
// image rule's checks or ProvisionerName; a name is an image's as written.
func FuzzImageName(f *testing.F) {
	for _, s := range []string{"jammy", "ubuntu/noble", "gpu-golden", "centos/centos8", "/", "a/b/c", "", "custom/x", "\x00"} {
		f.Add(s, "amd64/generic", "ubuntu/jammy", "GPU golden")
	}
	f.Fuzz(func(t *testing.T, image, arch, base, title string) {
		im := &Image{Metadata: ObjectMeta{Name: image}, Spec: ImageSpec{Architecture: arch,
			Custom: &CustomImage{BaseImage: base, Title: title, Format: "ddraw", Size: 1, Source: FirmwareImage{File: image, SHA256: base}}}}
		d := &Design{Images: map[string]*Image{"gpu-golden": im}}
		n := &Node{}
		n.Spec.Platform.Image = image
		got := d.ImageOf(n)
		switch {
		case image == "" && got != nil:
			t.Fatalf("ImageOf(%q) = %+v, want nil", image, got)
		case image != "" && (got == nil || (image != "gpu-golden" && got.Metadata.Name != image)):
			t.Fatalf("ImageOf(%q) = %+v", image, got)
		case got != nil && got.ProvisionerName() == "":
			t.Fatalf("ImageOf(%q): empty provisioner name", image)
		}
		r := newReport()
		v := &validator{r: r, d: d}
		v.image(im)
		v.platformImage(KindNode, "n", &n.Spec.Platform, &HardwareProfileSpec{Architecture: "arm64"}, "hw")
		_ = isUbuntuSeries(image)
		_ = titleProblem(title)
	})
}
