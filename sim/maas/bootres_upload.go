package maas

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// The chunked upload: PUT boot-resources/{id}/upload/{file_id}/ appends
// one chunk of Content-Length bytes at what the region holds
// (BootResourceFileUploadHandler.update in src/maasserver/api/
// boot_resources.py). MAAS answers, in this order: 404 for a resource or
// file it does not have, 400 "Missing data." (no Content-Length),
// "Content-Length doesn't equal size of received data.", 403 for a
// resource that is not an upload, 400 "Cannot upload to a complete file.",
// "Too much data received." (the chunk goes past the file's size; nothing
// of it is kept) and, at the last byte, "Saved content does not match
// given SHA256 value." (the file stays incomplete at what it held before
// the chunk). The lab streams the chunk to disk without holding the
// region's lock (one request per file at a time), so it checks the type,
// completeness and size before it reads the body: a request wrong in two
// ways at once may get another of the answers than MAAS's.

// bootUpload is the upload handler.
func (s *Server) bootUpload(req *request) (any, *apiError) {
	f, aerr := s.uploadTarget(req)
	if aerr != nil {
		return nil, aerr
	}
	size := req.r.ContentLength
	if size <= 0 {
		return nil, errorf(http.StatusBadRequest, "Missing data.")
	}
	if aerr := s.stall(req, f, size); aerr != nil {
		return nil, aerr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	at, aerr := s.uploadStart(req, f, size)
	if aerr != nil {
		return nil, aerr
	}
	if at.tooMuch {
		if size > at.size { // never read more than a file's size (the lab's bound)
			return nil, errorf(http.StatusBadRequest, msgTooMuch)
		}
		if n, _ := io.Copy(io.Discard, io.LimitReader(req.r.Body, size+1)); n != size {
			return nil, errorf(http.StatusBadRequest, "Content-Length doesn't equal size of received data.")
		}
		return nil, errorf(http.StatusBadRequest, msgTooMuch)
	}
	if aerr := at.write(req.r.Body, size); aerr != nil {
		if aerr.msg == msgChecksum {
			s.mu.Lock()
			s.img.stats.ChecksumRefused++
			s.mu.Unlock()
		}
		return nil, aerr
	}
	return s.uploadCommit(req, f, at, size)
}

// stall carries out the injected UploadStall (faults.go): the chunk is
// read and dropped, and the answer waits (until For, the client's leaving
// or the server's Close). The body is read first because only then does
// net/http notice a client that goes away. It comes before MAAS's checks
// of the request, and counts as a write in flight while it waits (the
// lab's listing caches are off meanwhile).
func (s *Server) stall(req *request, f *bootFile, size int64) *apiError {
	s.mu.Lock()
	held := f.Held
	s.mu.Unlock()
	d := s.faults.stallUpload(held)
	if d <= 0 {
		return nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(req.r.Body, size))
	s.faults.held.Add(1)
	defer s.faults.held.Add(-1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-req.r.Context().Done():
	case <-s.stopped:
	}
	return errorf(http.StatusServiceUnavailable, "Service temporarily unavailable (injected upload stall)")
}

// uploadAt is where a chunk goes: the file's path, what it held, a copy
// of its hash state.
type uploadAt struct {
	path    string
	held    int64
	size    int64 // the file's
	sha     string
	hash    hash.Hash
	tooMuch bool
}

// uploadTarget finds the file, or answers 404 as MAAS does first.
func (s *Server) uploadTarget(req *request) (*bootFile, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bootResource(req.params["id"]) == nil {
		return nil, notFound("BootResource")
	}
	f := s.fileOf(req.params["file_id"])
	if f == nil {
		return nil, notFound("BootResourceFile")
	}
	return f, nil
}

// uploadStart checks the resource and the file (f.mu held) and returns
// where the chunk goes.
func (s *Server) uploadStart(req *request, f *bootFile, size int64) (uploadAt, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bootResource(req.params["id"])
	if b == nil || s.fileOf(req.params["file_id"]) != f {
		return uploadAt{}, notFound("BootResource")
	}
	if b.Type != "Uploaded" {
		return uploadAt{}, errorf(http.StatusForbidden, "Cannot upload to a resource of type: %d.", rtypeOf(b.Type))
	}
	f.rowed = true // MAAS's get_or_create of the receiving region's sync row
	if f.holdsAll() {
		return uploadAt{}, errorf(http.StatusBadRequest, "Cannot upload to a complete file.")
	}
	if f.hash == nil {
		if err := s.newUploadFile(f); err != nil {
			return uploadAt{}, errorf(http.StatusInternalServerError, "Could not make the image file: %v", err)
		}
	}
	at := uploadAt{path: f.path, held: f.Held, size: f.Size, sha: f.SHA256, tooMuch: f.Held+size > f.Size}
	h, err := cloneHash(f.hash)
	if err != nil {
		return uploadAt{}, errorf(http.StatusInternalServerError, "Could not resume the checksum: %v", err)
	}
	at.hash = h
	return at, nil
}

// write streams the chunk to the file at what it held, hashing it; a
// short body or a wrong checksum at the last byte leaves the file as it
// was.
func (at *uploadAt) write(body io.Reader, size int64) *apiError {
	fh, err := os.OpenFile(at.path, os.O_WRONLY, 0)
	if err != nil {
		return errorf(http.StatusInternalServerError, "Could not open the image file: %v", err)
	}
	buf := copyBuffers.Get().(*[]byte)
	n, err := io.CopyBuffer(io.MultiWriter(io.NewOffsetWriter(fh, at.held), at.hash), io.LimitReader(body, size+1), *buf)
	copyBuffers.Put(buf)
	cerr := fh.Close()
	undo := func() { _ = os.Truncate(at.path, at.held) }
	switch {
	case n != size:
		undo()
		return errorf(http.StatusBadRequest, "Content-Length doesn't equal size of received data.")
	case err != nil || cerr != nil:
		undo()
		return errorf(http.StatusInternalServerError, "Could not store the chunk: %v", errors.Join(err, cerr))
	case at.held+size == at.size && hex.EncodeToString(at.hash.Sum(nil)) != at.sha:
		undo()
		return errorf(http.StatusBadRequest, msgChecksum)
	}
	return nil
}

// uploadCommit records the chunk (f.mu held); the last one completes the
// file.
func (s *Server) uploadCommit(req *request, f *bootFile, at uploadAt, size int64) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fileOf(req.params["file_id"]) != f { // deleted meanwhile
		_ = os.Remove(at.path)
		return nil, notFound("BootResourceFile")
	}
	f.Held += size
	f.hash = at.hash
	s.img.stats.Chunks++
	s.img.stats.BytesReceived += size
	if f.holdsAll() {
		done := strings.TrimSuffix(f.path, ".incomplete")
		if err := os.Rename(f.path, done); err == nil {
			f.path = done
		}
		f.hash = nil
		s.receivedWhole(f) // bootres_regions.go
	}
	return rawBody{contentType: "text/plain; charset=utf-8", body: []byte("OK")}, nil
}

// copyBuffers are the uploads' copy buffers: 1 MiB, so a 4 MiB chunk is
// four writes to disk, not 128.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// cloneHash copies a SHA-256 state.
func cloneHash(h hash.Hash) (hash.Hash, error) {
	state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		return nil, err
	}
	c := sha256.New()
	if err := c.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		return nil, err
	}
	return c, nil
}
