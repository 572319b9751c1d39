#!/usr/bin/env bash
# Image upload throughput against curl: one generated image (default
# 512 MiB) uploaded into one lab MAAS region on loopback, in one run, by
# Slipway's sync (the engine's sync_images task: its runner and the real
# MAAS driver, 4 MiB chunks, the offset saved after each) and by curl to
# the same region: one `curl -T FILE -X PUT` of the whole file, then one
# curl per 4 MiB chunk, each to a resource of its own created through the
# MAAS API. The OAuth header is in a 0600 file (curl -H @file), never in
# curl's arguments. Outcomes from the region's own state: each resource
# complete with the file's SHA-256, every byte received once. The engine's
# verification of the file (SHA-256 and size, before MAAS sees a byte) is
# timed apart (verify_seconds; slipway_cold_over_curl counts it). The
# dirty pages are flushed (sync(2)) before each timed upload.
# Usage: bench-images.sh [bench] [size MiB]
set -euo pipefail
bench=${1:-bin/slipway-bench}
mib=${2:-512}
echo "$(date -u +%FT%TZ) load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(curl --version | head -1 | cut -d' ' -f1-2)"
if [ -x /usr/bin/time ]; then
  /usr/bin/time -f "bench-images $mib MiB: %e s wall, %U s user, %S s sys, %M KiB peak RSS" \
    "$bench" bench-images --size "$mib"
else
  "$bench" bench-images --size "$mib"
fi
echo "$(date -u +%FT%TZ) load after: $(cut -d' ' -f1-3 /proc/loadavg)"
