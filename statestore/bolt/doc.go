// Package bolt is a [statestore.Store] kept in a single bbolt file
// (go.etcd.io/bbolt).
//
// Only one process can have the file open: [Open] takes an exclusive lock
// and fails after [Options.Timeout] if another process (typically a running
// `orchestrator serve`) holds it.
//
// The file is created with mode 0600, its parent directory (if missing)
// with mode 0700. Each Store method runs in a single bbolt transaction;
// reads of one record (Get, ViewRecord) share a read transaction until
// the next commit starts, and a read transaction that began before a
// commit ended is never shared after it: a read that starts after a
// Write returned sees it (snapshot.go).
// [Store.Write] commits at once when no commit is under way; Writes made
// while one is under way wait for it and then share one transaction, and
// so one fsync (group commit): the slower the disk, the more Writes each
// commit carries. Once a commit carried more than one Write, the next
// waits up to [CommitLinger] for company before it begins: while many
// writers come together (a rollout's nodes) each fsync carries more of
// them, and a lone writer still commits at once. A Write returns only
// when its own commit is durable, lingered or not. Each Write is still
// all-or-none: when one Write of a shared commit fails, the transaction
// is rolled back and each of the others commits alone.
//
// # Layout
//
// All keys and values are bytes as described; JSON is encoded with
// encoding/json, times as RFC 3339 with nanoseconds, in UTC.
//
//	bucket "meta"
//	    key "schema_version"  value: decimal ASCII, currently "1".
//	                          Written when the file is created. Open refuses
//	                          a file whose version is newer than it knows.
//	bucket "revisions"
//	    key: revision ID (64 lowercase hex characters, ASCII)
//	    value: JSON object
//	        {"id": string, "created": time, "roots": [string] or null,
//	         "git_commit": string, "git_dirty": bool,
//	         "counts": {kind: int} or null}
//	bucket "revision_designs"
//	    key: revision ID, as in "revisions"
//	    value: the revision's Design bytes, gzip-compressed (level BestSpeed)
//	bucket "history"
//	    key: 8-byte big-endian uint64 from the bucket's NextSequence
//	         (1, 2, 3, ...), so key order is apply order
//	    value: JSON object {"id": string, "applied": time}
//	bucket "c/<collection>", one per statestore.Records collection
//	    key: record key (bytes as given)
//	    value: record value (bytes as given)
//	bucket "l/<log>", one per statestore.Records log
//	    key: 8-byte big-endian uint64 sequence number from the bucket's
//	         NextSequence (1, 2, 3, ...), so key order is append order
//	    value: entry value (bytes as given)
//
// A revision is written once, when its content is first applied, and never
// changed afterwards. The current revision is the one named by the last
// entry of "history".
//
// Collection and log names are [a-z0-9_-]+, so the "c/" and "l/" buckets
// cannot clash with each other or with the buckets above. They are created
// by the first Write to them, not by Open: files written before they
// existed (still schema version 1) read as having no records and empty
// logs. A collection bucket stays when its last record is deleted. Log
// entries are never deleted.
package bolt
