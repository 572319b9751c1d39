package statestore

import (
	"context"
	"errors"
	"fmt"

	"github.com/slipway-dev/slipway/internal/storedrec"
)

// OpKind says what an [Op] does.
type OpKind int

const (
	// OpPut sets Key in collection Coll to Value, replacing any value.
	OpPut OpKind = iota + 1
	// OpDelete removes Key from collection Coll; removing a missing key is
	// not an error.
	OpDelete
	// OpAppend appends Value to log Coll under the log's next sequence number.
	OpAppend
)

// String returns "put", "delete" or "append".
func (k OpKind) String() string {
	return enumName("OpKind", int(k), int(OpPut), "put", "delete", "append")
}

// enumName is the name of value v of an enumeration whose values start at
// first and are named by names in order; a value outside them reads as
// typ(v).
func enumName(typ string, v, first int, names ...string) string {
	if i := v - first; i >= 0 && i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("%s(%d)", typ, v)
}

// Op is one change in a [Records.Write]. Build it with [Put], [Delete] or
// [Append].
type Op struct {
	Kind  OpKind
	Coll  string // collection (Put, Delete) or log (Append) name: non-empty, [a-z0-9_-]+
	Key   string // Put, Delete: non-empty; Append: empty
	Value []byte // Put, Append; Delete: nil
}

// Put returns an op setting key in collection coll to value.
func Put(coll, key string, value []byte) Op {
	return Op{Kind: OpPut, Coll: coll, Key: key, Value: value}
}

// Delete returns an op removing key from collection coll.
func Delete(coll, key string) Op {
	return Op{Kind: OpDelete, Coll: coll, Key: key}
}

// Append returns an op appending value to log.
func Append(log string, value []byte) Op {
	return Op{Kind: OpAppend, Coll: log, Value: value}
}

// Record is one keyed record of a collection.
type Record struct {
	Key   string
	Value []byte
}

// LogEntry is one entry of a log.
type LogEntry struct {
	Seq   uint64 // position in the log; starts at 1, strictly increasing
	Value []byte
}

// Records keeps the orchestrator's working state: keyed records in named
// collections and append-only logs, written atomically together.
//
// Collections and logs are created by their first write; reading one that
// was never written gives no records and no error. Collections and logs
// have separate namespaces: a log may have the name of a collection.
// Names must be valid (see [ValidateName]) and keys non-empty (see
// [ValidateKey]) in every method; Get, List, ReadLog and LastSeq reject
// invalid ones with an error too.
//
// Values may be empty. Values passed in are copied before Write returns and
// values returned are copies: callers may modify them freely.
type Records interface {
	KeyedRecords
	// ReadLog returns up to limit entries (limit <= 0: all) of log with
	// Seq > after, oldest first. Unknown log: empty, no error.
	ReadLog(ctx context.Context, log string, after uint64, limit int) ([]LogEntry, error)
	// LastSeq returns the log's highest sequence number, 0 when empty.
	LastSeq(ctx context.Context, log string) (uint64, error)
}

// KeyedRecords is the part of [Records] that reads and writes keyed
// collections: all the token store (auth), the secret store and the
// introspection API's reports need of it.
type KeyedRecords interface {
	// Write applies ops atomically (all or none), in order, and returns the
	// sequence numbers given to the Append ops, in order (none when there
	// are no Append ops). Appends of one Write to the same log get
	// consecutive numbers. Invalid ops (see [Op.Validate]) fail the whole
	// Write before anything is written. Concurrent Writes may be coalesced
	// into one transaction (bbolt Batch) but each is still all-or-none.
	Write(ctx context.Context, ops ...Op) ([]uint64, error)
	// Get returns a record's value; the error wraps ErrNoRecord when absent.
	Get(ctx context.Context, coll, key string) ([]byte, error)
	// List returns the records of coll whose key starts with prefix, in key
	// order (byte order). Unknown coll: empty, no error.
	List(ctx context.Context, coll, prefix string) ([]Record, error)
}

// RecordViewer is implemented by stores that can lend a record's value
// to a function instead of copying it, for callers that only read it
// (both stores here do).
type RecordViewer interface {
	// ViewRecord calls fn with the value of key in coll, which is only
	// valid during the call: fn must not modify or keep it (copy what it
	// keeps), and must not call the store. It returns fn's error, or an
	// error wrapping ErrNoRecord (fn not called) when the record is absent;
	// names and keys are checked as for Get.
	ViewRecord(ctx context.Context, coll, key string, fn func(value []byte) error) error
}

// ErrNoRecord is wrapped by errors for records that are not stored.
var ErrNoRecord = errors.New("record not found")

const (
	// MaxNameLen is the longest collection or log name.
	MaxNameLen = 128
	// MaxKeyLen is the longest record key, in bytes (bbolt's key limit).
	MaxKeyLen = 32768
)

// NoRecordError returns an error wrapping ErrNoRecord for key in coll.
func NoRecordError(coll, key string) error {
	return fmt.Errorf("%w: key %q in collection %q", ErrNoRecord, key, coll)
}

// ValidateName reports whether name can name a collection or log: 1 to
// [MaxNameLen] characters from a-z, 0-9, '_' and '-'. what ("collection"
// or "log") is used in the error.
func ValidateName(what, name string) error {
	if name == "" {
		return fmt.Errorf("empty %s name: give a name of characters a-z, 0-9, '_' and '-'", what)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("%s name %.20q… is %d bytes long: use at most %d", what, name, len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return fmt.Errorf("invalid %s name %q: use only characters a-z, 0-9, '_' and '-'", what, name)
		}
	}
	return nil
}

// ValidateKey reports whether key can be the key of a record in coll: 1 to
// [MaxKeyLen] bytes, any content.
func ValidateKey(coll, key string) error {
	switch {
	case key == "":
		return fmt.Errorf("empty record key in collection %q: give a non-empty key", coll)
	case len(key) > MaxKeyLen:
		return fmt.Errorf("record key %.20q… in collection %q is %d bytes long: use at most %d", key, coll, len(key), MaxKeyLen)
	}
	return nil
}

// Validate reports whether o can be written: a known Kind, a valid name
// (see [ValidateName]), a valid Key for Put and Delete (see [ValidateKey]),
// no Key for Append and no Value for Delete.
func (o Op) Validate() error {
	switch o.Kind {
	case OpPut, OpDelete:
		if err := ValidateName("collection", o.Coll); err != nil {
			return err
		}
		if err := ValidateKey(o.Coll, o.Key); err != nil {
			return err
		}
		if o.Kind == OpDelete && o.Value != nil {
			return fmt.Errorf("delete of key %q in collection %q has a value: build deletes with statestore.Delete", o.Key, o.Coll)
		}
	case OpAppend:
		if err := ValidateName("log", o.Coll); err != nil {
			return err
		}
		if o.Key != "" {
			return fmt.Errorf("append to log %q has key %q: log entries have no key (use statestore.Append, or Put for a keyed record)", o.Coll, o.Key)
		}
	default:
		return fmt.Errorf("unknown op kind %d: build ops with statestore.Put, Delete or Append", int(o.Kind))
	}
	return nil
}

// ValidateOps validates every op (see [Op.Validate]) and names the first
// invalid one in its error.
func ValidateOps(ops []Op) error {
	for i, o := range ops {
		if err := o.Validate(); err != nil {
			return fmt.Errorf("invalid op %d of %d (%v): %w", i+1, len(ops), o.Kind, err)
		}
	}
	return nil
}

// ListJSON lists the records of coll whose key starts with prefix and
// decodes each into a T, in key order, converted from the schema version
// it was stored in (k's; internal/storedrec). A record that does not
// decode is named by k and its key ("damaged record: site "s-1": ...");
// one a newer release wrote is refused (storedrec.ErrNewerVersion).
func ListJSON[T any](ctx context.Context, rec KeyedRecords, k *storedrec.Kind, coll, prefix string) ([]T, error) {
	recs, err := rec.List(ctx, coll, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(recs))
	for _, x := range recs {
		var v T
		if err := k.Decode(x.Key, x.Value, &v); errors.Is(err, storedrec.ErrNewerVersion) {
			return nil, err
		} else if err != nil {
			return nil, fmt.Errorf("damaged record: %w", err)
		}
		out = append(out, v)
	}
	return out, nil
}

// Enumerator is implemented by stores that can name every collection and
// log they hold (all three here): what a copy of a store needs.
type Enumerator interface {
	// Names returns the collections and the logs, each sorted.
	Names(ctx context.Context) (colls, logs []string, err error)
}

// HistoryImporter is implemented by stores that can take another store's
// revisions and apply history as they were (etcd's, for migrations).
type HistoryImporter interface {
	// ImportHistory writes the revisions and the history (oldest first,
	// each entry's ID among revs) into an empty store; the last entry is
	// current. It refuses a store that has any history.
	ImportHistory(ctx context.Context, revs map[string]Revision, history []RevisionInfo) error
}
