package maas

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestReadsBesideWrites: machine reads, polls and details answered
// under the read lock (shared_reads.go) while each machine's owner data
// is written over and over, with a tag on an interface and the storage
// layout in between (so that reads render interfaces and disks beside
// each other): every read answers 200, every machine's
// owner data a reader sees never goes back (a read sees every write
// that ended before it began), the details are the BSON document, and
// every answer checks against a fresh rendering (TestMain's
// verifyListingCache). Run it with -race: the reads beside each other
// must change nothing.
func TestReadsBesideWrites(t *testing.T) {
	l := newSimLab(t, nil)
	ids := []string{l.ready(1, "a"), l.ready(2, "b"), l.ready(3, "c")}
	nics := map[string]string{}
	for _, id := range ids {
		var ifs []map[string]any
		l.must(http.StatusOK, "GET", "/nodes/"+id+"/interfaces/", nil, &ifs)
		nics[id] = fmt.Sprint(ifs[0]["id"])
	}
	before, sharedBefore := listingCacheStale.Load(), l.s.sharedReads.Load()
	const writes, readers, reads = 40, 3, 60
	send := func(method, pathQuery string, form url.Values) (int, []byte, error) {
		u := l.hs.URL + APIPrefix + pathQuery
		var body io.Reader
		if method == http.MethodGet {
			if len(form) > 0 {
				u += "?" + form.Encode()
			}
		} else {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, u, body)
		if err != nil {
			return 0, nil, err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.Header.Set("Authorization", oauthHeader(labCreds))
		resp, err := l.hs.Client().Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	errs := make(chan error, len(ids)+readers)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() { // one writer per machine: its owner data counts up
			defer wg.Done()
			nic := "/nodes/" + id + "/interfaces/" + nics[id] + "/"
			for k := 1; k <= writes; k++ {
				for _, w := range []struct {
					target string
					form   url.Values
				}{
					{"/machines/" + id + "/?op=set_owner_data", url.Values{"n": {strconv.Itoa(k)}}},
					{nic + "?op=" + []string{"add_tag", "remove_tag"}[k%2], url.Values{"tag": {"t"}}},
					{"/machines/" + id + "/?op=set_storage_layout", url.Values{"storage_layout": {[]string{"flat", "lvm"}[k%2]}}},
				} {
					if code, b, err := send("POST", w.target, w.form); err != nil || code != http.StatusOK {
						errs <- fmt.Errorf("%s n=%d: %d %v %.200s", w.target, k, code, err, b)
						return
					}
				}
			}
		}()
	}
	for r := 0; r < readers; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- readMonotonic(send, ids, reads)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := listingCacheStale.Load() - before; n > 0 {
		t.Errorf("%d stale answers", n)
	}
	if l.s.sharedReads.Load() == sharedBefore {
		t.Error("no read was answered under the read lock")
	}
}

// readMonotonic reads the machines one at a time, by the poll and by
// their details, and fails when a machine's owner data n goes back.
func readMonotonic(send func(string, string, url.Values) (int, []byte, error), ids []string, reads int) error {
	last := map[string]int{}
	see := func(m map[string]any) error {
		id, _ := m["system_id"].(string)
		od, _ := m["owner_data"].(map[string]any)
		n, _ := strconv.Atoi(fmt.Sprint(od["n"]))
		if n < last[id] {
			return fmt.Errorf("machine %s: owner data n=%d after n=%d", id, n, last[id])
		}
		last[id] = n
		return nil
	}
	for k := 0; k < reads; k++ {
		id := ids[k%len(ids)]
		var one map[string]any
		code, b, err := send("GET", "/machines/"+id+"/", nil)
		if err != nil || code != http.StatusOK || json.Unmarshal(b, &one) != nil {
			return fmt.Errorf("read %s: %d %v %.200s", id, code, err, b)
		}
		if err := see(one); err != nil {
			return err
		}
		var polled []map[string]any
		code, b, err = send("GET", "/machines/", url.Values{"id": ids})
		if err != nil || code != http.StatusOK || json.Unmarshal(b, &polled) != nil || len(polled) != len(ids) {
			return fmt.Errorf("poll: %d %v %.200s", code, err, b)
		}
		for _, m := range polled {
			if err := see(m); err != nil {
				return err
			}
		}
		code, b, err = send("GET", "/machines/"+id+"/", url.Values{"op": {"details"}})
		if err != nil || code != http.StatusOK || len(b) == 0 {
			return fmt.Errorf("details %s: %d %v", id, code, err)
		}
	}
	return nil
}
