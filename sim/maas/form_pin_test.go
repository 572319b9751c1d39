package maas

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestParseFormLargeBodyKeepsNoSubstring: the values of a large form body
// are copies, not substrings of the body, so a short value a machine keeps
// (a deploy's agent_name, hwe_kernel) does not hold its user data in the
// heap. Two values cut from one body lie at their distance in it; copies
// do not. A small body keeps its substrings (nothing to pin).
func TestParseFormLargeBodyKeepsNoSubstring(t *testing.T) {
	a, b := strings.Repeat("a", 200), strings.Repeat("b", 200) // copies of 200 bytes lie 208 apart (their size class)
	distance := func(userData int) uintptr {
		body := url.Values{"agent_name": {a}, "hwe_kernel": {b}, "user_data": {strings.Repeat("u", userData)}}.Encode()
		r := httptest.NewRequest(http.MethodPost, "/MAAS/api/2.0/machines/x/?op=deploy", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		f, err := parseForm(r, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		return uintptr(unsafe.Pointer(unsafe.StringData(f.get("hwe_kernel")))) - uintptr(unsafe.Pointer(unsafe.StringData(f.get("agent_name"))))
	}
	const inBody = uintptr(200 + len("&hwe_kernel="))
	if d := distance(10); d != inBody {
		t.Fatalf("small body: the values are %d bytes apart, want %d (substrings of the body)", d, inBody)
	}
	if d := distance(pinnedBodyBytes); d == inBody {
		t.Fatalf("large body: the values are %d bytes apart, as in the body: they pin it", d)
	}
}

// TestParseFormReadsTheBodyOnce: a form body of a known length is read
// into one buffer of that length. net/http's ParseForm grew its buffer
// from 512 bytes (five buffers for a deploy's 10 KB, 31 KB) and copied
// the values into r.Form besides.
func TestParseFormReadsTheBodyOnce(t *testing.T) {
	body := url.Values{"agent_name": {"slipway"}, "user_data": {strings.Repeat("u", 10<<10)}}.Encode()
	parse := func() {
		r := httptest.NewRequest(http.MethodPost, "/MAAS/api/2.0/machines/x/?op=deploy", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if _, err := parseForm(r, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	parse()
	const runs = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		parse()
	}
	runtime.ReadMemStats(&after)
	perParse := (after.TotalAlloc - before.TotalAlloc) / runs
	// The body read, its string and the user data's copy (a large body's
	// values are unpinned) are 3 x 10 KB; the request and the maps a few KB.
	if limit := uint64(3*len(body) + 8<<10); perParse > limit {
		t.Fatalf("a %d-byte form allocated %d bytes, want at most %d", len(body), perParse, limit)
	}
}
