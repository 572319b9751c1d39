package driverstest

import (
	"context"
	"testing"

	"github.com/slipway-dev/slipway/drivers"
)

// MediaDriver is an OOB driver that attaches ISO images as a virtual CD.
type MediaDriver interface {
	drivers.OOB
	drivers.OOBVirtualMedia
}

// MediaLab is a simulated BMC for the virtual-media suite: the suite reads
// each outcome from it, never from the driver alone.
type MediaLab struct {
	Driver MediaDriver
	BMC    drivers.BMC
	// Media is the BMC's virtual CD as it keeps it: the image, and
	// whether it is inserted.
	Media func() (image string, inserted bool)
	// NextBootCD reports whether the machine's next boot is from the
	// virtual CD, once.
	NextBootCD func() bool
}

// isoSecret is a token in an image URL's query (a presigned URL's), and
// isoUser its user info: neither may appear in a message.
const (
	isoSecret = "sig-7e1d0c9b4a"
	isoUser   = "vmedia-user:pw-51f0a2c7"
)

// RunOOBVirtualMedia runs the virtual-media conformance suite: insert,
// replace and eject read back from the BMC, repeats Done, a one-time boot
// from the CD, an image URL's credentials kept out of messages, and a
// wrong password refused. open is called once per subtest with a fresh
// lab.
func RunOOBVirtualMedia(t *testing.T, open func(t *testing.T) MediaLab) {
	t.Helper()
	for name, f := range map[string]func(*testing.T, MediaLab){
		"InsertReplaceEject": mediaInsertReplaceEject,
		"BootOnceFromCD":     mediaBootOnce,
		"CredentialsHidden":  mediaCredentialsHidden,
		"WrongPassword":      mediaWrongPassword,
	} {
		t.Run(name, func(t *testing.T) { f(t, open(t)) })
	}
}

func insert(l MediaLab, url string) func(context.Context) (drivers.Result, error) {
	return func(ctx context.Context) (drivers.Result, error) { return l.Driver.InsertMedia(ctx, l.BMC, url) }
}

func eject(l MediaLab) func(context.Context) (drivers.Result, error) {
	return func(ctx context.Context) (drivers.Result, error) { return l.Driver.EjectMedia(ctx, l.BMC) }
}

func wantMedia(t *testing.T, l MediaLab, what, image string, inserted bool) {
	t.Helper()
	if img, in := l.Media(); in != inserted || (inserted && img != image) {
		t.Fatalf("%s: the BMC holds %q (inserted %v), want %q (inserted %v)", what, img, in, image, inserted)
	}
}

func mediaInsertReplaceEject(t *testing.T, l MediaLab) {
	c := newChecker(realT{t}, l.BMC.Password.Reveal())
	const a, b = "http://10.0.0.1/a.iso", "http://10.0.0.1/b.iso"
	c.mustPoll("InsertMedia(a)", insert(l, a))
	wantMedia(t, l, "after InsertMedia(a)", a, true)
	c.done("InsertMedia(a) again", insert(l, a))
	c.mustPoll("InsertMedia(b) over a", insert(l, b))
	wantMedia(t, l, "after InsertMedia(b)", b, true)
	c.mustPoll("EjectMedia", eject(l))
	wantMedia(t, l, "after EjectMedia", "", false)
	c.done("EjectMedia again", eject(l))
}

func mediaBootOnce(t *testing.T, l MediaLab) {
	c := newChecker(realT{t}, l.BMC.Password.Reveal())
	c.mustPoll("InsertMedia", insert(l, "http://10.0.0.1/boot.iso"))
	c.mustPoll("SetBootDevice(cd)", func(ctx context.Context) (drivers.Result, error) {
		return l.Driver.SetBootDevice(ctx, l.BMC, drivers.BootDevice{Device: drivers.BootCD, EFI: true})
	})
	if !l.NextBootCD() {
		t.Fatal("after SetBootDevice(cd) the machine's next boot is not the virtual CD, once")
	}
}

func mediaCredentialsHidden(t *testing.T, l MediaLab) {
	c := newChecker(realT{t}, l.BMC.Password.Reveal(), isoSecret, "pw-51f0a2c7")
	url := "https://" + isoUser + "@images.example/boot.iso?sig=" + isoSecret
	c.mustPoll("InsertMedia(a URL with credentials)", insert(l, url))
	wantMedia(t, l, "after InsertMedia", url, true) // the BMC needs them
	c.mustPoll("EjectMedia", eject(l))
}

func mediaWrongPassword(t *testing.T, l MediaLab) {
	bad := l.BMC
	bad.Password = drivers.NewSecret(WrongPassword)
	c := newChecker(realT{t}, l.BMC.Password.Reveal(), WrongPassword)
	ctx, cancel := ctxFor()
	defer cancel()
	r, err := l.Driver.InsertMedia(ctx, bad, "http://10.0.0.1/a.iso")
	c.fails("InsertMedia with a wrong password", r, err)
	r, err = l.Driver.EjectMedia(ctx, bad)
	c.fails("EjectMedia with a wrong password", r, err)
	wantMedia(t, l, "after calls with a wrong password", "", false)
}
