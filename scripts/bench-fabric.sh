#!/usr/bin/env bash
# Port-configuration time of the ovs network driver at scale: generated
# nodes (3 cabled ports each: a PXE NIC and an LACP bond of two) spread
# over switches that are real Open vSwitch instances (userspace netdev
# datapath, sim/ovs), configured for production and then quarantine
# through the driver, against a floor measured in the same run (the same
# settings by ovs-vsctl, one transaction per switch, on fresh switches).
# Needs root and Debian's openvswitch-switch, iproute2 and iputils-ping.
set -euo pipefail
bench=${1:-bin/slipway-bench}
nodes=${2:-1000}
switches=${3:-16}
workers=${4:-8}
if [ "$(id -u)" != 0 ]; then
  echo "bench-fabric runs Open vSwitch and network namespaces: run it as root" >&2
  exit 2
fi
echo "$(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
"$bench" bench-fabric --nodes "$nodes" --switches "$switches" --workers "$workers"
