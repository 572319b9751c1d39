#!/usr/bin/env bash
# Measures 'orchestrator validate' on a synthetic site as a whole process:
# wall time and peak RSS (targets: 2 s and 512 MiB for 10,000 nodes).
set -euo pipefail
bin=${1:-bin/orchestrator}
nodes=${2:-10000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" gen-site --nodes "$nodes" --out "$dir/site" >/dev/null
# The design limit (16 MiB by default) is raised: a site of 50,000 nodes is 17 MB.
limits=(--max-design-bytes 1GiB)
"$bin" validate "${limits[@]}" "$dir/site" >/dev/null 2>&1 # warm the page cache
for i in 1 2 3; do
  if [ -x /usr/bin/time ]; then
    /usr/bin/time -f "validate $nodes nodes: %e s wall, %M KiB peak RSS" "$bin" validate "${limits[@]}" "$dir/site" 2>&1 >/dev/null | tail -1
  else
    start=$(date +%s.%N); "$bin" validate "${limits[@]}" "$dir/site" >/dev/null 2>&1; end=$(date +%s.%N)
    echo "validate $nodes nodes: $(echo "$end - $start" | bc) s wall (install 'time' for peak RSS)"
  fi
done
