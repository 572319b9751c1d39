package bolt

// SetSnapshotOpened sets a function called after a shared read
// transaction began and before it is shared (tests run a Write there).
func SetSnapshotOpened(s *Store, f func()) { s.snaps.opened = f }
