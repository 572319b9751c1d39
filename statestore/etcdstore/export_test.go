package etcdstore

// SetStageHook makes s stop a staged Write at a step as a crash would:
// fn answers an error at the step to stop at.
func SetStageHook(s *Store, fn func(step string) error) { s.stageHook = fn }
