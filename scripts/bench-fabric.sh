#!/usr/bin/env bash
# Port-configuration time of a network driver at scale: generated nodes
# (3 cabled ports each: a PXE NIC and an LACP bond of two) spread over
# switches, configured through the driver, against a floor measured in
# the same run.
#   ovs (default): real Open vSwitch instances (userspace netdev datapath,
#     sim/ovs), production then quarantine; the floor: the same settings
#     by ovs-vsctl, one transaction per switch, on fresh switches. Needs
#     root and Debian's openvswitch-switch, iproute2 and iputils-ping.
#   gnmi: the lab's gNMI target (sim/gnmi, one loopback listener for all
#     switches), production, production again (no Set), quarantine; the
#     floor: a plain gNMI client, one SetRequest per switch, on a fresh
#     target. No root needed.
# Usage: bench-fabric.sh [bench] [nodes] [switches] [workers] [driver]
set -euo pipefail
bench=${1:-bin/slipway-bench}
nodes=${2:-1000}
switches=${3:-16}
workers=${4:-8}
driver=${5:-ovs}
if [ "$driver" = ovs ] && [ "$(id -u)" != 0 ]; then
  echo "bench-fabric runs Open vSwitch and network namespaces: run it as root" >&2
  exit 2
fi
echo "$(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
"$bench" bench-fabric --driver "$driver" --nodes "$nodes" --switches "$switches" --workers "$workers"
