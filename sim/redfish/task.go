package redfish

import (
	"net/http"
	"strconv"
	"time"

	"github.com/slipway-dev/slipway/internal/redfishmock"
)

// maxTasks bounds the tasks kept; the oldest finished one is dropped.
const maxTasks = 64

var tasksPath = redfishmock.Root + "/TaskService/Tasks"

// Task states (Redfish TaskState).
const (
	taskRunning   = "Running"
	taskCompleted = "Completed"
	taskException = "Exception"
)

// task is a long operation (a firmware update, a volume's build). It
// runs from begin to done (both zero while it waits, e.g. for its image),
// then finish does its work, at the first request after done
// (Service.advance).
type task struct {
	id, name, target string // target: the URI of the action that started it
	start, begin     time.Time
	done, end        time.Time
	state            string
	percent          int
	messages         []taskMessage
	finish           func(at time.Time)
	after            func() // run (without mu) by the first read of the monitor after the task completed
	gave204          bool   // the monitor answered the task's completion (204); it answers 404 since
	hidden           bool   // no Task resource shows it (iLO's SimpleUpdate: vendor.go)
}

type taskMessage struct{ id, text, severity string }

// newTask adds a running task. Called with mu held.
func (s *Service) newTask(name, target string) *task {
	s.state.taskSeq++
	t := &task{id: strconv.Itoa(s.state.taskSeq), name: name, target: target, start: time.Now(), state: taskRunning}
	if len(s.state.tasks) >= maxTasks {
		for i, x := range s.state.tasks {
			if x.state != taskRunning {
				s.state.tasks = append(s.state.tasks[:i:i], s.state.tasks[i+1:]...)
				break
			}
		}
	}
	s.state.tasks = append(s.state.tasks, t)
	return t
}

// dropTask forgets t (the BMC reset and lost it). Called with mu held.
func (s *Service) dropTask(t *task) {
	for i, x := range s.state.tasks {
		if x == t {
			s.state.tasks = append(s.state.tasks[:i:i], s.state.tasks[i+1:]...)
			return
		}
	}
}

// taskDelay is how long a task started by startTask runs.
const taskDelay = 150 * time.Millisecond

// startTask answers 202 with a task that runs for taskDelay; run happens
// (without mu) at the first read of its monitor after that.
func (s *Service) startTask(w http.ResponseWriter, run func()) {
	s.mu.Lock()
	t := s.newTask("Task", "")
	t.begin, t.done, t.after = t.start, t.start.Add(taskDelay), run
	s.mu.Unlock()
	s.answerTask(w, t)
}

// answerTask answers 202 Accepted with the task monitor's URI in
// Location, as Redfish services answer long operations.
func (s *Service) answerTask(w http.ResponseWriter, t *task) {
	if s.o.Vendor == vendorDell {
		answerJob(w, t) // vendor.go
		return
	}
	s.mu.Lock()
	doc := taskDoc(t, time.Now())
	s.mu.Unlock()
	w.Header().Set("Location", monitorURI(t))
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusAccepted, doc)
}

// monitorURI is t's task monitor (where OpenBMC's bmcweb has it).
func monitorURI(t *task) string { return tasksPath + "/" + t.id + "/Monitor" }

// findTask is the task of that ID after moving the tasks on to now, and
// its after hook when it is no longer running (taken: it runs once).
// Called with mu held.
func (s *Service) findTask(id string, now time.Time) (*task, func()) {
	s.advance(now)
	for _, t := range s.state.tasks {
		if t.id == id && !t.hidden {
			var after func()
			if t.state != taskRunning {
				after, t.after = t.after, nil
			}
			return t, after
		}
	}
	return nil, nil
}

// getMonitor is the task monitor, as OpenBMC's bmcweb answers it: 202 and
// the task while it runs; once it ended (Completed or Exception: the
// monitor does not tell them apart, the Task resource does) 204, once,
// then 404.
func (s *Service) getMonitor(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	now := time.Now()
	t, after := s.findTask(r.PathValue("id"), now)
	var doc map[string]any
	code := http.StatusNotFound
	if t != nil && !t.gave204 {
		doc, code = taskDoc(t, now), http.StatusAccepted
		if t.state != taskRunning {
			t.gave204, code = true, http.StatusNoContent
		}
	}
	s.mu.Unlock()
	if after != nil {
		after()
	}
	switch code {
	case http.StatusNotFound:
		writeError(w, code, "Base.1.8.ResourceMissingAtURI", "No task monitor has that ID (a completed task's monitor answers once)")
	case http.StatusNoContent:
		w.WriteHeader(code)
	default:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, code, doc)
	}
}

// getTask is the Task resource: 200 with its TaskState (Running, then
// Completed or Exception and its messages) throughout; 404 for a task the
// BMC does not know (or lost in its reset).
func (s *Service) getTask(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	now := time.Now()
	t, after := s.findTask(r.PathValue("id"), now)
	var doc map[string]any
	if t != nil {
		doc = taskDoc(t, now)
	}
	s.mu.Unlock()
	if after != nil {
		after()
	}
	if doc == nil {
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "No task has that ID")
		return
	}
	writeJSON(w, http.StatusOK, doc)
}

// getTasks lists the tasks the BMC keeps.
func (s *Service) getTasks(w http.ResponseWriter, _ *http.Request) {
	doc := mockDoc(tasksPath)
	s.mu.Lock()
	s.advance(time.Now())
	members := make([]any, 0, len(s.state.tasks))
	for _, t := range s.state.tasks {
		if !t.hidden {
			members = append(members, map[string]any{"@odata.id": tasksPath + "/" + t.id})
		}
	}
	s.mu.Unlock()
	doc["Members"], doc["Members@odata.count"] = members, len(members)
	writeJSON(w, http.StatusOK, doc)
}

// taskDoc is t's Task resource at now. Called with mu held.
func taskDoc(t *task, now time.Time) map[string]any {
	pct := t.percent
	if t.state == taskRunning && !t.begin.IsZero() && t.done.After(t.begin) {
		pct = min(99, int(100*now.Sub(t.begin)/t.done.Sub(t.begin)))
	}
	status := "OK"
	if t.state == taskException {
		status = "Critical"
	}
	msgs := make([]any, 0, len(t.messages))
	for _, m := range t.messages {
		msgs = append(msgs, map[string]any{"MessageId": m.id, "Message": m.text, "Severity": m.severity, "MessageSeverity": m.severity})
	}
	doc := map[string]any{
		"@odata.type": "#Task.v1_7_0.Task", "@odata.id": tasksPath + "/" + t.id, "Id": t.id, "Name": t.name,
		"TaskState": t.state, "TaskStatus": status, "PercentComplete": pct, "Messages": msgs,
		"StartTime": t.start.UTC().Format(time.RFC3339),
		"Payload":   map[string]any{"TargetUri": t.target, "HttpOperation": "POST"},
	}
	if !t.gave204 {
		doc["TaskMonitor"] = monitorURI(t)
	}
	if !t.end.IsZero() {
		doc["EndTime"] = t.end.UTC().Format(time.RFC3339)
	}
	return doc
}
