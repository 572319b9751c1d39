#!/usr/bin/env bash
# Deploys a generated site of NODES nodes into the virtual lab with the
# engine and the lab in processes of their own, so that the engine's own
# cost is measured (issue #15 item 5):
#
#   orchestrator lab --nodes N     the simulated MAAS, machines and BMCs
#   orchestrator serve             the engine, its own state directory,
#                                  the lab's MAAS URL, API key and BMCs,
#                                  a CPU profile of the run
#   orchestrator deploy --server   all nodes, through the control API
#
# and prints ONE JSON summary: outcomes counted by the lab (POST
# /sim/audit: deployed, failed, stuck, leaked, duplicate deploys), wall
# time (the deploy task's start to its last node's outcome) against the
# floor (the longest any machine waited in the lab's phases, as the demo
# measures it), peak RSS (VmHWM) and CPU seconds (utime+stime) of the
# engine and of the lab, MAAS requests (and the machines the status poll
# asked MAAS for by ID, per node), and the engine's and the lab's
# CPU profiles with `go tool pprof -top -nodecount 25` of each, and the
# engine's in-use heap profile at its peak (serve --heap-profile; the top
# in engine-heap-top.txt, the runtime's memory classes then in the summary).
#
#   scripts/bench-scale.sh [BIN [NODES [SCALE]]]   (bin/orchestrator 10000 0.5)
#
# BENCH_SCALE_OUT: where the profiles and logs stay (default: a new
# directory under /tmp); BENCH_SCALE_TIMEOUT: seconds the deploy may take
# (default: 3 floors + 120 s); BENCH_SCALE_LAB_BIN: another build for the
# lab (default BIN), to compare simulators under one engine;
# BENCH_SCALE_MEMORY_LIMIT: the engine's soft memory limit (default none);
# BENCH_SCALE_FULL_POLL: the engine's fullPollInterval (default its own);
# BENCH_SCALE_KEEP_STATE=1 keeps the engine's state.db in the output;
# BENCH_SCALE_PPROF=127.0.0.1:PORT serves the engine's net/http/pprof there
# (an execution trace: /debug/pprof/trace?seconds=5), BENCH_SCALE_LAB_PPROF
# the lab's. Exit status 1 when not every node deployed
# by the lab's count or the deploy timed out.
set -euo pipefail
bin=${1:-bin/orchestrator}
nodes=${2:-10000}
scale=${3:-0.5}
case $bin in /*) ;; *) bin=$PWD/$bin ;; esac
lab_bin=${BENCH_SCALE_LAB_BIN:-$bin}
case $lab_bin in /*) ;; *) lab_bin=$PWD/$lab_bin ;; esac
[ -x "$bin" ] || { echo "bench-scale: no binary at $bin (make build)" >&2; exit 2; }
[ -x "$lab_bin" ] || { echo "bench-scale: no binary at $lab_bin" >&2; exit 2; }
for tool in jq curl awk python3; do
  command -v "$tool" >/dev/null || { echo "bench-scale: needs $tool" >&2; exit 2; }
done
out=${BENCH_SCALE_OUT:-$(mktemp -d /tmp/slipway-bench-scale.XXXXXX)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/slipway-bench-scale-work.XXXXXX)
# Nominal floor of a generated node: commission 5 min + deploy 8 min +
# boot 30 s, scaled.
floor_nominal=$(awk -v s="$scale" 'BEGIN { printf "%d", 810 * s }')
timeout=${BENCH_SCALE_TIMEOUT:-$((3 * floor_nominal + 120))}
# 10,000 BMCs are 10,000 UDP sockets in the lab.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

lab_pid=
serve_pid=
# stop PID: interrupt a process this script started, kill it after 20 s.
stop() {
  local pid=$1 i
  [ -n "$pid" ] || return 0
  kill -INT "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 200; i++)); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  stop "$serve_pid"
  stop "$lab_pid"
  rm -rf "$work"
}
trap cleanup EXIT

# wait_for FILE PATTERN SECONDS: until FILE has a line matching PATTERN.
wait_for() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -qE "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "bench-scale: no '$2' in $1 after $3 s:" >&2
  tail -n 20 "$1" >&2
  return 1
}

# proc_stats PID: "VmHWM-KiB cpu-seconds" of a running process.
clk=$(getconf CLK_TCK)
proc_stats() {
  local hwm ticks
  hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$1/status")
  # utime and stime are fields 14 and 15; the command name (field 2) may
  # hold spaces, so count from after its closing parenthesis.
  ticks=$(sed 's/^.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }')
  echo "$hwm $(awk -v t="$ticks" -v c="$clk" 'BEGIN { printf "%.2f", t / c }')"
}

now() { date +%s.%N; }

# 1. The lab: the generated site, in its own process.
t0=$(now)
"$lab_bin" lab --nodes "$nodes" --site-dir "$work/site" --maas-listen 127.0.0.1:0 \
  --time-scale "$scale" --cpu-profile "$out/lab.pprof" ${BENCH_SCALE_LAB_PPROF:+--pprof "$BENCH_SCALE_LAB_PPROF"} >"$work/lab.json" 2>"$out/lab.log" &
lab_pid=$!
wait_for "$work/lab.json" '^\{' 600
lab_start=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
maas_url=$(jq -r .maas_url "$work/lab.json")
stats_url=$(jq -r .stats_url "$work/lab.json")
audit_url=${stats_url%/stats}/audit

# 2. The engine's state: the same site with a layer pointing at the lab's
# MAAS, the secrets stored as an operator stores them, the BMC ports.
state=$work/engine/state.db
mkdir -p "$work/engine" "$work/layer"
site_name=$(awk '/^kind: Site/ { s = 1 } s && /^  name:/ { print $2; exit } s && /^metadata: *\{name:/ { gsub(/[{},]/, " "); print $3; exit }' "$work"/site/*.yaml)
# The nodes' agents call the introspection API at the URL the Site names:
# a free loopback port of this run's.
intro_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/layer/site.yaml" <<EOF
apiVersion: slipway/v1
kind: Site
metadata: {name: $site_name}
spec:
  maas: {url: "$maas_url", apiKey: "secret:maas-api-key"}
  introspection: {url: "http://127.0.0.1:$intro_port"}
EOF
mem_limit=${BENCH_SCALE_MEMORY_LIMIT:-0}
poll_ms=$(awk -v s="$scale" 'BEGIN { p = 5000 * s; if (p < 20) p = 20; printf "%d", p }')
{
  echo "state: $state"
  echo "listen: 127.0.0.1:0"
  echo "introspectionListen: 127.0.0.1:$intro_port"
  # As the demo's engine (labrun): poll every 5 s scaled, 128
  # driver calls in flight, 64 to MAAS, 32 to BMCs (the IPMI driver's own
  # maxConcurrent), waits at the
  # lab's time scale, the sweep only at start.
  echo "pollInterval: ${poll_ms}ms"
  echo "globalLimit: 128"
  echo "provisionerLimit: 64"
  echo "oobLimit: 32"
  echo "timeScale: $scale"
  # Go's soft memory limit (BENCH_SCALE_MEMORY_LIMIT, e.g. 800MiB; 0, the
  # default: none, as #39's RSS target is stated).
  [ "$mem_limit" = 0 ] || echo "memoryLimit: $mem_limit"
  echo "sweepInterval: 24h"
  # BENCH_SCALE_FULL_POLL: the poll's full read period (default: the
  # engine's, one minute scaled).
  [ -z "${BENCH_SCALE_FULL_POLL:-}" ] || echo "fullPollInterval: $BENCH_SCALE_FULL_POLL"
  echo "bmcEndpoints:"
  jq -r '.bmcs[] | "  \(.node): 127.0.0.1:\(.port)"' "$work/lab.json"
} >"$work/engine.yaml"
{
  "$bin" apply --state "$state" "$work/site" "$work/layer"
  jq -r .api_key "$work/lab.json" | "$bin" secret set maas-api-key --state "$state"
  printf '%s' lab-bmc-password | "$bin" secret set bmc-admin --state "$state"
  printf '%s' lab0ab.0123456789abcdef | "$bin" secret set kubeadm-join-token --state "$state"
} >"$out/apply.log" 2>&1

# 3. The engine, with a CPU profile of the whole run.
"$bin" serve --config "$work/engine.yaml" --cpu-profile "$out/engine.pprof" --heap-profile "$out/engine-heap.pprof" \
  ${BENCH_SCALE_PPROF:+--pprof "$BENCH_SCALE_PPROF"} 2>"$out/serve.log" &
serve_pid=$!
wait_for "$out/serve.log" 'control API on http' 120
api=$(grep -oE 'control API on http://[0-9.:]+' "$out/serve.log" | head -n 1)
api=${api#control API on }
token=$(cat "$work/engine/admin.token")
export SLIPWAY_SERVER=$api SLIPWAY_TOKEN=$token
"$bin" prepare-site -o json >"$out/prepare-site.json" 2>>"$out/serve.log" || {
  echo "bench-scale: prepare-site failed:" >&2
  jq -r '.status + ": " + .message' "$out/prepare-site.json" >&2 || true
  exit 1
}

# 4. Deploy every node; wait (bounded) until the task ends.
read -r req0 listed0 <<<"$(curl -sf "$stats_url" | jq -r '"\(.total) \(.listed_by_id // 0)"')"
echo '{"claims": {}}' | curl -sf -X POST --data-binary @- "$audit_url" >"$out/audit-before.json"
read -r _ engine_cpu0 <<<"$(proc_stats "$serve_pid")"
read -r _ lab_cpu0 <<<"$(proc_stats "$lab_pid")"
submitted=$(now)
task=$("$bin" deploy --no-wait 2>>"$out/serve.log" | awk '/^task / { print $2 }')
[ -n "$task" ] || { echo "bench-scale: deploy stored no task" >&2; exit 1; }
status=running
timed_out=false
while :; do
  status=$(curl -sf -H "Authorization: Bearer $token" "$api/api/v1/tasks?action=deploy_nodes" |
    jq -r --arg id "$task" '[.items[]? // .[]? | select(.id == $id)][0].status // "unknown"') || status=unknown
  case $status in succeeded | failed | cancelled | partially_succeeded) break ;; esac
  if awk -v a="$submitted" -v b="$(now)" -v t="$timeout" 'BEGIN { exit !(b - a > t) }'; then
    timed_out=true
    break
  fi
  sleep 1
done
read -r engine_hwm engine_cpu1 <<<"$(proc_stats "$serve_pid")"
read -r lab_hwm lab_cpu1 <<<"$(proc_stats "$lab_pid")"
read -r req1 listed1 <<<"$(curl -sf "$stats_url" | jq -r '"\(.total) \(.listed_by_id // 0)"')"

# 5. What the lab says: outcomes from its own state, the floor since the
# task started; the engine's node records only say which machine each
# node claims.
curl -sf -H "Authorization: Bearer $token" "$api/api/v1/tasks/$task" >"$out/task.json"
"$bin" nodes -o json >"$work/nodes.json" 2>>"$out/serve.log"
started=$(jq -r '.started // .created' "$out/task.json")
jq --arg since "$started" '{since: $since, claims: (map(select((.machine_id // "") != "") | {key: .name, value: .machine_id}) | from_entries)}' \
  "$work/nodes.json" >"$work/audit-request.json"
curl -sf -X POST --data-binary @"$work/audit-request.json" "$audit_url" >"$out/audit.json"
curl -sf "$stats_url" >"$out/stats-after.json"

# 5b. With BENCH_SCALE_PLAN=1: plan the deployed site through the API
# (issue #35): the unchanged design (exit 0 expected) and the design with
# a tag added to every node's root profile (exit 2, every node
# `configure`). The floor is what any plan of these nodes must do: read
# every machine from the lab's MAAS, 500 to a request as the planner
# does, two requests at a time as it does, the bytes read and thrown away (curl, the
# MAAS key in a 0600 header file, never an argument).
echo null >"$out/plan.json"
if [ "${BENCH_SCALE_PLAN:-0}" = 1 ]; then
  plan_run() { # plan_run NAME ROOT...: wall seconds and exit status into $out/plan-NAME.*
    local name=$1 t rc=0
    shift
    t=$(now)
    "$bin" plan -o json "$@" >"$out/plan-$name.json" 2>>"$out/serve.log" || rc=$?
    awk -v a="$t" -v b="$(now)" -v rc="$rc" 'BEGIN { printf "%.3f %d\n", b - a, rc }' >"$out/plan-$name.time"
  }
  plan_run same "$work/site" "$work/layer"
  cp -r "$work/site" "$work/site-tagged"
  sed -i 's/^  tags: \[synthetic\]$/  tags: [synthetic, bench-plan]/' "$work/site-tagged/profiles.yaml"
  plan_req0=$(curl -sf "$stats_url" | jq .total)
  plan_run tagged "$work/site-tagged" "$work/layer"
  plan_requests=$(($(curl -sf "$stats_url" | jq .total) - plan_req0))
  IFS=: read -r ck tk ts < <(jq -r .api_key "$work/lab.json")
  hdr=$work/oauth.hdr
  (umask 077 && printf 'Authorization: OAuth oauth_version="1.0", oauth_signature_method="PLAINTEXT", oauth_consumer_key="%s", oauth_token="%s", oauth_signature="&%s", oauth_nonce="bench", oauth_timestamp="%s"\n' \
    "$ck" "$tk" "$ts" "$(date +%s)" >"$hdr")
  jq -r '.[] | select((.machine_id // "") != "") | .machine_id' "$work/nodes.json" | split -l 500 - "$work/ids."
  t=$(now)
  for f in "$work"/ids.*; do
    printf '%s\n' "${maas_url%/}/api/2.0/machines/?$(sed 's/^/id=/' "$f" | paste -sd'&')"
  done >"$work/floor-urls"
  # Two requests at a time, as the engine runs two batches at once.
  xargs -P 2 -n 1 curl -sf -H @"$hdr" -o /dev/null <"$work/floor-urls" || {
    echo "bench-scale: the floor's machine read failed" >&2
    exit 1
  }
  floor_read=$(awk -v a="$t" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
  # A peer in the same run: validating the same design locally, whole
  # process (what the plan's upload and validation cost, without MAAS).
  t=$(now)
  "$bin" validate "$work/site-tagged" "$work/layer" >/dev/null
  validate_s=$(awk -v a="$t" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
  read -r same_s same_rc <"$out/plan-same.time"
  read -r tagged_s tagged_rc <"$out/plan-tagged.time"
  jq -n --argjson same_s "$same_s" --argjson same_rc "$same_rc" --argjson tagged_s "$tagged_s" \
    --argjson tagged_rc "$tagged_rc" --argjson floor "$floor_read" --argjson validate_s "$validate_s" --argjson plan_requests "$plan_requests" \
    --slurpfile same "$out/plan-same.json" --slurpfile tagged "$out/plan-tagged.json" '{
      unchanged: {seconds: $same_s, exit: $same_rc, counts: $same[0].counts, observed: $same[0].observed},
      tagged: {seconds: $tagged_s, exit: $tagged_rc, counts: $tagged[0].counts, observed: $tagged[0].observed, maas_requests: $plan_requests},
      floor_read_seconds: $floor, validate_seconds: $validate_s,
      tagged_over_floor: (if $floor > 0 then ($tagged_s / $floor * 100 | round / 100) else null end)
    }' >"$out/plan.json"
fi

# 6. Stop both (their CPU profiles are written at shutdown) and read the
# profiles.
stop "$serve_pid"
serve_pid=
state_bytes=$(stat -c %s "$state")
# BENCH_SCALE_KEEP_STATE=1: the engine's state database stays in the
# output directory (state.db), to read what it holds.
[ "${BENCH_SCALE_KEEP_STATE:-0}" = 0 ] || cp "$state" "$out/state.db"
stop "$lab_pid"
lab_pid=
go tool pprof -top -nodecount 25 "$bin" "$out/engine.pprof" >"$out/engine-top.txt" 2>/dev/null || true
go tool pprof -top -nodecount 25 "$lab_bin" "$out/lab.pprof" >"$out/lab-top.txt" 2>/dev/null || true
# The engine's heap at its peak (serve --heap-profile): what is live then,
# and the runtime's memory classes at that moment.
[ -s "$out/engine-heap.pprof.json" ] || echo null >"$out/engine-heap.pprof.json"
[ -s "$out/engine-heap.pprof.rss.json" ] || echo null >"$out/engine-heap.pprof.rss.json"
go tool pprof -sample_index=inuse_space -top -nodecount 40 "$bin" "$out/engine-heap.pprof" >"$out/engine-heap-top.txt" 2>/dev/null || true

jq -n \
  --slurpfile task "$out/task.json" --slurpfile heap "$out/engine-heap.pprof.json" --slurpfile rss "$out/engine-heap.pprof.rss.json" --slurpfile plan "$out/plan.json" --slurpfile audit "$out/audit.json" --slurpfile before "$out/audit-before.json" \
  --argjson nodes "$nodes" --argjson scale "$scale" --arg timed_out "$timed_out" --arg status "$status" \
  --argjson engine_hwm "$engine_hwm" --argjson lab_hwm "$lab_hwm" \
  --argjson engine_cpu "$(awk -v a="$engine_cpu0" -v b="$engine_cpu1" 'BEGIN { printf "%.2f", b - a }')" \
  --argjson engine_cpu_total "$engine_cpu1" \
  --argjson lab_cpu "$(awk -v a="$lab_cpu0" -v b="$lab_cpu1" 'BEGIN { printf "%.2f", b - a }')" \
  --argjson lab_cpu_total "$lab_cpu1" --argjson lab_start "$lab_start" \
  --argjson requests "$((req1 - req0))" --argjson polled "$((listed1 - listed0))" \
  --arg engine_profile "$out/engine.pprof" --arg lab_profile "$out/lab.pprof" \
  --arg engine_bin "$bin" --arg lab_bin "$lab_bin" --arg mem_limit "$mem_limit" --argjson state_bytes "$state_bytes" \
  --rawfile engine_top "$out/engine-top.txt" --rawfile lab_top "$out/lab-top.txt" '
  def secs: sub("\\.[0-9]+"; "") | sub("Z$"; "Z") | fromdateiso8601;
  # RFC 3339 with nanoseconds: whole seconds plus the fraction.
  def ts: . as $t | ($t | secs) + (($t | capture("\\.(?<f>[0-9]+)") // {f: "0"}).f | "0." + . | tonumber);
  $task[0] as $t | $audit[0] as $a |
  ([$t.results[]?.finished | select(. != null)] | map(ts) | max) as $last |
  (($last // ($t.finished | ts)) - ($t.started | ts)) as $wall |
  {
    nodes: $nodes, time_scale: $scale, engine_memory_limit: $mem_limit, task_status: $status, timed_out: ($timed_out == "true"),
    engine_bin: $engine_bin, lab_bin: $lab_bin,
    deployed: $a.deployed, failed: $a.failed, stuck: $a.stuck, leaked: $a.leaked,
    duplicate_deploys: $a.duplicate_deploys, duplicate_allocations: $a.duplicate_allocations,
    failed_nodes: $a.failed_nodes, stuck_nodes: $a.stuck_nodes,
    wall_seconds: ($wall * 1000 | round / 1000),
    lab_last_agent_seconds: $a.last_agent_seconds,
    phase_starts: $a.phase_starts,
    floor_seconds: $a.floor_seconds,
    wall_over_floor: (if $a.floor_seconds > 0 then ($wall / $a.floor_seconds * 1000 | round / 1000) else null end),
    engine_peak_rss_mib: ($engine_hwm / 1024 | round),
    engine_state_file_mib: ($state_bytes / 1048576 | round),
    lab_peak_rss_mib: ($lab_hwm / 1024 | round),
    engine_cpu_seconds: $engine_cpu, engine_cpu_seconds_total: $engine_cpu_total,
    lab_cpu_seconds: $lab_cpu, lab_cpu_seconds_total: $lab_cpu_total, lab_start_seconds: $lab_start,
    maas_requests: $requests, maas_requests_per_node: ($requests / $nodes * 10 | round / 10),
    maas_machines_polled_per_node: ($polled / $nodes * 10 | round / 10),
    maas_requests_by_kind: ($a.maas_requests_by_kind | with_entries(.value -= ($before[0].maas_requests_by_kind[.key] // 0)) | with_entries(select(.value > 0))),
    engine_heap_at_peak: $heap[0], engine_rss_parts_at_peak: $rss[0], engine_heap_profile: ($engine_profile | sub("engine.pprof$"; "engine-heap.pprof")),
    engine_cpu_profile: $engine_profile, engine_profile_top: ($engine_top | split("\n") | map(select(. != ""))),
    plan: $plan[0],
    lab_cpu_profile: $lab_profile, lab_profile_top: ($lab_top | split("\n") | map(select(. != "")))
  }' | tee "$out/summary.json"
ok=$(jq '.deployed == .nodes and .leaked == 0 and .duplicate_deploys == 0 and (.timed_out | not)' "$out/summary.json")
[ "$ok" = true ]
