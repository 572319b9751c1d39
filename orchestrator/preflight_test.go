package orchestrator_test

import (
	"strings"
	"testing"

	"github.com/slipway-dev/slipway/design"
	"github.com/slipway-dev/slipway/design/designtest"
	"github.com/slipway-dev/slipway/labrun"
	"github.com/slipway-dev/slipway/orchestrator/record"
	"github.com/slipway-dev/slipway/sim/lab"
	"github.com/slipway-dev/slipway/sim/maas"
	"github.com/slipway-dev/slipway/statestore/memory"
)

// untouched asserts from the lab itself, not the engine's records, that
// no machine was touched since before: no MAAS request changing machines,
// no machine counted by MAAS's lifecycle records, every simulated
// machine powered off, with its boot device and disk as they were.
func untouched(t *testing.T, env *labrun.Env, before maas.StatsSnapshot) {
	t.Helper()
	counts := map[string]int{}
	for _, r := range before.Requests {
		counts[r.Request] = r.Count
	}
	for _, r := range env.Lab.MAAS.Stats().Snapshot().Requests {
		write := !strings.HasPrefix(r.Request, "GET ") // the engine's sweep lists machines at start
		if r.Count > counts[r.Request] && write && (strings.Contains(r.Request, "/machines") || strings.Contains(r.Request, "/nodes")) {
			t.Errorf("MAAS was asked %q %d time(s)", r.Request, r.Count-counts[r.Request])
		}
	}
	if lc := env.Lab.MAAS.Lifecycle(); len(lc) != 0 {
		t.Errorf("MAAS counted lifecycle events of %d machine(s): %v", len(lc), lc)
	}
	for _, m := range env.Lab.Machines() {
		if dev, _, _ := m.BootDevice(); m.IsPoweredOn() || dev != "" || m.OS() != "" {
			t.Errorf("machine %s was touched: powered on %t, boot device %q, OS %q", m.Name, m.IsPoweredOn(), dev, m.OS())
		}
	}
}

// TestPreflightFailsBeforeAnyMachine: a deploy (or prepare_nodes) whose
// nodes need a secret that is not set, an image or a kernel MAAS has not
// synced fails at once, each node failed at pending, the task naming what
// is missing and who needs it, and no machine is touched.
func TestPreflightFailsBeforeAnyMachine(t *testing.T) {
	t.Parallel() // the secrets' environment variables are unset for the package (TestMain)
	for _, c := range []struct {
		name    string
		action  record.Action
		secrets map[string]string
		edit    func(d *design.Design)
		want    []string
	}{{
		name: "secret", action: record.ActionDeployNodes, secrets: map[string]string{"bmc-admin": lab.DefaultBMCPassword},
		want: []string{`secret "kubeadm-join-token" is not set (needed by boot action kubernetes-join on nodes r01-cmp01, r01-cmp02, … 6 more)`,
			"'orchestrator secret set kubeadm-join-token'"},
	}, {
		name: "bmc password", action: record.ActionPrepareNodes, secrets: map[string]string{},
		want: []string{`secret "bmc-admin" is not set (needed by the BMC password of nodes r01-cmp01, r01-cmp02, … 6 more)`},
	}, {
		name: "image", action: record.ActionDeployNodes,
		edit: func(d *design.Design) { d.Nodes["r02-gpu01"].Spec.Platform.Image = "plucky" },
		want: []string{`image "plucky" (ubuntu/plucky) is not among the provisioner's boot images (ubuntu/focal, ubuntu/jammy, ubuntu/noble) (needed by node r02-gpu01)`},
	}, {
		name: "kernel", action: record.ActionDeployNodes,
		edit: func(d *design.Design) {
			d.Nodes["r01-cmp01"].Spec.Platform.Kernel = "hwe-24.04"
			d.Nodes["r01-cmp02"].Spec.Platform.Kernel = "hwe-24.04"
		},
		want: []string{`kernel "hwe-24.04" is not among the provisioner's kernels for ubuntu/jammy (ga-22.04, hwe-22.04) (needed by nodes r01-cmp01, r01-cmp02)`},
	}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := designtest.Example(t)
			if c.edit != nil {
				c.edit(d)
			}
			env := secretsEnv(t, d, c.secrets)
			e := engine(t, env)
			before := env.Lab.MAAS.Stats().Snapshot()
			task, res := run(t, e, record.Request{Action: c.action}, record.TaskFailed)
			untouched(t, env, before)
			for _, w := range c.want {
				if !strings.Contains(task.Message, w) {
					t.Errorf("task message %q\nlacks %q", task.Message, w)
				}
			}
			for _, r := range res {
				if r.Outcome != record.OutcomeFailed || r.Stage != record.StagePending || !strings.HasPrefix(r.Reason, "preflight: ") || !r.Started.IsZero() {
					t.Errorf("%s: %s at %s (started %v): %s", r.Node, r.Outcome, r.Stage, r.Started, r.Reason)
				}
			}
			if strings.Contains(task.Message, lab.DefaultBMCPassword) {
				t.Error("the task message holds a secret's value")
			}
		})
	}
}

// TestPreflightRetryAfterFix: the operator sets the missing secret (in
// the encrypted store, as `orchestrator secret set` does) and retries
// the failed task: it deploys every node.
func TestPreflightRetryAfterFix(t *testing.T) {
	t.Parallel() // SLIPWAY_SECRET_KUBEADM_JOIN_TOKEN is unset for the package (TestMain)
	d := designtest.Example(t)
	env := secretsEnv(t, d, map[string]string{"bmc-admin": lab.DefaultBMCPassword})
	e := engine(t, env)
	run(t, e, record.Request{Action: record.ActionPrepareSite}, record.TaskSucceeded)
	task, _ := run(t, e, record.Request{Action: record.ActionDeployNodes}, record.TaskFailed)
	if err := env.SecretStore.Put(t.Context(), "kubeadm-join-token", "abcdef.0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.TaskVerb(t.Context(), task.ID, record.VerbRetry, "test"); err != nil {
		t.Fatal(err)
	}
	if got, err := e.Wait(t.Context(), task.ID); err != nil || got.Status != record.TaskSucceeded {
		_, res, _ := e.Task(t.Context(), task.ID)
		t.Fatalf("retry: %s (%s), %v; %+v", got.Status, got.Message, err, res)
	}
	audit(t, env, e, len(d.Nodes))
	// The join script the nodes fetched holds the stored token.
	b := env.Lab.Machine("r01-cmp01").Bootstrap()
	if !strings.Contains(string(b.Files["usr/local/sbin/slipway-kubeadm-join"].Data), "abcdef.0123456789abcdef") {
		t.Errorf("the rendered join script lacks the stored token")
	}
}

// TestVerifySitePreflight: verify_site checks what every node needs.
func TestVerifySitePreflight(t *testing.T) {
	t.Parallel() // SLIPWAY_SECRET_KUBEADM_JOIN_TOKEN is unset for the package (TestMain)
	d := designtest.Example(t)
	env := secretsEnv(t, d, map[string]string{"bmc-admin": lab.DefaultBMCPassword})
	e := engine(t, env)
	task, _ := run(t, e, record.Request{Action: record.ActionVerifySite}, record.TaskFailed)
	if !strings.Contains(task.Message, `secret "kubeadm-join-token" is not set (needed by boot action kubernetes-join`) {
		t.Errorf("verify_site: %s", task.Message)
	}
	if err := env.SecretStore.Put(t.Context(), "kubeadm-join-token", "abcdef.0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	task, _ = run(t, e, record.Request{Action: record.ActionVerifySite}, record.TaskSucceeded)
	if !strings.Contains(task.Message, "preflight: the 2 secret(s) and 1 image(s) the 8 node(s) need are all there") {
		t.Errorf("verify_site: %s", task.Message)
	}
}

// secretsEnv starts the lab with only the given secrets stored.
func secretsEnv(t *testing.T, d *design.Design, secrets map[string]string) *labrun.Env {
	t.Helper()
	env, err := labrun.Start(t.Context(), labrun.Options{Design: d, Store: memory.New(), TimeScale: 0.001, Seed: 7, Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	return env
}
