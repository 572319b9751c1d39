package server

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/api/client"
)

// TestServeInProcess: a CLI command's own API over a state file answers
// on its private socket, which CheckSocket trusts; Close removes the
// socket's directory. Files that are no socket are not dialled.
func TestServeInProcess(t *testing.T) {
	dir := t.TempDir()
	c := Config{State: filepath.Join(dir, "state.db")}
	p, err := ServeInProcess(t.Context(), c, Options{Log: zerolog.Nop(), Stderr: io.Discard}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := CheckSocket(p.Socket); !ok || err != nil {
		t.Errorf("CheckSocket(%s): %v %v, want a socket to trust", p.Socket, ok, err)
	}
	cl, err := client.New("http://local", "", client.WithUnixSocket(p.Socket))
	if err != nil {
		t.Fatal(err)
	}
	if revs, err := cl.Designs(t.Context()); err != nil || len(revs) != 0 {
		t.Errorf("designs of a new state through the in-process API: %v %v", revs, err)
	}
	p.Close()
	if _, err := os.Stat(filepath.Dir(p.Socket)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Close, the socket's directory: %v", err)
	}
	if ok, err := CheckSocket(p.Socket); ok || err != nil {
		t.Errorf("CheckSocket after Close: %v %v", ok, err)
	}
	if ok, err := CheckSocket(c.State); ok || err != nil { // a regular file (the state)
		t.Errorf("CheckSocket(a regular file): %v %v", ok, err)
	}
	if ServeAnswers(c.State) {
		t.Error("ServeAnswers: no serve runs, yet one answers")
	}
}
