// Package designlayer keeps what the server needs to build a design
// revision again: the YAML sources of every applied upload, and the
// API-managed layer, the documents added through the API (onboarded
// nodes) rather than from git.
//
// A revision holds the resolved design only; to add a node to it the
// server builds the design again from the sources the revision was built
// from, with the layer as one more root over them. The layer is exported
// as YAML for the operator to commit: the next upload that defines a
// layer document takes it over (the document leaves the layer).
//
// # Layout
//
// In the [statestore.KeyedRecords] given to [New]:
//
//	collection "design_sources"
//	    key: the SHA-256 of the value, hex
//	    value: gzip of JSON Sources (shared by revisions with the same sources)
//	collection "revision_sources"
//	    key: a revision ID
//	    value: the key of its sources in design_sources
//	collection "design_layer"
//	    key: kind + "/" + name
//	    value: JSON Entry
package designlayer

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/slipway-dev/slipway/design"
	yamlingest "github.com/slipway-dev/slipway/ingest/yaml"
	"github.com/slipway-dev/slipway/internal/storedrec"
	"github.com/slipway-dev/slipway/statestore"
)

const (
	sourcesColl  = "design_sources"
	revisionColl = "revision_sources"
	layerColl    = "design_layer"
)

// Stored forms (internal/storedrec). A layer entry carries its schema
// version. Sources are addressed by the hash of their JSON, which is
// stored without one (as design revisions are): they read as the legacy
// version, and a newer release's are refused.
var (
	entryKind   = storedrec.NewKind("design layer entry", reflect.TypeFor[Entry]())
	sourcesKind = storedrec.NewKind("design sources", reflect.TypeFor[Sources]())
)

// LayerRoot is the name the layer's root has in findings and revisions'
// roots; LayerFile is its one file.
const (
	LayerRoot = "api-layer"
	LayerFile = LayerRoot + "/documents.yaml"
)

// MaxLayerEntries bounds the layer: past it, commit the layer to git.
const MaxLayerEntries = 10000

// ErrNoSources is wrapped when a revision's sources are not stored (it was
// applied by a release that did not keep them).
var ErrNoSources = errors.New("the revision's sources are not stored")

// File is one YAML file of an upload.
type File struct {
	Root int    `json:"root"` // index into Sources.Roots
	Name string `json:"name"` // relative to the upload, as findings name it
	Data string `json:"data"`
}

// Sources are the files of an upload, by root.
type Sources struct {
	Roots []string `json:"roots"` // relative names; "" for an upload that is one root
	Files []File   `json:"files"`
}

// Collect reads the files of an upload in dir: roots are its root
// directories (dir itself for a one-root upload), files the paths read.
func Collect(dir string, roots, files []string) (Sources, error) {
	var s Sources
	rel := func(p string) string {
		r, err := filepath.Rel(dir, p)
		if err != nil || r == "." {
			return ""
		}
		return filepath.ToSlash(r)
	}
	for _, r := range roots {
		s.Roots = append(s.Roots, rel(r))
	}
	for _, f := range files {
		root := slices.IndexFunc(roots, func(r string) bool { return r == dir || strings.HasPrefix(f, r+string(filepath.Separator)) })
		if root < 0 {
			return Sources{}, fmt.Errorf("design file %s is under none of the upload's roots", rel(f))
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return Sources{}, err
		}
		s.Files = append(s.Files, File{Root: root, Name: rel(f), Data: string(data)})
	}
	return s, nil
}

// Parse parses the files into design sources, in order.
func (s Sources) Parse() ([]design.Source, []design.Finding) {
	var out []design.Source
	var fs []design.Finding
	for _, f := range s.Files {
		src, ff := yamlingest.ParseFile(f.Name, []byte(f.Data), f.Root)
		out = append(out, src...)
		fs = append(fs, ff...)
	}
	return out, fs
}

// Store keeps the sources and the layer.
type Store struct {
	rec statestore.KeyedRecords
	now func() time.Time
}

// New returns a Store over rec.
func New(rec statestore.KeyedRecords) *Store {
	return &Store{rec: rec, now: time.Now}
}

// SaveSources records src as the sources of revision rev.
func (s *Store) SaveSources(ctx context.Context, rev string, src Sources) error {
	raw, err := json.Marshal(src)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	sum := sha256.Sum256(raw)
	key := hex.EncodeToString(sum[:])
	_, err = s.rec.Write(ctx, statestore.Put(sourcesColl, key, buf.Bytes()), statestore.Put(revisionColl, rev, []byte(key)))
	return err
}

// CopySources records the sources of revision from as those of rev too.
func (s *Store) CopySources(ctx context.Context, from, rev string) error {
	key, err := s.rec.Get(ctx, revisionColl, from)
	if errors.Is(err, statestore.ErrNoRecord) {
		return fmt.Errorf("%w (revision %s)", ErrNoSources, short(from))
	}
	if err != nil {
		return err
	}
	_, err = s.rec.Write(ctx, statestore.Put(revisionColl, rev, key))
	return err
}

// Sources returns the sources revision rev was built from (with the
// layer, if it had one, not among them).
func (s *Store) Sources(ctx context.Context, rev string) (Sources, error) {
	key, err := s.rec.Get(ctx, revisionColl, rev)
	if errors.Is(err, statestore.ErrNoRecord) {
		return Sources{}, fmt.Errorf("%w (revision %s): apply the design from git again", ErrNoSources, short(rev))
	}
	if err != nil {
		return Sources{}, err
	}
	z, err := s.rec.Get(ctx, sourcesColl, string(key))
	if err != nil {
		return Sources{}, fmt.Errorf("the sources of revision %s: %w", short(rev), err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return Sources{}, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return Sources{}, err
	}
	var src Sources
	return src, sourcesKind.Decode(string(key), raw, &src)
}

func short(rev string) string { return rev[:min(len(rev), 12)] }

// Entry is one document of the layer.
type Entry struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Doc is the whole document (apiVersion, kind, metadata, spec).
	Doc map[string]any `json:"doc"`
	// Onboarding is the onboarding that added it ("" when none).
	Onboarding string    `json:"onboarding,omitempty"`
	Added      time.Time `json:"added"`
	By         string    `json:"by,omitempty"`
}

// Key is the entry's key: kind/name.
func (e Entry) Key() string { return e.Kind + "/" + e.Name }

// Layer returns the layer's entries, by kind and name.
func (s *Store) Layer(ctx context.Context) ([]Entry, error) {
	return statestore.ListJSON[Entry](ctx, s.rec, entryKind, layerColl, "")
}

// PutOps are the ops that add (or replace) entries, stamped now.
func (s *Store) PutOps(entries []Entry) ([]statestore.Op, error) {
	ops := make([]statestore.Op, 0, len(entries))
	for _, e := range entries {
		if e.Added.IsZero() {
			e.Added = s.now().UTC()
		}
		b, err := entryKind.Encode(e)
		if err != nil {
			return nil, err
		}
		ops = append(ops, statestore.Put(layerColl, e.Key(), b))
	}
	return ops, nil
}

// DeleteOps are the ops that remove the entries of keys (kind/name).
func DeleteOps(keys []string) []statestore.Op {
	ops := make([]statestore.Op, 0, len(keys))
	for _, k := range keys {
		ops = append(ops, statestore.Delete(layerColl, k))
	}
	return ops
}

// Write applies ops (PutOps, DeleteOps and others) atomically.
func (s *Store) Write(ctx context.Context, ops ...statestore.Op) error {
	if len(ops) == 0 {
		return nil
	}
	_, err := s.rec.Write(ctx, ops...)
	return err
}

// YAML is the layer as one YAML file, a document per entry, to commit to
// git as a root of its own over the design's.
func YAML(entries []Entry) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString("# The API-managed layer of the design: documents added through the\n" +
		"# control API (onboardings). Commit this file as a root of its own after\n" +
		"# the design's roots; the next apply that defines these documents takes\n" +
		"# them over.\n")
	for _, e := range entries {
		buf.WriteString("---\n")
		if e.Onboarding != "" {
			fmt.Fprintf(&buf, "# added by onboarding %s\n", e.Onboarding)
		}
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(e.Doc); err != nil {
			return nil, err
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// Build builds the design from the sources with the layer as the last
// root; findings in the layer name LayerFile.
func Build(src Sources, entries []Entry) (*design.Design, design.Findings, error) {
	sources, fs := src.Parse()
	ls, lf, err := LayerSources(entries, len(src.Roots))
	if err != nil {
		return nil, nil, err
	}
	d, more := design.Build(append(sources, ls...))
	all := slices.Concat(design.Findings(fs), lf, more)
	all.Sort()
	return d, all, nil
}

// LayerSources parses the entries as the design root of index root, named
// LayerFile in positions; none for no entries.
func LayerSources(entries []Entry, root int) ([]design.Source, []design.Finding, error) {
	if len(entries) == 0 {
		return nil, nil, nil
	}
	y, err := YAML(entries)
	if err != nil {
		return nil, nil, err
	}
	ls, lf := yamlingest.ParseFile(LayerFile, y, root)
	return ls, lf, nil
}

// Defined returns the keys (kind/name) of the documents sources define.
func Defined(sources []design.Source) map[string]bool {
	out := map[string]bool{}
	for _, s := range sources {
		if s.Doc == nil {
			continue
		}
		if k, n := s.Doc.Text("kind"), s.Doc.Get("metadata").Text("name"); k != "" && n != "" {
			out[k+"/"+n] = true
		}
	}
	return out
}

// Split divides the layer into the entries an upload defines (taken over)
// and the rest (kept).
func Split(entries []Entry, defined map[string]bool) (kept, taken []Entry) {
	for _, e := range entries {
		if defined[e.Key()] {
			taken = append(taken, e)
		} else {
			kept = append(kept, e)
		}
	}
	return kept, taken
}
