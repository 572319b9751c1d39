package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/api"
)

// TestConsoleCommand: `console NODE --write` attaches through the API,
// prints what the lab machine's serial console shows and types standard
// input at it (a newline sent as CR: the machine echoes the line and
// prints its login prompt again once deployed); an interrupt detaches
// (exit 0), as --for does; an operator is refused.
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
	// "root" is typed once attached (the console reads standard input
	// then); the console is detached once its echo and a kernel line have
	// come, or after a minute (a hang guard).
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, "root\n")
		_ = pw.Close()
	}()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	stdout := &interruptAt{cancel: cancel, at: []string{"kernel: still booting", "root\r\n"}}
	var stderr bytes.Buffer
	code := runIn(ctx, pr, []string{"--server", url, "--token", admin, "console", node, "--write"}, stdout, &stderr)
	out, errs := stdout.String(), stderr.String()
	if ctx.Err() == context.DeadlineExceeded {
		t.Fatalf("console: no echo of root and no kernel line within a minute:\n%s\n%s", out, errs)
	}
	if code != 0 || !strings.Contains(out, "kernel: still booting") || !strings.Contains(out, "root\r\n") ||
		!strings.Contains(errs, "attached to the console of "+node+", read-write") {
		t.Fatalf("console: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if strings.Contains(out+errs, admin) {
		t.Error("the token is in the output")
	}
	// --for detaches by itself: read-only, after 3 s (once the server has
	// seen the first session go: one console per node).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		code, out, errs = cli(t, "--server", url, "--token", admin, "console", node, "--for", "3s")
		if !strings.Contains(errs, "HTTP 409") || time.Now().After(deadline) {
			break
		}
	}
	if code != 0 || !strings.Contains(errs, "read-only") || !strings.Contains(errs, "[detached from the console of "+node+"]") {
		t.Errorf("console --for 3s: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}
