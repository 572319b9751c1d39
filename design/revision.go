package design

import (
	"crypto/sha256"
	"reflect"

	"github.com/slipway-dev/slipway/internal/storedrec"
)

// RevisionRecord is a stored revision's kind of record. A revision is
// addressed by the hash of its canonical JSON, so this release stores it
// without a schema version (adding one would change every ID): a
// revision without one is read by the legacy step, which renames the
// camelCase keys of the releases before the snake_case names and leaves
// today's as they are. A later schema of the design would write its
// version into the canonical JSON of new revisions (new IDs anyway), and
// this release refuses those rather than misread them.
var RevisionRecord = storedrec.NewKind("design revision", reflect.TypeFor[Design]())

// DecodeRevision decodes a stored revision's canonical JSON into a Design.
// Every reader of stored revisions goes through here (or RevisionRecord)
// rather than through encoding/json, so old revisions read under today's
// names.
func DecodeRevision(canonical []byte) (*Design, error) {
	d := &Design{}
	if err := RevisionRecord.Decode("", canonical, d); err != nil {
		return nil, err
	}
	d.nameSites()
	return d, nil
}

// DecodeShared is DecodeRevision for a reader that holds the design and
// never writes into it (the engine's current design, the control API's
// cache): the nodes share their equal parts (share.go), about a sixth of
// DecodeRevision's memory a node, and readers of the same revision share
// one design while any holds it (serve's engine and its control API).
// DecodeRevision's design is the reader's own, every node's maps its own
// (tests edit copies so).
func DecodeShared(canonical []byte) (*Design, error) {
	sum := sha256.Sum256(canonical)
	if d := sharedRevisions.get(sum); d != nil {
		return d, nil
	}
	d, err := DecodeRevision(canonical)
	if err != nil {
		return nil, err
	}
	d.shareParts()
	sharedRevisions.put(sum, d)
	return d, nil
}
