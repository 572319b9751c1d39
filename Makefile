# Slipway developer commands. `make help` lists them.
GO       ?= go
BIN      ?= bin/orchestrator
BENCH_BIN ?= bin/slipway-bench
FUZZTIME ?= 30s
BENCH_NODES ?= 10000
BENCH_DEPLOY_NODES ?= 1000
BENCH_TIME_SCALE ?= 0.1
BENCH_HOSTILE_MIB ?= 1 16 64

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build the orchestrator binary into bin/
	$(GO) build -o $(BIN) ./cmd/orchestrator

.PHONY: build-bench
build-bench: ## Build the benchmark tools (cmd/slipway-bench: bench-introspection, bench-once, gen-hostile, bench-fabric, bench-baseline, bench-images) into bin/
	$(GO) build -o $(BENCH_BIN) ./cmd/slipway-bench

.PHONY: test
# -timeout 25m: the orchestrator package alone takes 5 to 6 minutes under
# -race on 2 cores and passed go test's default 10 minutes when the
# machine was shared (#39 brings make test down).
# The slowest packages are named first: go test runs packages in the
# order given (two at once on 2 cores), and ./... alone starts the
# orchestrator package last, so that it ran alone for its last minutes
# (#39). A package named twice runs once.
# -p 4: test binaries run four at once on 2 cores. Many packages mostly
# wait (simulated hardware, child processes, timers): under -race the
# MAAS driver's tests use 18 CPU seconds in 130, etcdstore's 10 in 52,
# the OVS driver's 18 in 58, IPMI's 9 in 38, and at two at once each held
# one of the two slots beside the orchestrator package (#39).
SLOW_TEST_PKGS := ./orchestrator/ ./cmd/orchestrator/ ./drivers/server/maas/ ./api/
TEST_P ?= 4
test: ## Run vet and every test (what CI runs)
	$(GO) vet ./...
	$(GO) test -count=1 -run 'AllocatesNothing$$' ./introspection/ # allocation counts: exact only without -race
	$(GO) test -race -count=1 -p $(TEST_P) -timeout 25m $(SLOW_TEST_PKGS) ./...

# Linters, at the versions .ci/run installs. Found on PATH or in
# $(go env GOPATH)/bin; a missing one is skipped on a workstation and fails
# under CI=true.
GOLANGCI_LINT_VERSION ?= v2.15.0
STATICCHECK_VERSION   ?= v0.8.2
GOBIN_DIR := $(shell $(GO) env GOPATH)/bin
lint_tool = $(or $(shell command -v $(1) 2>/dev/null),$(wildcard $(GOBIN_DIR)/$(1)))

.PHONY: lint
lint: ## gofmt, go vet, golangci-lint and staticcheck (a missing linter fails when CI=true)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@$(call run_lint,golangci-lint,github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION),run ./...)
	@$(call run_lint,staticcheck,honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION),./...)

# run_lint runs tool $(1) with arguments $(3); when it is not installed it
# names the go install line ($(2)) and fails under CI=true.
define run_lint
tool="$(call lint_tool,$(1))"; \
if [ -n "$$tool" ]; then echo "$(1) $(3)"; "$$tool" $(3); \
elif [ "$$CI" = true ]; then echo "$(1) is not installed: go install $(2)"; exit 1; \
else echo "$(1) not installed (go install $(2)): skipped"; fi
endef

# The control API's contract: docs/openapi.json regenerated from the route
# table, linted with Redocly's CLI (the one .ci/run installs when
# SLIPWAY_REDOCLY is set, else npx at the same version), and the api tests,
# every request and answer of which is checked against the document.
REDOCLY_VERSION ?= 2.77.0
.PHONY: docs
docs: ## Regenerate the documents made from the code: docs/openapi.json and docs/asyncapi.yaml
	$(GO) run ./cmd/gendocs

.PHONY: contract
contract: docs ## Regenerate docs/openapi.json, lint it with Redocly, run the API's contract tests
	@if [ -n "$$SLIPWAY_REDOCLY" ]; then redocly="$$SLIPWAY_REDOCLY/node_modules/.bin/redocly"; \
	else redocly="npx --yes @redocly/cli@$(REDOCLY_VERSION)"; fi; \
	$$redocly lint --config redocly.yaml docs/openapi.json
	$(GO) test -count=1 ./api/...

.PHONY: bench
bench: build build-bench ## Benchmarks; validate of 10,000 nodes and of hostile YAML, a 1,000-node lab deploy on bbolt and on etcd, as whole processes
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x ./...
	scripts/bench-validate.sh $(BIN) $(BENCH_NODES)
	BENCH_BIN=$(BENCH_BIN) scripts/bench-hostile.sh $(BIN) $(BENCH_HOSTILE_MIB)
	scripts/bench-deploy.sh $(BIN) $(BENCH_DEPLOY_NODES) $(BENCH_TIME_SCALE)
	@if command -v etcd >/dev/null; then scripts/bench-deploy-etcd.sh $(BIN) $(BENCH_DEPLOY_NODES) $(BENCH_TIME_SCALE); \
	else echo "etcd not installed (apt-get install -y etcd-server): the etcd against bbolt deploy skipped"; fi
	@if command -v wrk >/dev/null && command -v nginx >/dev/null; then scripts/bench-introspection.sh $(BENCH_BIN) 10000 15; \
	else echo "wrk or nginx not installed (apt-get install -y wrk nginx): introspection load test skipped"; fi
	@if command -v chromium >/dev/null; then $(MAKE) --no-print-directory bench-ui; \
	else echo "chromium not installed (apt-get install -y chromium): the dashboard's frame-time bench skipped"; fi

.PHONY: bench-ui
bench-ui: ## The dashboard's site view at 10,000 nodes in Debian's chromium: frame intervals while 30,000 stage changes arrive (95th percentile under 50 ms)
	SLIPWAY_UI_FRAME_BUDGET=1 $(GO) test -count=1 -v -run '^TestSiteViewAt10000Nodes$$' ./ui

.PHONY: screenshots
screenshots: ## Regenerate the dashboard's screenshots in docs/images from the browser test (Debian's chromium)
	SLIPWAY_SCREENSHOTS=$(CURDIR)/docs/images $(GO) test -count=1 -run '^(TestDashboard|TestImagesView|TestTaskTimelineView)$$' ./ui

.PHONY: bench-scale
bench-scale: build ## 10,000 nodes at time scale 0.5, engine (serve) and lab in processes of their own; wall/floor, RSS, CPU, profiles
	scripts/bench-scale.sh $(BIN) $(or $(BENCH_SCALE_NODES),10000) $(or $(BENCH_SCALE_TIME_SCALE),0.5)

.PHONY: bench-fabric
bench-fabric: build-bench ## The ovs network driver configuring 1,000 generated nodes' ports (3 each, on 16 switches) on real Open vSwitch, production then quarantine, against ovs-vsctl's floor (root)
	scripts/bench-fabric.sh $(BENCH_BIN) $(or $(BENCH_FABRIC_NODES),1000) $(or $(BENCH_FABRIC_SWITCHES),16) $(or $(BENCH_FABRIC_WORKERS),8)

.PHONY: bench-baseline
bench-baseline: build-bench ## The baseline stage at 1,000 generated nodes, each with its own simulated Redfish BMC (a BIOS update, BIOS settings, a RAID-1 volume), outcomes counted from the BMCs, time per node against the lab's update and reset durations (the floor)
	scripts/bench-baseline.sh $(BENCH_BIN) $(or $(BENCH_BASELINE_NODES),1000) $(or $(BENCH_BASELINE_PARALLEL),32) $(or $(BENCH_BASELINE_TIME_SCALE),0.01)

.PHONY: bench-images
bench-images: build-bench ## Upload one generated image (512 MiB; BENCH_IMAGES_MIB) into a lab MAAS region by Slipway's sync and by curl (whole, and per 4 MiB chunk); MiB/s and the ratio, outcomes from the region
	scripts/bench-images.sh $(BENCH_BIN) $(or $(BENCH_IMAGES_MIB),512)

.PHONY: bench-fabric-gnmi
bench-fabric-gnmi: build-bench ## The gnmi network driver configuring 1,000 generated nodes' ports (3 each, on 25 switches of the lab's gNMI target), 64 calls at once, against a plain gNMI client's floor
	scripts/bench-fabric.sh $(BENCH_BIN) $(or $(BENCH_FABRIC_NODES),1000) $(or $(BENCH_FABRIC_SWITCHES),25) $(or $(BENCH_FABRIC_WORKERS),64) gnmi

.PHONY: bench-plan
bench-plan: build ## Plan a deployed 10,000-node lab site through the API (unchanged, then every node retagged) against reading every machine once
	BENCH_SCALE_PLAN=1 scripts/bench-scale.sh $(BIN) $(or $(BENCH_PLAN_NODES),10000) $(or $(BENCH_PLAN_TIME_SCALE),0.2)

.PHONY: ha-demo
ha-demo: ## Three serve replicas on a three-member etcd (Debian's etcd-server), 200 lab nodes, the leader SIGKILLed twice mid-deploy, with the lab's progress
	$(GO) test -count=1 -v -timeout 15m -run '^TestHAFailover$$' ./cmd/orchestrator

.PHONY: bench-ha
bench-ha: ## Failover time over 10 SIGKILLs of the leader (default 10 s lease) while 200 nodes deploy at time scale 0.15
	SLIPWAY_HA_KILLS=10 SLIPWAY_HA_TTL=10 SLIPWAY_HA_SCALE=0.15 SLIPWAY_HA_BUDGET_MIN=25 \
	  $(GO) test -count=1 -v -timeout 30m -run '^TestHAFailover$$' ./cmd/orchestrator

.PHONY: chaos
chaos: ## 200 nodes, faults, 3 real SIGKILLs of the engine (SLIPWAY_CHAOS_SEED=N replays a seed); then chaos-lifecycle
	SLIPWAY_CHAOS=1 $(GO) test -count=1 -v -timeout 10m -run '^TestChaosKill9$$' ./cmd/orchestrator
	$(MAKE) --no-print-directory chaos-lifecycle

# The randomized lifecycle runs: LIFECYCLE_RUNS seeded sequences (seeds
# SLIPWAY_LIFECYCLE_SEED, else random, and on), in LIFECYCLE_SHARDS test
# processes at once, each sequence with a lab and a serve of its own.
LIFECYCLE_RUNS   ?= 200
LIFECYCLE_SHARDS ?= 4
.PHONY: chaos-lifecycle
chaos-lifecycle: ## LIFECYCLE_RUNS (200) seeded lifecycle sequences against the lab and serve, invariants from the lab (docs/operations.md)
	@mkdir -p bin && $(GO) test -c -o bin/orchestrator.test ./cmd/orchestrator
	@seed=$${SLIPWAY_LIFECYCLE_SEED:-$$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}; logs=$$(mktemp -d); \
	echo "chaos-lifecycle: $(LIFECYCLE_RUNS) sequences from seed $$seed in $(LIFECYCLE_SHARDS) processes; logs in $$logs"; \
	pids=""; for i in $$(seq 0 $$(($(LIFECYCLE_SHARDS) - 1))); do \
	  (cd cmd/orchestrator && SLIPWAY_LIFECYCLE_RUNS=$(LIFECYCLE_RUNS) SLIPWAY_LIFECYCLE_SEED=$$seed SLIPWAY_LIFECYCLE_SHARD=$$i/$(LIFECYCLE_SHARDS) \
	    ../../bin/orchestrator.test -test.count=1 -test.v -test.timeout 150m -test.run '^TestLifecycleRandomChaos$$' >$$logs/shard-$$i.log 2>&1) & pids="$$pids $$!"; \
	done; rc=0; for p in $$pids; do wait $$p || rc=1; done; \
	grep -h -e 'sequences from seed' -e 'ops run' -e 'broke an invariant' -e 'replay:' $$logs/shard-*.log; \
	ran=$$(cat $$logs/shard-*.log | grep -c -- ' ops run, '); broke=$$(cat $$logs/shard-*.log | grep -c -- ' broke an invariant at op '); \
	echo "chaos-lifecycle: $$ran sequences run, $$((ran - broke)) passed, $$broke broke an invariant"; \
	exit $$rc

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 30s)
	$(GO) test -run '^$$' -fuzz '^FuzzParseFile$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./ingest/yaml
	$(GO) test -run '^$$' -fuzz '^FuzzIngestResolve$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./ingest/yaml
	$(GO) test -run '^$$' -fuzz '^FuzzValueEstimate$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./ingest/yaml
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./ingest/archive
	$(GO) test -run '^$$' -fuzz '^FuzzParseSize$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./design
	$(GO) test -run '^$$' -fuzz '^FuzzParseSecretRef$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./design
	$(GO) test -run '^$$' -fuzz '^FuzzRequests$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./sim/maas
	$(GO) test -run '^$$' -fuzz '^FuzzParsePackets$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./sim/bmc
	$(GO) test -run '^$$' -fuzz '^FuzzParseReplies$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./drivers/oob/ipmi
	$(GO) test -run '^$$' -fuzz '^FuzzRequestBodies$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./api
	$(GO) test -run '^$$' -fuzz '^FuzzActionReport$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./introspection
	$(GO) test -run '^$$' -fuzz '^FuzzToken$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./introspection
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeList$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./drivers/server/maas

.PHONY: demo
demo: build ## Run the end-to-end demo on the example site, its switch ports in Open vSwitch with the connectivity measured (as root; apt-get install openvswitch-switch iproute2 iputils-ping)
	$(BIN) demo --site examples/site-yaml --site examples/two-sites
