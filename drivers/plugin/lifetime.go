package plugin

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// A plugin lives no longer than the orchestrator that started it. The
// host passes its PID in envHostPID; the plugin side (Serve) asks the
// kernel for a signal when its parent dies (Linux: PR_SET_PDEATHSIG,
// lifetime_linux.go), checks that its parent is still that host (it may
// have died before the request took hold) and polls its parent PID, which
// changes when the host dies and the plugin is re-parented.
const envHostPID = "SLIPWAY_PLUGIN_HOST_PID"

// hostPollInterval is how often a plugin checks that its host runs.
const hostPollInterval = 250 * time.Millisecond

// hostEnv is the plugin's environment: the host's, with the host's PID.
func hostEnv() []string {
	env := os.Environ()
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, envHostPID+"=") {
			out = append(out, kv)
		}
	}
	return append(out, envHostPID+"="+strconv.Itoa(os.Getpid()))
}

// expectedHost is the PID of the host that started this plugin: the one
// it says in envHostPID, else (a host that does not say) the parent now.
func expectedHost() int {
	if pid, err := strconv.Atoi(os.Getenv(envHostPID)); err == nil && pid > 0 {
		return pid
	}
	return os.Getppid()
}

// bindToHost ends the plugin when its host is gone: at once when the host
// died before the plugin got here, otherwise when the kernel signals the
// parent's death or the poll sees another parent.
func bindToHost() {
	host := expectedHost()
	askParentDeathSignal()
	if p := os.Getppid(); p != host {
		hostGone(host, p)
	}
	go func() {
		t := time.NewTicker(hostPollInterval)
		defer t.Stop()
		for range t.C {
			if p := os.Getppid(); p != host {
				hostGone(host, p)
			}
		}
	}()
}

// hostGone ends the plugin: its host died (the stderr line may reach no
// one; the host's log is gone with it).
func hostGone(host, parent int) {
	fmt.Fprintf(os.Stderr, "slipway driver plugin: the orchestrator (pid %d) that started this plugin is gone (parent now %d); exiting\n", host, parent)
	os.Exit(3)
}
