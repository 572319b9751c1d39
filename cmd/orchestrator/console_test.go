package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
)

// TestConsoleCommand: `console NODE --write` attaches through the API,
// prints what the lab machine's serial console shows and types standard
// input at it (a newline sent as CR: the machine echoes the line and
// prints its login prompt again once deployed); --for detaches; an
// operator is refused.
func TestConsoleCommand(t *testing.T) {
	t.Parallel()
	s := remoteServer(t)
	url, node := s.URL, s.Node
	op, admin := s.Token[api.RoleOperator], s.Token[api.RoleAdmin]
	if code, _, errs := cli(t, "--server", url, "--token", op, "console", node, "--for", "1s"); code != exitUsage || !strings.Contains(errs, "HTTP 403") {
		t.Fatalf("console as an operator: exit %d: %s", code, errs)
	}
	m := s.Env.Lab.Machine(node)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // the machine prints on; the console shows what comes once attached
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				m.Serial.Printf("kernel: still booting")
			}
		}
	}()
	pr, pw := io.Pipe()
	go func() {
		time.Sleep(1500 * time.Millisecond)
		_, _ = io.WriteString(pw, "root\n")
		_ = pw.Close()
	}()
	code, out, errs := cliIn(t, pr, "--server", url, "--token", admin, "console", node, "--write", "--for", "4s")
	if code != 0 || !strings.Contains(out, "kernel: still booting") || !strings.Contains(out, "root\r\n") ||
		!strings.Contains(errs, "attached to the console of "+node+", read-write") {
		t.Fatalf("console: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if strings.Contains(out+errs, admin) {
		t.Error("the token is in the output")
	}
}
