#!/usr/bin/env bash
# Peak RSS of 'orchestrator validate' on hostile YAML, as a whole process
# (/usr/bin/time's maximum resident set size): one file of each shape of
# internal/hostileyaml at each size, with the default limits and with the
# limits raised out of the way (so that the parser's own budget is what
# stops it). Each run is capped at 8 GiB of address space (ulimit -v).
#
#   scripts/bench-hostile.sh [BIN] [SIZES...]        sizes in MiB, default 1 16 64
#   VALIDATE_BIN=old/orchestrator scripts/bench-hostile.sh bin/orchestrator 1 16
#
# VALIDATE_BIN runs validate (e.g. an older build); BIN writes the tiny
# site; BENCH_BIN (default slipway-bench beside BIN; make build-bench)
# writes the hostile files.
set -euo pipefail
bin=${1:-bin/orchestrator}
shift || true
sizes=${*:-1 16 64}
validate=${VALIDATE_BIN:-$bin}
gen=${BENCH_BIN:-$(dirname "$bin")/slipway-bench}
cap_kib=$((8 << 20))
shapes=$("$gen" gen-hostile --help | sed -n 's/.*one of \([a-z, -]*\).*/\1/p' | tr -d ,)
raise=()
if "$validate" validate --help 2>&1 | grep -q -- --max-file-bytes; then
  raise=(--max-file-bytes 1GiB --max-design-bytes 1GiB)
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# run LABEL ARGS...: prints peak RSS in MiB, the ratio to the input and
# the first line validate printed.
run() {
  local input=$1
  shift
  local code rss first
  set +e
  (ulimit -v "$cap_kib"; /usr/bin/time -o "$dir/time" -f "%M" "$validate" validate "$@" "$dir/site" >"$dir/out" 2>&1)
  code=$?
  set -e
  rss=$(tail -1 "$dir/time" | tr -dc 0-9)
  first=$(awk -v d="$dir/site/" '/f\.yaml|fatal|out of memory|larger than/ { sub(d, ""); print substr($0, 1, 100); exit }' "$dir/out")
  awk -v r="${rss:-0}" -v b="$base" -v n="$input" -v c="$code" -v f="$first" \
    'BEGIN { printf "%6.0f MiB %6.1fx (%5.1fx over the baseline)  exit %-3s %s\n", r / 1024, r * 1024 / n, (r - b) * 1024 / n, c, f }'
}

"$bin" gen-site --nodes 1 --out "$dir/tiny" >/dev/null
base=$( (/usr/bin/time -f "%M" "$validate" validate "$dir/tiny" >/dev/null) 2>&1 | tail -1)
echo "baseline: validate of a 1-node site, $((base / 1024)) MiB peak RSS"
for size in $sizes; do
  for shape in $shapes; do
    rm -rf "$dir/site" && mkdir -p "$dir/site"
    "$gen" gen-hostile --shape "$shape" --size "${size}MiB" --out "$dir/site/f.yaml" >/dev/null
    input=$(stat -c %s "$dir/site/f.yaml")
    printf '%-10s %3s MiB  default limits: ' "$shape" "$size"
    run "$input"
    if [ ${#raise[@]} -gt 0 ]; then
      printf '%-10s %3s MiB  limits raised:  ' "$shape" "$size"
      run "$input" "${raise[@]}"
    fi
  done
done
