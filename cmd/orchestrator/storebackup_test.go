package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/slipway-dev/slipway/api"
	"github.com/slipway-dev/slipway/api/client"
	secretstore "github.com/slipway-dev/slipway/secrets/store"
	"github.com/slipway-dev/slipway/server"
	"github.com/slipway-dev/slipway/statestore/bolt"
)

// backupSite is a state directory: a state file holding a secret, and
// its secret and introspection keys.
type backupSite struct {
	dir, state          string
	secretKey, introKey []byte
}

func newBackupSite(t *testing.T) backupSite {
	t.Helper()
	b := backupSite{dir: t.TempDir()}
	b.state = filepath.Join(b.dir, "slipway.db")
	var err error
	if b.secretKey, err = secretstore.LoadOrCreateKey(filepath.Join(b.dir, secretstore.DefaultKeyFile)); err != nil {
		t.Fatal(err)
	}
	if b.introKey, err = secretstore.LoadOrCreateKey(filepath.Join(b.dir, "introspection.key")); err != nil {
		t.Fatal(err)
	}
	st, err := bolt.Open(b.state, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sec, err := secretstore.New(st, b.secretKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := sec.Put(t.Context(), "bmc-admin", "hunter2-the-value"); err != nil {
		t.Fatal(err)
	}
	return b
}

// copyKeys copies b's key files (those named) into dir.
func (b backupSite) copyKeys(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		raw, err := os.ReadFile(filepath.Join(b.dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStoreBackupRestoreCLI: `store backup` writes a 0600 archive with
// the keys' fingerprints (never the keys or a secret) and is audited;
// `store restore` into another directory holding the same keys gives a
// state whose secret decrypts with them.
func TestStoreBackupRestoreCLI(t *testing.T) {
	t.Parallel()
	b := newBackupSite(t)
	file := filepath.Join(t.TempDir(), "backup.tar")
	code, out, errs := cli(t, "store", "backup", "--state", b.state, file)
	if code != 0 {
		t.Fatalf("store backup: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{server.KeyFingerprint(b.secretKey), server.KeyFingerprint(b.introKey)} {
		if !strings.Contains(out, want) {
			t.Errorf("backup output lacks fingerprint %s:\n%s", want, out)
		}
	}
	archive, _ := os.ReadFile(file)
	for _, leak := range []string{base64.StdEncoding.EncodeToString(b.secretKey), base64.StdEncoding.EncodeToString(b.introKey), "hunter2-the-value"} {
		if strings.Contains(out+errs, leak) || bytes.Contains(archive, []byte(leak)) {
			t.Errorf("a key or a secret value is in the output or the archive in the clear")
		}
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v mode %v, want 0600", err, fi.Mode())
	}
	if code, _, errs := cli(t, "store", "backup", "--state", b.state, file); code == 0 || !strings.Contains(errs, "exists") {
		t.Errorf("backup over an existing file: exit %d %s", code, errs)
	}
	checkBackupAudited(t, b.state)

	dir := t.TempDir()
	b.copyKeys(t, dir, secretstore.DefaultKeyFile, "introspection.key")
	target := filepath.Join(dir, "slipway.db")
	if code, out, errs := cli(t, "store", "restore", "--state", target, file); code != 0 {
		t.Fatalf("store restore: exit %d\n%s%s", code, out, errs)
	}
	st, err := bolt.Open(target, bolt.Options{Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sec, _ := secretstore.New(st, b.secretKey)
	if v, err := sec.Get(t.Context(), "bmc-admin"); err != nil || v.Reveal() != "hunter2-the-value" {
		t.Fatalf("the restored secret: %v", err)
	}
}

// checkBackupAudited finds the backup's audit record in the state.
func checkBackupAudited(t *testing.T, state string) {
	t.Helper()
	st, err := bolt.Open(state, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	es, err := st.ReadLog(t.Context(), "audit", 0, 0)
	if err != nil || len(es) == 0 {
		t.Fatalf("no audit record (%v)", err)
	}
	var rec api.AuditRecord
	if err := json.Unmarshal(es[len(es)-1].Value, &rec); err != nil || rec.Action != "store.backup" || rec.Status != 200 {
		t.Fatalf("the last audit record is %+v (%v), want the backup's", rec, err)
	}
}

// TestStoreRestoreRefusals: a restore is refused, the target left as it
// was, for a key that does not fit (both fingerprints named), a missing
// key, a damaged archive, a state a process holds, and a serve answering
// beside the state.
func TestStoreRestoreRefusals(t *testing.T) {
	t.Parallel()
	b := newBackupSite(t)
	file := filepath.Join(t.TempDir(), "backup.tar")
	if code, out, errs := cli(t, "store", "backup", "--state", b.state, file); code != 0 {
		t.Fatalf("store backup: exit %d\n%s%s", code, out, errs)
	}
	archive, _ := os.ReadFile(file)
	damaged := bytes.Clone(archive)
	damaged[len(damaged)/2] ^= 0x01
	damagedFile := filepath.Join(t.TempDir(), "damaged.tar")
	if err := os.WriteFile(damagedFile, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir, state string) func()
		file  string
		want  []string
	}{
		{"wrong key", func(t *testing.T, dir, _ string) func() {
			b.copyKeys(t, dir, "introspection.key")
			k, _ := secretstore.LoadOrCreateKey(filepath.Join(dir, secretstore.DefaultKeyFile))
			return func() {
				if !strings.Contains(lastErr, server.KeyFingerprint(k)) {
					t.Errorf("the refusal does not name the present key's fingerprint")
				}
			}
		}, file, []string{"does not fit", server.KeyFingerprint(b.secretKey), "--key-file"}},
		{"no introspection key", func(t *testing.T, dir, _ string) func() {
			b.copyKeys(t, dir, secretstore.DefaultKeyFile)
			return nil
		}, file, []string{"no introspection key", server.KeyFingerprint(b.introKey)}},
		{"damaged", func(t *testing.T, dir, _ string) func() {
			b.copyKeys(t, dir, secretstore.DefaultKeyFile, "introspection.key")
			return nil
		}, damagedFile, []string{"not a valid backup", "SHA-256"}},
		{"held", func(t *testing.T, dir, state string) func() {
			b.copyKeys(t, dir, secretstore.DefaultKeyFile, "introspection.key")
			os.Remove(state)
			st, err := bolt.Open(state, bolt.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return func() { st.Close() }
		}, file, []string{"locked by another process", "stop it"}},
		{"serve answers", func(t *testing.T, dir, state string) func() {
			b.copyKeys(t, dir, secretstore.DefaultKeyFile, "introspection.key")
			ln, err := api.ListenLocal(server.LocalSocket(state))
			if err != nil {
				t.Fatal(err)
			}
			return func() { ln.Close() }
		}, file, []string{"a serve answers on", "stop it"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			state := filepath.Join(dir, "slipway.db")
			if err := os.WriteFile(state, []byte("the state before"), 0o600); err != nil {
				t.Fatal(err)
			}
			after := tc.setup(t, dir, state)
			before, _ := os.ReadFile(state)
			code, out, errs := cli(t, "store", "restore", "--state", state, tc.file)
			lastErr = errs
			if after != nil {
				after()
			}
			if code == 0 {
				t.Fatalf("restore was not refused:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("the refusal lacks %q:\n%s", w, errs)
				}
			}
			if got, _ := os.ReadFile(state); !bytes.Equal(got, before) {
				t.Errorf("the refused restore changed the state file")
			}
			t.Log(strings.TrimSpace(errs))
		})
	}
}

// lastErr is the last refusal's standard error (a case's check reads it).
var lastErr string

// stormAck is a secret a storm writer stored: when its call began and
// when it was acknowledged.
type stormAck struct {
	name         string
	begun, acked time.Time
}

// TestStoreBackupWriteStormViaSocket: with the API of a serve on the
// socket beside the state (this process holds the state, as serve does)
// and 8 writers storing secrets through it, `store backup --state` talks
// to it over the socket; the archive, restored into a new path, holds
// every secret acknowledged before the command began (decrypting to its
// value with the same key), none begun after it returned, and passes
// bbolt's check.
func TestStoreBackupWriteStormViaSocket(t *testing.T) {
	t.Parallel()
	b := newBackupSite(t)
	sock := serveOnSocket(t, b.state)
	c, err := client.New("http://local", "", client.WithUnixSocket(sock))
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	stop := make(chan struct{})
	acks := make([][]stormAck, 8)
	var wg sync.WaitGroup
	for w := range acks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("storm-%d-%d", w, i)
				begun := time.Now()
				if err := c.PutSecret(t.Context(), name, "value of "+name); err != nil {
					return
				}
				acks[w] = append(acks[w], stormAck{name, begun, time.Now()})
				n.Add(1)
			}
		}()
	}
	waitCount(t, &n, 400, "before the backup")
	file := filepath.Join(t.TempDir(), "backup.tar")
	begin := time.Now()
	code, out, errs := cli(t, "store", "backup", "--state", b.state, file)
	end := time.Now()
	waitCount(t, &n, n.Load()+100, "after the backup")
	close(stop)
	wg.Wait()
	if code != 0 {
		t.Fatalf("store backup over the socket: exit %d\n%s%s", code, out, errs)
	}
	// The serve on the socket took it (this process holds the state: the
	// command could not have opened it itself): its audit says so.
	page, err := c.Audit(t.Context(), 0, 10000)
	if err != nil || !slices.ContainsFunc(page.Items, func(r api.AuditRecord) bool { return r.Action == "store.backup" && r.Status == 200 }) {
		t.Fatalf("no audit record of the backup in the serve's state (%v)", err)
	}
	dir := t.TempDir()
	b.copyKeys(t, dir, secretstore.DefaultKeyFile, "introspection.key")
	target := filepath.Join(dir, "slipway.db")
	if code, out, errs := cli(t, "store", "restore", "--state", target, file); code != 0 {
		t.Fatalf("store restore: exit %d\n%s%s", code, out, errs)
	}
	checkStormRestored(t, target, b.secretKey, acks, begin, end)
}

// serveOnSocket serves the API over state on the socket beside it, as
// serve does, until the test ends; it returns the socket's path.
func serveOnSocket(t *testing.T, state string) string {
	t.Helper()
	o := server.Options{Stderr: io.Discard, Log: zerolog.Nop()}
	cfg := server.Config{State: state}
	env, err := server.OpenReader(cfg, o, false)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.NewAPI(cfg, env, o)
	if err != nil {
		env.Close()
		t.Fatal(err)
	}
	ln, err := api.ListenLocal(server.LocalSocket(state))
	if err != nil {
		env.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.ServeLocal(ctx, ln, server.LocalName) }()
	t.Cleanup(func() { cancel(); <-done; env.Close() })
	return server.LocalSocket(state)
}

// waitCount waits until n reaches want; it fails the test if the writers
// stall (3 minutes without reaching it).
func waitCount(t *testing.T, n *atomic.Int64, want int64, when string) {
	t.Helper()
	// Bounded by the writers' own pace, not a guess at the machine's
	// speed: at load 18 on 2 cores 400 writes took longer than 30 s, and
	// a wait that returned short failed the count below instead.
	end := time.Now().Add(3 * time.Minute)
	for n.Load() < want {
		if time.Now().After(end) {
			t.Fatalf("%d of %d secrets acknowledged %s within 3 minutes: the writers stalled", n.Load(), want, when)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkStormRestored opens the restored state and checks the storm's
// secrets in it.
func checkStormRestored(t *testing.T, state string, key []byte, acks [][]stormAck, begin, end time.Time) {
	t.Helper()
	if _, err := bolt.CheckState(state); err != nil {
		t.Fatalf("the restored state is not consistent: %v", err)
	}
	st, err := bolt.Open(state, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sec, _ := secretstore.New(st, key)
	var before, after, total int
	for _, w := range acks {
		for _, a := range w {
			total++
			v, err := sec.Get(t.Context(), a.name)
			switch {
			case a.acked.Before(begin):
				before++
				if err != nil || v.Reveal() != "value of "+a.name {
					t.Fatalf("secret %s acknowledged before the backup began is not in the restored state: %v", a.name, err)
				}
			case a.begun.After(end):
				after++
				if err == nil {
					t.Fatalf("secret %s stored after the backup returned is in the restored state", a.name)
				}
			}
		}
	}
	if before < 400 || after == 0 {
		t.Fatalf("%d secrets stored: %d acknowledged before the backup, %d begun after it; want at least 400 and 1", total, before, after)
	}
	t.Logf("%d secrets stored by 8 writers through the API; %d acknowledged before the backup, all restored; %d begun after it, none restored", total, before, after)
}
