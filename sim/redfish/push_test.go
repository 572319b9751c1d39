package redfish

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/stmcginnis/gofish"
)

// push posts a multipart update: its status, Location and body.
func push(t *testing.T, c *gofish.APIClient, params map[string]any, image []byte) (int, string, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if params != nil {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="UpdateParameters"`)
		h.Set("Content-Type", "application/json")
		pw, _ := mw.CreatePart(h)
		_ = json.NewEncoder(pw).Encode(params)
	}
	if image != nil {
		fw, _ := mw.CreateFormFile("UpdateFile", "image.bin")
		_, _ = fw.Write(image)
	}
	_ = mw.Close()
	resp, err := c.RunRawRequestWithHeaders(http.MethodPost, multipartPath, bytes.NewReader(buf.Bytes()), mw.FormDataContentType(), nil)
	if err != nil {
		return 400, "", err.Error()
	}
	defer resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location"), ""
}

// TestMultipartPush: a BMC that takes pushed images only lists no
// SimpleUpdate and refuses it; a pushed image runs a task like
// SimpleUpdate's, and a push that is not one is refused with the reason.
func TestMultipartPush(t *testing.T) {
	s, _, ca := start(t, Options{BIOSVersion: "2.18.0", UpdateDuration: 100 * time.Millisecond})
	s.OnlyMultipartPush()
	c, err := connect(t, s, ca, pass)
	if err != nil {
		t.Fatal(err)
	}
	us, err := c.Service.UpdateService()
	if err != nil || us.MultipartHTTPPushURI != multipartPath {
		t.Fatalf("update service: %+v %v", us, err)
	}
	if code, _, _ := post(t, c, simpleUpdatePath, map[string]any{"ImageURI": "http://127.0.0.1:1/x"}); code != http.StatusNotFound {
		t.Fatalf("SimpleUpdate on a push-only BMC: %d", code)
	}
	code, loc, _ := push(t, c, map[string]any{"Targets": []string{inventoryPath + "/BIOS"}, "@Redfish.OperationApplyTime": "Immediate"}, LabImage("bios", "2.19.1", 200<<10))
	if code != http.StatusAccepted {
		t.Fatalf("push: %d", code)
	}
	if doc := followTask(t, c, loc); doc["TaskState"] != taskCompleted || s.PendingFirmware()["BIOS"] != "2.19.1" {
		t.Fatalf("task %v, pending %v", doc, s.PendingFirmware())
	}
	code, loc, _ = push(t, c, map[string]any{}, []byte("MZ junk"))
	if doc := followTask(t, c, loc); code != http.StatusAccepted || doc["TaskState"] != taskException {
		t.Fatalf("junk pushed: %d %v", code, doc)
	}
	for _, tc := range []struct {
		params map[string]any
		image  []byte
		want   string
	}{
		{nil, LabImage("bios", "1", 100), "no UpdateParameters"},
		{map[string]any{}, nil, "no UpdateFile"},
		{map[string]any{"@Redfish.OperationApplyTime": "AtMaintenanceWindowStart"}, LabImage("bios", "1", 100), "not Immediate or OnReset"},
	} {
		if code, _, body := push(t, c, tc.params, tc.image); code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Fatalf("%v: %d %s", tc.params, code, body)
		}
	}
}
