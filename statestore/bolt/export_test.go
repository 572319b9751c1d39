package bolt

import (
	"context"
	"time"
)

// SetSnapshotOpened sets a function called after a shared read
// transaction began and before it is shared (tests run a Write there).
func SetSnapshotOpened(s *Store, f func()) { s.snaps.opened = f }

// SetCommitWait sets a function called when a Write starts waiting for
// a commit under way (it has joined the next shared commit); the function
// it returns is called when that wait ends. Tests use it to know which
// Writes share a commit.
func SetCommitWait(s *Store, f func(ctx context.Context) (resume func())) { s.commits.Wait = f }

// SetBeforeOpen sets a function Open calls after its checks of the state
// file and before bbolt opens it (nil: none).
func SetBeforeOpen(f func(path string)) { beforeOpen = f }

// SetCommitLinger sets how long a crowded commit waits for company.
func SetCommitLinger(s *Store, d time.Duration) { s.commits.Linger = d }
