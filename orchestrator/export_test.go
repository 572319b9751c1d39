package orchestrator

// SyncFollowedBy says, for the tests, whether task follows a running
// image sync (it asked for it and waits on it).
func (e *Engine) SyncFollowedBy(task string) bool {
	e.imgs.mu.Lock()
	defer e.imgs.mu.Unlock()
	for _, j := range e.imgs.running {
		j.mu.Lock()
		ok := j.tasks[task]
		j.mu.Unlock()
		if ok {
			return true
		}
	}
	return false
}
