#!/usr/bin/env bash
# The baseline stage at scale: generated nodes of a Redfish hardware
# profile with a baseline (one BIOS firmware update that takes effect at
# the system reset, two BIOS settings, a RAID-1 volume), each machine with
# its own simulated Redfish BMC over TLS, deployed by the engine through
# the real Redfish driver. Outcomes are counted from each BMC's own state
# (version in effect, settings in effect and nothing pending, the volume,
# exactly one update accepted, one system reset that applied it, no reset
# during an update); the floor is the lab's own durations:
# max(one node's chain = update + BMC reset if any + volume build + system
# reset, updates x update time / the Site's maxParallel).
# Usage: bench-baseline.sh [bench] [nodes] [maxParallel] [time scale]
set -euo pipefail
bench=${1:-bin/slipway-bench}
nodes=${2:-1000}
parallel=${3:-32}
scale=${4:-0.01}
echo "$(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f "bench-baseline $nodes nodes: %e s wall, %U s user, %S s sys, %M KiB peak RSS" \
    "$bench" bench-baseline --nodes "$nodes" --max-parallel "$parallel" --time-scale "$scale"
else
  "$bench" bench-baseline --nodes "$nodes" --max-parallel "$parallel" --time-scale "$scale"
fi
echo "$(date -u +%FT%TZ) load after: $(cut -d' ' -f1-3 /proc/loadavg)"
