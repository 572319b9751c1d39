package redfish

import (
	"net/http"
	"strconv"
	"time"

	"github.com/slipway-dev/slipway/internal/redfishmock"
)

// taskDelay is how long a task (a virtual media insert) runs.
const taskDelay = 150 * time.Millisecond

// maxTasks bounds the tasks kept; the oldest finished one is dropped.
const maxTasks = 64

var tasksPath = redfishmock.Root + "/TaskService/Tasks"

// task is a long operation: it runs for taskDelay, then does its work.
type task struct {
	id   string
	done time.Time
	run  func()
	ran  bool
}

// startTask answers 202 Accepted with the task monitor's URI in Location,
// as Redfish services answer long operations; run happens when the task
// completes (at its first read after taskDelay).
func (s *Service) startTask(w http.ResponseWriter, run func()) {
	s.mu.Lock()
	s.state.taskSeq++
	t := &task{id: strconv.Itoa(s.state.taskSeq), done: time.Now().Add(taskDelay), run: run}
	if len(s.state.tasks) >= maxTasks {
		s.state.tasks = s.state.tasks[1:]
	}
	s.state.tasks = append(s.state.tasks, t)
	s.mu.Unlock()
	w.Header().Set("Location", tasksPath+"/"+t.id)
	w.Header().Set("Retry-After", "1")
	writeJSON(w, http.StatusAccepted, s.taskDoc(t, "Running"))
}

// getTask is the task monitor: 202 while the task runs, then 200 with it
// Completed (its work done then).
func (s *Service) getTask(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	var t *task
	for _, x := range s.state.tasks {
		if x.id == r.PathValue("id") {
			t = x
		}
	}
	running := t != nil && time.Now().Before(t.done)
	finish := t != nil && !running && !t.ran
	if finish {
		t.ran = true
	}
	s.mu.Unlock()
	switch {
	case t == nil:
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "No task has that ID")
	case running:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusAccepted, s.taskDoc(t, "Running"))
	default:
		if finish {
			t.run()
		}
		writeJSON(w, http.StatusOK, s.taskDoc(t, "Completed"))
	}
}

func (s *Service) taskDoc(t *task, state string) map[string]any {
	doc := mockDoc(tasksPath + "/545")
	doc["Id"], doc["Name"], doc["@odata.id"] = t.id, "Task "+t.id, tasksPath+"/"+t.id
	doc["TaskState"], doc["TaskStatus"], doc["Messages"] = state, "OK", []any{}
	delete(doc, "EndTime")
	return doc
}
