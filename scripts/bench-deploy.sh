#!/usr/bin/env bash
# Deploys a generated site into the virtual lab as a whole process and
# prints the demo's JSON summary (wall time against the floor: the longest
# any machine waited in the lab's phases, PXE enlistment if it enlisted
# itself, commissioning, deployment, the boot before its node agent
# reports; outcomes counted by the lab; MAAS requests) plus the ratio and
# the peak RSS. Target ratio: at most 1.25.
set -euo pipefail
bin=${1:-bin/orchestrator}
nodes=${2:-1000}
scale=${3:-0.1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f "deploy $nodes nodes: %e s wall, %M KiB peak RSS" -o "$out.time" \
    "$bin" demo --nodes "$nodes" --time-scale "$scale" -o json >"$out" || status=$?
else
  "$bin" demo --nodes "$nodes" --time-scale "$scale" -o json >"$out" || status=$?
fi
cat "$out"
[ "$status" = 0 ] || echo "demo exited with status $status (the summary above says which nodes did not deploy)" >&2
python3 - "$out" <<'PY' 2>/dev/null || true
import json, sys
r = json.load(open(sys.argv[1]))
print("deploy %d nodes: %d deployed by the lab's count (engine: %d), wall %.1f s / floor %.1f s = %.2f, %.1f MAAS requests per node" % (
    r["nodes"], r["deployed"], r["engine_deployed"], r["wall_seconds"], r["floor_seconds"],
    r["wall_seconds"] / r["floor_seconds"], r["maas_requests"] / r["nodes"]))
PY
[ -f "$out.time" ] && cat "$out.time" && rm -f "$out.time"
exit "$status"
