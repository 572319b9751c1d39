package designtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// DropNode is YAML text without the Node document named node, and how
// many documents it dropped. Documents are separated by "\n---\n" as in
// the example site.
func DropNode(yaml, node string) (string, int) {
	var keep []string
	dropped := 0
	for _, doc := range strings.Split(yaml, "\n---\n") {
		if strings.Contains(doc, "kind: Node") && strings.Contains(doc, "name: "+node+"\n") {
			dropped++
			continue
		}
		keep = append(keep, doc)
	}
	return strings.Join(keep, "\n---\n"), dropped
}

// RemoveNode drops node's document from the YAML files in dir; the test
// fails unless exactly one was dropped.
func RemoveNode(tb testing.TB, dir, node string) {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	dropped := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		s, n := DropNode(string(b), node)
		if n == 0 {
			continue
		}
		dropped += n
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	if dropped != 1 {
		tb.Fatalf("dropped %d documents of node %s", dropped, node)
	}
}
