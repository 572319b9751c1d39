package redfish

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
)

// bodyLimit bounds a request's body: an image pushed to the multipart
// URI may be as large as the BMC takes, the rest maxBody.
func (s *Service) bodyLimit(r *http.Request) int64 {
	if r.Method == http.MethodPost && r.URL.Path == multipartPath {
		return s.lab.o.MaxImageBytes + maxBody
	}
	return maxBody
}

// maxPushParts bounds the parts of a pushed update.
const maxPushParts = 8

// multipartPush takes an image pushed to MultipartHttpPushUri
// (multipart/form-data: UpdateParameters, JSON with Targets; UpdateFile,
// the image): 202 and a task, which installs it as SimpleUpdate's does.
func (s *Service) multipartPush(w http.ResponseWriter, r *http.Request) {
	params, image, msg := readPush(r)
	if msg != "" {
		writeError(w, http.StatusBadRequest, "Base.1.8.ActionParameterMissing", msg)
		return
	}
	run := s.startUpdate(w, params.Targets, "pushed to "+multipartPath, multipartPath)
	if run != nil {
		var err error
		if int64(len(image)) > s.lab.o.MaxImageBytes {
			err = fmt.Errorf("the image pushed is larger than the %d bytes this BMC takes", s.lab.o.MaxImageBytes)
		}
		s.install(run, image, err)
		s.answerTask(w, run.t)
	}
}

// pushParams is a pushed update's UpdateParameters.
type pushParams struct {
	Targets            []string
	OperationApplyTime string `json:"@Redfish.OperationApplyTime"`
}

// readPush reads a multipart push: its parameters and image, or why it
// is refused.
func readPush(r *http.Request) (pushParams, []byte, string) {
	var p pushParams
	mt, mp, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || mp["boundary"] == "" {
		return p, nil, "The push must be multipart/form-data"
	}
	mr := multipart.NewReader(r.Body, mp["boundary"])
	var image []byte
	gotParams := false
	for range maxPushParts {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return p, nil, "The multipart body does not parse (or is larger than this BMC takes)"
		}
		b, err := io.ReadAll(part)
		if err != nil {
			return p, nil, "The multipart body is larger than this BMC takes"
		}
		switch part.FormName() {
		case "UpdateParameters":
			if json.Unmarshal(b, &p) != nil {
				return p, nil, "UpdateParameters is not JSON"
			}
			gotParams = true
		case "UpdateFile":
			image = b
		}
	}
	switch {
	case !gotParams:
		return p, nil, "The push has no UpdateParameters part"
	case image == nil:
		return p, nil, "The push has no UpdateFile part"
	case p.OperationApplyTime != "" && p.OperationApplyTime != "Immediate" && p.OperationApplyTime != "OnReset":
		return p, nil, fmt.Sprintf("@Redfish.OperationApplyTime %q is not Immediate or OnReset", bounded(p.OperationApplyTime))
	}
	return p, image, ""
}

// OnlyMultipartPush makes the UpdateService offer no SimpleUpdate: images
// are pushed to its MultipartHttpPushUri (as some BMCs take them).
func (s *Service) OnlyMultipartPush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lab.faults.pushOnly = true
}
