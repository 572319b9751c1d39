package bmc

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/sim/serial"
)

// solConsole is `ipmitool sol activate` running against a BMC, its output
// collected.
type solConsole struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	mu    sync.Mutex
	out   bytes.Buffer
	done  chan error
}

func startSOL(t *testing.T, b *BMC, suite string) *solConsole {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, "ipmitool", "-I", "lanplus", "-C", suite, "-H", "127.0.0.1",
		"-p", strconv.Itoa(b.Addr().Port), "-U", "admin", "-E", "-R", "2", "-N", "1", "sol", "activate")
	cmd.Env = append(os.Environ(), "IPMI_PASSWORD=secret") // -E: never on the command line
	c := &solConsole{cmd: cmd, done: make(chan error, 1)}
	var err error
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReader(pr)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			c.mu.Lock()
			c.out.Write(buf[:n])
			c.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { c.done <- cmd.Wait(); _ = pw.Close() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return c
}

func (c *solConsole) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// waitFor waits until the console's output holds want.
func (c *solConsole) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(c.output(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q on the console within 20 s; it shows:\n%s", want, c.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSOLWithIpmitool: ipmitool sol activate attaches to the machine's
// serial port over RMCP+ (with and without encryption): it shows what the
// machine writes, long output included (more packets than SOL's 15
// sequence numbers), the machine gets what is typed (once each, though
// ipmitool may retransmit), a second console is refused while the first
// is attached, and ipmitool's escape ~. deactivates the payload.
func TestSOLWithIpmitool(t *testing.T) {
	needIpmitool(t)
	for _, suite := range []string{"3", "17", "1"} {
		t.Run("C"+suite, func(t *testing.T) {
			port := serial.New()
			var mu sync.Mutex
			var typed []byte
			port.OnInput(func(p []byte) {
				mu.Lock()
				typed = append(typed, p...)
				mu.Unlock()
				_, _ = port.Write(p) // the machine's terminal echoes
			})
			b, _ := startBMC(t, func(o *Options) { o.Serial = port })
			c := startSOL(t, b, suite)
			// ipmitool's banner sits in its stdio buffer until the first
			// characters arrive (stdout is a pipe here): wait for the BMC.
			testtool.WaitUntil(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.sol != nil }, "ipmitool activates SOL")

			port.Printf("Booting from PXE: NIC 52:54:00:12:34:56")
			c.waitFor(t, "[SOL Session operational")
			c.waitFor(t, "Booting from PXE: NIC 52:54:00:12:34:56")
			var long strings.Builder
			for i := range 80 {
				long.WriteString("line " + strconv.Itoa(i) + " of the kernel's boot messages, long enough to need many packets\r\n")
			}
			_, _ = port.Write([]byte(long.String()))
			c.waitFor(t, "line 79 of the kernel's boot messages, long enough to need many packets\r\n") // all of it: a prefix may come a packet before the rest
			if got := c.output(); !strings.Contains(got, long.String()) {
				t.Fatalf("the long output arrived damaged (lost, doubled or out of order):\n%s", got)
			}

			second := ipmitool(t, b, "lanplus", "admin", "secret", "-C", suite, "sol", "activate")
			if second.err == nil || !strings.Contains(second.out, "already active") {
				t.Fatalf("a second console: err %v\n%s", second.err, second.out)
			}

			if _, err := io.WriteString(c.stdin, "root\r"); err != nil {
				t.Fatal(err)
			}
			c.waitFor(t, "root")
			testtool.WaitUntil(t, func() bool { mu.Lock(); defer mu.Unlock(); return string(typed) == "root\r" }, "the machine gets root<CR> once")

			if _, err := io.WriteString(c.stdin, "~."); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-c.done:
				if err != nil {
					t.Fatalf("ipmitool after ~.: %v\n%s", err, c.output())
				}
			case <-time.After(20 * time.Second):
				t.Fatal("ipmitool did not end after ~.")
			}
			testtool.WaitUntil(t, func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.sol == nil }, "~. deactivates the SOL payload")
			if _, dropped := port.Stats(); dropped != 0 {
				t.Errorf("the port dropped %d chunks", dropped)
			}
		})
	}
}

// TestSOLDisabledWithoutSerialPort: a BMC without a serial port says SOL
// is disabled and refuses activation as such.
func TestSOLDisabledWithoutSerialPort(t *testing.T) {
	needIpmitool(t)
	b, _ := startBMC(t, nil)
	if out := mustTool(t, b, "lanplus", "sol", "info"); !strings.Contains(out, "Enabled                         : false") {
		t.Fatalf("sol info:\n%s", out)
	}
	r := ipmitool(t, b, "lanplus", "admin", "secret", "sol", "activate")
	if r.err == nil || !strings.Contains(r.out, "SOL payload disabled") {
		t.Fatalf("sol activate: err %v\n%s", r.err, r.out)
	}
}
