#!/usr/bin/env bash
# Load-tests GET /v1/self of the introspection API: 10,000 nodes, each
# request with another node's token, against nginx serving the same answers
# as static files, measured in the same run; prints our throughput as a
# ratio to nginx's. Two phases at each load:
#  - cold: the server is restarted in its process (SIGUSR1: a new Server on
#    the same store and key, its token and answer caches empty, then one
#    request with a token not in the list; every token's answer was
#    rendered and stored when it was issued, so that request loads no design,
#    and neither do the measured ones), then every token is sent
#    exactly once. wrk cannot send each request once (it runs for a
#    duration and divides by it), so `slipway-bench bench-once` does: a
#    fixed number of kept-alive connections, each with one request at a
#    time, throughput = 10,000 / the wall time from the first request to
#    the last answer, percentiles over all 10,000. nginx gets each of its
#    10,000 files once from the same generator; it has no cache of its own
#    to be cold (the files are in the page cache, as our state store is).
#    Repeated COLD_RUNS times (default 5, a restart each); the median ratio
#    of the runs is the figure.
#  - warm (steady state): wrk for SECS seconds, every token cycled; nginx
#    the same way.
# After each measurement: the CPU time (user + system, from /proc) each
# server spent per request, less sensitive than throughput to whatever
# else the machine runs, and our server's garbage collections during it
# (cycles, their CPU per request, the live heap after). `slipway-bench bench-introspection --pprof ADDR`
# serves net/http/pprof, to profile the server under this load.
# Targets (issue "[3/10] Honest figures", 2 cores, wrk -t2 -c64): p99
# under 20 ms and at least 0.6 of nginx's throughput.
# Needs wrk and nginx (Debian packages).
set -euo pipefail
# BIN is the benchmark tools' binary (cmd/slipway-bench; make build-bench).
bin=${1:-bin/slipway-bench}
nodes=${2:-10000}
secs=${3:-15}
cold_runs=${COLD_RUNS:-5}
# LOADS: the "THREADS CONNS" loads to run, separated by commas (default both).
IFS=, read -r -a loads <<<"${LOADS:-1 16,2 64}"
# PPROF=ADDR: serve net/http/pprof of our server there (to profile it under this load).
for t in wrk nginx; do command -v $t >/dev/null || { echo "install $t (apt-get install -y wrk nginx)"; exit 2; }; done
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
port=18701; nport=18702
"$bin" bench-introspection --nodes "$nodes" --out "$dir" --listen 127.0.0.1:$port ${PPROF:+--pprof "$PPROF"} >"$dir/serve.log" 2>&1 &
spid=$!
pids+=($spid)
for _ in $(seq 1 600); do [ -f "$dir/tokens.txt" ] && break; sleep 0.2; done
[ -f "$dir/tokens.txt" ] || { cat "$dir/serve.log"; exit 1; }
cat >"$dir/tokens.lua" <<'LUA'
local tokens, i = {}, 0
function init(args)
  for line in io.lines(args[1]) do tokens[#tokens + 1] = line end
  i = math.random(#tokens)
end
function request()
  i = i % #tokens + 1
  return wrk.format("GET", "/v1/self", {["Authorization"] = "Bearer " .. tokens[i]})
end
LUA
cat >"$dir/paths.lua" <<LUA
local n, i = $nodes, 0
function init(args) i = math.random(n) end
function request()
  i = (i + 1) % n
  return wrk.format("GET", "/self/" .. i .. ".json")
end
LUA
mkdir -p "$dir/nginx/logs"
cat >"$dir/nginx/nginx.conf" <<CONF
user root;
worker_processes 2;
daemon off;
pid $dir/nginx/nginx.pid;
error_log $dir/nginx/logs/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 1000000; # like our server: no limit (the default, 1000, closes connections under load)
  server { listen 127.0.0.1:$nport; root $dir/static; default_type application/json; }
}
CONF
run() { # run NAME URL SCRIPT [ARGS]; THREADS and CONNS set wrk's load
  timeout $((secs + 30)) wrk -t"$THREADS" -c"$CONNS" -d"${secs}s" --latency -s "$3" "$2" -- "${@:4}" >"$dir/$1.txt"
  rps=$(awk '/Requests\/sec/ {print $2}' "$dir/$1.txt")
  p99=$(awk '$1 == "99%" {print $2}' "$dir/$1.txt")
  p50=$(awk '$1 == "50%" {print $2}' "$dir/$1.txt")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$dir/$1.txt")
  echo "$1: ${rps} requests/s, p50 ${p50}, p99 ${p99}${non2xx:+, non-2xx $non2xx}"
}
restart() { # a fresh server: empty token and answer caches
  rm -f "$dir/fresh"
  kill -USR1 "$spid"
  for _ in $(seq 1 300); do [ -f "$dir/fresh" ] && return 0; sleep 0.2; done
  cat "$dir/serve.log"; exit 1
}
once() { # once NAME URL ARGS...: each request once, THREADS and CONNS as for wrk
  timeout 300 "$bin" bench-once "$2" --conns "$CONNS" --procs "$THREADS" "${@:3}" >"$dir/$1.txt"
  rps=$(sed -n 's/.* \([0-9.]*\) requests\/s.*/\1/p' "$dir/$1.txt")
  p50=$(sed -n 's/.*p50 \([^,]*\),.*/\1/p' "$dir/$1.txt")
  p99=$(sed -n 's/.*p99 \([^,]*\),.*/\1/p' "$dir/$1.txt")
  bad=$(sed -n 's/.*non-200 \([0-9]*\),.*/\1/p' "$dir/$1.txt")
  echo "$1: ${rps} requests/s, p50 ${p50}, p99 ${p99}$([ "$bad" = 0 ] || echo ", non-200 $bad")"
}
ratio() { awk -v a="$1" -v b="$2" -v w="$3" 'BEGIN { printf "%s slipway/nginx throughput ratio: %.2f\n", w, a / b }'; }
# median_of "X Y Z...": the median (and range) of the cold runs' ratios:
# one cold pass is 10,000 requests in a quarter of a second, and the
# ratio of two such passes moves by a tenth from one to the next.
median_of() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -n | awk '{ v[NR] = $1 } END {
  m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
  printf "cold slipway/nginx throughput ratio, median of %d runs: %.2f (%.2f to %.2f)\n", NR, m, v[1], v[NR] }'; }
# CPU time (user + system, in clock ticks) a server used: ours, or nginx's
# master and workers. Printed per request after each measurement: less
# sensitive than throughput to whatever else the machine runs.
hz=$(getconf CLK_TCK)
ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
ours_ticks() { ticks "$spid"; }
nginx_ticks() { ticks "$npid" $(pgrep -P "$npid"); }
gc_stats() { # cycles, GC CPU seconds and live heap of our server so far (SIGUSR2 writes them)
  rm -f "$dir/gc"; kill -USR2 "$spid"
  for _ in $(seq 1 100); do [ -f "$dir/gc" ] && { cat "$dir/gc"; return 0; }; sleep 0.05; done
  echo "0 0 0"
}
gc_delta() { # gc_delta "BEFORE" "AFTER" REQUESTS
  awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { split(a, x, " "); split(b, y, " ")
    printf "slipway GC: %d cycles, %.0f us CPU a request, live heap %.0f MB\n", y[1] - x[1], (y[2] - x[2]) * 1e6 / n, y[3] / 1048576 }'
}
per_req() { awk -v t="$1" -v n="$2" -v hz="$hz" 'BEGIN { printf "%.0f", t / hz * 1e6 / n }'; }
nginx -p "$dir/nginx" -c "$dir/nginx/nginx.conf" &
npid=$!
pids+=($npid)
sleep 1
# Two loads: wrk with 1 thread and 16 connections (it takes about one of the
# two cores, the server the other), and wrk with 2 threads and 64
# connections (wrk competes with the server for both cores).
for load in "${loads[@]}"; do
  read -r THREADS CONNS <<<"$load"
  echo "== cold: each of the $nodes tokens once after a restart, $CONNS connections, generator on $THREADS cores ($cold_runs runs)"
  ratios=""
  for r in $(seq 1 "$cold_runs"); do
    restart
    g0=$(gc_stats)
    t0=$(ours_ticks)
    once "cold slipway" "http://127.0.0.1:$port" --tokens "$dir/tokens.txt"
    ours=$rps ours_cpu=$(per_req $(($(ours_ticks) - t0)) "$nodes")
    gc_delta "$g0" "$(gc_stats)" "$nodes"
    t0=$(nginx_ticks)
    once "cold nginx" "http://127.0.0.1:$nport" --path '/self/%d.json' --count "$nodes"
    nginx_cpu=$(per_req $(($(nginx_ticks) - t0)) "$nodes")
    ratio "$ours" "$rps" "cold"
    ratios+=" $(awk -v a="$ours" -v b="$rps" 'BEGIN { printf "%.4f", a / b }')"
    echo "cold server CPU per request: slipway ${ours_cpu} us, nginx ${nginx_cpu} us"
  done
  median_of "$ratios"
  echo "== warm (steady state): wrk -t$THREADS -c$CONNS, ${secs}s"
  g0=$(gc_stats)
  t0=$(ours_ticks)
  run "warm slipway" "http://127.0.0.1:$port" "$dir/tokens.lua" "$dir/tokens.txt"
  ours=$rps ours_cpu=$(per_req $(($(ours_ticks) - t0)) "$(awk -v r="$rps" -v s="$secs" 'BEGIN { print r * s }')")
  gc_delta "$g0" "$(gc_stats)" "$(awk -v r="$rps" -v s="$secs" 'BEGIN { print r * s }')"
  t0=$(nginx_ticks)
  run "warm nginx" "http://127.0.0.1:$nport" "$dir/paths.lua"
  nginx_cpu=$(per_req $(($(nginx_ticks) - t0)) "$(awk -v r="$rps" -v s="$secs" 'BEGIN { print r * s }')")
  ratio "$ours" "$rps" "warm"
  echo "warm server CPU per request: slipway ${ours_cpu} us, nginx ${nginx_cpu} us"
done
