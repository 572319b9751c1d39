package maas

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMalformedKeyError: a malformed API key's error says what is wrong
// without the key in any form (gomaasapi's own message quotes it) and
// without mangling its words, however short the key.
func TestMalformedKeyError(t *testing.T) {
	for _, key := range []string{"x", "e", "a\"b\\c", "no-colons-in-this-long-key", "one:colon"} {
		_, err := newClient("http://127.0.0.1:5240/MAAS", key, time.Second, 0)
		if err == nil {
			t.Fatalf("%q: no error", key)
		}
		msg := err.Error()
		quoted := strconv.Quote(key)
		if strings.Contains(msg, "[redacted]") || strings.Contains(msg, quoted) || len(key) > 2 && strings.Contains(msg, quoted[1:len(quoted)-1]) {
			t.Errorf("%q: the error shows or cuts out the key: %s", key, msg)
		}
		if !strings.Contains(msg, "maas.apiKey") || !strings.Contains(msg, "consumer:token:secret") || !strings.Contains(msg, "three fields") {
			t.Errorf("%q: the error does not say what is wrong: %s", key, msg)
		}
	}
}
