package orchestrator

// ReportNotifier is a Bootstrapper that says when a node reported: a node
// waiting at bootstrap then looks at its reports at once instead of at
// its next look (10 s, scaled, later at the most).
type ReportNotifier interface {
	// NotifyReports makes the bootstrapper call fn with the node's name
	// after it stored a report of the node. fn must not block.
	NotifyReports(fn func(node string))
}

// wakeCh is the node's wake-up channel (one pending wake at most).
func (e *Engine) wakeCh(node string) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	ch := e.wakes[node]
	if ch == nil {
		ch = make(chan struct{}, 1)
		e.wakes[node] = ch
	}
	return ch
}

// wake wakes the node if it waits on a timer (parked, or on wakeCh); a node that is not
// waiting looks once more than it needed to the next time it waits.
func (e *Engine) wake(node string) {
	e.mu.Lock()
	if fn := e.parked[node]; fn != nil { // park.go
		delete(e.parked, node)
		e.mu.Unlock()
		fn()
		return
	}
	e.mu.Unlock()
	select {
	case e.wakeCh(node) <- struct{}{}:
	default:
	}
}
