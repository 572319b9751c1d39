package ipmi

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/drivers"
	"github.com/slipway-dev/slipway/internal/testtool"
	"github.com/slipway-dev/slipway/sim/bmc"
	"github.com/slipway-dev/slipway/sim/serial"
)

func waitOutput(t *testing.T, out *testtool.SyncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q on the console within 10 s:\n%s", want, out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type attached struct {
	out    *testtool.SyncBuffer
	in     chan []byte
	cancel context.CancelFunc
	done   chan error
}

func attach(d *Driver, target drivers.BMC, readOnly bool) *attached {
	ctx, cancel := context.WithCancel(context.Background())
	a := &attached{out: &testtool.SyncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	var in <-chan []byte
	if !readOnly {
		a.in = make(chan []byte, 4)
		in = a.in
	}
	go func() { a.done <- d.Console(ctx, target, drivers.ConsoleIO{Out: a.out, In: in}) }()
	return a
}

// TestConsoleSimBMC: the driver's SOL console shows what the machine
// writes (long output whole and in order, over many packets and the
// 15-number sequence wrap), types what is sent, once, refuses a second
// console with ErrConsoleBusy, and on detach deactivates the payload so
// that the next console attaches.
func TestConsoleSimBMC(t *testing.T) {
	for _, suite := range []int{3, 17, 1} {
		port := serial.New()
		var mu sync.Mutex
		var typed []byte
		port.OnInput(func(p []byte) { mu.Lock(); typed = append(typed, p...); mu.Unlock() })
		b, _ := startSim(t, bmc.Options{Serial: port})
		d := newTestDriver(t, nil)
		target := simTarget(b, "lanplus", suite)

		a := attach(d, target, false)
		testtool.WaitUntil(t, func() bool { return strings.Contains(sessionsOf(b), "Activate Payload") }, "the console activates SOL")
		time.Sleep(150 * time.Millisecond) // the BMC starts sending 100 ms after activation
		var long strings.Builder
		for i := range 60 {
			long.WriteString("kernel: line " + string(rune('A'+i%26)) + " of the boot messages, long enough for many packets\r\n")
		}
		_, _ = port.Write([]byte(long.String()))
		waitOutput(t, a.out, long.String())

		second := attach(d, target, true)
		if err := <-second.done; !errors.Is(err, drivers.ErrConsoleBusy) {
			t.Fatalf("C%d: a second console: %v, want ErrConsoleBusy", suite, err)
		}
		typedText := strings.Repeat("x", 450) + "\r" // more than one packet's worth
		a.in <- []byte(typedText)
		testtool.WaitUntil(t, func() bool { mu.Lock(); defer mu.Unlock(); return string(typed) == typedText }, "the machine gets what was typed, once")

		a.cancel()
		if err := <-a.done; err != nil {
			t.Fatalf("C%d: detaching: %v", suite, err)
		}
		third := attach(d, target, true)
		// What the machine writes before the third console is attached is
		// not for it: write until it shows.
		testtool.WaitUntil(t, func() bool {
			port.Printf("after the reattach")
			time.Sleep(50 * time.Millisecond)
			return strings.Contains(third.out.String(), "after the reattach")
		}, "the third console attaches once the first detached")
		third.cancel()
		if err := <-third.done; err != nil {
			t.Fatalf("C%d: detaching the third: %v", suite, err)
		}
		if strings.Contains(third.out.String(), "kernel: line") {
			t.Errorf("C%d: the third console replays output from before it attached", suite)
		}
		if st := b.Stats(); st.ActiveSessions != 0 {
			t.Errorf("C%d: %d sessions left open after the consoles detached", suite, st.ActiveSessions)
		}
	}
}

// A lan (IPMI v1.5) BMC has no SOL: the error says so and is Permanent.
func TestConsoleNeedsLanplus(t *testing.T) {
	b, _ := startSim(t, bmc.Options{Serial: serial.New()})
	err := newTestDriver(t, nil).Console(context.Background(), simTarget(b, "lan", 0), drivers.ConsoleIO{Out: &testtool.SyncBuffer{}})
	if drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "lanplus") {
		t.Fatalf("got %v", err)
	}
}

// A BMC with SOL disabled: a Permanent error saying how to enable it.
func TestConsoleDisabled(t *testing.T) {
	b, _ := startSim(t, bmc.Options{})
	err := newTestDriver(t, nil).Console(context.Background(), simTarget(b, "lanplus", 3), drivers.ConsoleIO{Out: &testtool.SyncBuffer{}})
	if drivers.Classify(err) != drivers.Permanent || !strings.Contains(err.Error(), "sol set enabled") {
		t.Fatalf("got %v", err)
	}
}

func sessionsOf(b *bmc.BMC) string { return b.Stats().String() }
