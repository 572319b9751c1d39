package maas

import (
	"net/http"
	"testing"

	gomaasapi "github.com/juju/gomaasapi/v2"
)

// BenchmarkOAuthSign: signing one request, this package's signer against
// gomaasapi's.
func BenchmarkOAuthSign(b *testing.B) {
	const key = "ck:tk:secret"
	req, _ := http.NewRequest(http.MethodGet, "http://maas.invalid/", nil)
	b.Run("slipway", func(b *testing.B) {
		s, err := newOAuthSigner(key)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			s.sign(req)
		}
	})
	b.Run("gomaasapi", func(b *testing.B) {
		c, err := gomaasapi.NewAuthenticatedClient("http://maas.invalid/MAAS/api/2.0/", key)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Signer.OAuthSign(req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
