//go:build linux

package plugin

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// askParentDeathSignal asks the kernel to SIGKILL this process when its
// parent dies. The setting belongs to the calling thread, so the calling
// goroutine (Serve's, which blocks for the plugin's life) stays on it.
func askParentDeathSignal() {
	runtime.LockOSThread()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0); errno != 0 {
		fmt.Fprintf(os.Stderr, "slipway driver plugin: prctl(PR_SET_PDEATHSIG): %v; relying on polling the parent\n", errno)
	}
}

// bindChild makes the kernel SIGKILL the plugin when the thread that
// starts it ends: for plugins built before Serve asked for it itself.
func bindChild(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// spawner runs plugin starts on one OS thread that lives until stop. The
// kernel's parent-death signal fires when the *thread* that forked the
// child ends, not the process; Go ends a thread when a goroutine locked
// to it returns, which would kill a healthy host's plugin. A thread kept
// locked by spawner's own goroutine ends only at stop, after the plugin.
type spawner struct {
	mu   sync.Mutex // held for a whole start: one at a time, and stop waits
	reqs chan func()
}

// do runs f on the spawner's thread.
func (s *spawner) do(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reqs == nil {
		s.reqs = make(chan func())
		go func(reqs chan func()) {
			runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
			for f := range reqs {
				f()
			}
		}(s.reqs)
	}
	done := make(chan struct{})
	s.reqs <- func() { defer close(done); f() }
	<-done
}

// stop ends the thread; call it once the plugins it started are stopped.
func (s *spawner) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reqs != nil {
		close(s.reqs)
		s.reqs = nil
	}
}
