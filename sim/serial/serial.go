// Package serial is a simulated machine's serial port (ttyS0): what the
// machine writes to it (firmware, boot loader and OS messages) is copied to
// every attached console, and what a console types is handed to the
// machine. The lab's BMCs carry it over IPMI Serial over LAN.
package serial

import (
	"fmt"
	"sync"
)

// readerBuffer is how many chunks an attached console may fall behind
// before the port drops output for it, as a UART drops characters nobody
// reads.
const readerBuffer = 256

// Port is one serial port. The zero value is not usable; call New.
type Port struct {
	mu      sync.Mutex
	readers map[chan []byte]struct{}
	input   func([]byte)
	dropped uint64
	written uint64
}

// New returns a port with nothing attached.
func New() *Port {
	return &Port{readers: map[chan []byte]struct{}{}}
}

// Write copies p to every attached console; it never blocks: a console
// that has fallen behind loses the chunk (Stats counts it).
func (p *Port) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.written += uint64(len(b))
	for ch := range p.readers {
		select {
		case ch <- append([]byte(nil), b...):
		default:
			p.dropped++
		}
	}
	return len(b), nil
}

// Printf writes one line, ended with CR LF as a terminal expects.
func (p *Port) Printf(format string, args ...any) {
	_, _ = p.Write([]byte(fmt.Sprintf(format, args...) + "\r\n"))
}

// Attach returns a channel carrying what the machine writes from now on,
// and the function that detaches it (closing the channel).
func (p *Port) Attach() (<-chan []byte, func()) {
	ch := make(chan []byte, readerBuffer)
	p.mu.Lock()
	p.readers[ch] = struct{}{}
	p.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			p.mu.Lock()
			delete(p.readers, ch)
			p.mu.Unlock()
			close(ch)
		})
	}
}

// OnInput sets what receives the characters a console types; without it
// they are discarded.
func (p *Port) OnInput(fn func([]byte)) {
	p.mu.Lock()
	p.input = fn
	p.mu.Unlock()
}

// Type hands characters typed at a console to the machine.
func (p *Port) Type(b []byte) {
	p.mu.Lock()
	fn := p.input
	p.mu.Unlock()
	if fn != nil && len(b) > 0 {
		fn(append([]byte(nil), b...))
	}
}

// Stats are the port's counters: bytes written by the machine, and
// chunks dropped for consoles that fell behind.
func (p *Port) Stats() (written, dropped uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.written, p.dropped
}
