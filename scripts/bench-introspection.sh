#!/usr/bin/env bash
# Load-tests GET /v1/self of the introspection API with wrk: 10,000 nodes,
# each request with another node's token; then serves the same answers as
# static files from nginx and prints our throughput as a ratio to nginx's.
# Targets (2 cores): at least 20,000 requests/s, p99 under 20 ms.
# Needs wrk and nginx (Debian packages).
set -euo pipefail
bin=${1:-bin/orchestrator}
nodes=${2:-10000}
secs=${3:-15}
for t in wrk nginx; do command -v $t >/dev/null || { echo "install $t (apt-get install -y wrk nginx)"; exit 2; }; done
dir=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
port=18701; nport=18702
"$bin" bench-introspection --nodes "$nodes" --out "$dir" --listen 127.0.0.1:$port >"$dir/serve.log" 2>&1 &
pids+=($!)
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
  server { listen 127.0.0.1:$nport; root $dir/static; default_type application/json; }
}
CONF
run() { # run NAME URL SCRIPT [ARGS]; THREADS and CONNS set wrk's load
  wrk -t"$THREADS" -c"$CONNS" -d"${secs}s" --latency -s "$3" "$2" -- "${@:4}" >"$dir/$1.txt"
  rps=$(awk '/Requests\/sec/ {print $2}' "$dir/$1.txt")
  p99=$(awk '$1 == "99%" {print $2}' "$dir/$1.txt")
  p50=$(awk '$1 == "50%" {print $2}' "$dir/$1.txt")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$dir/$1.txt")
  echo "$1: ${rps} requests/s, p50 ${p50}, p99 ${p99}${non2xx:+, non-2xx $non2xx}"
}
nginx -p "$dir/nginx" -c "$dir/nginx/nginx.conf" &
pids+=($!)
sleep 1
# Two loads: wrk with 1 thread and 16 connections (it takes about one of the
# two cores, the server the other), and wrk with 2 threads and 64
# connections (wrk competes with the server for both cores).
for load in "1 16" "2 64"; do
  read -r THREADS CONNS <<<"$load"
  echo "== wrk -t$THREADS -c$CONNS, ${secs}s"
  run slipway "http://127.0.0.1:$port" "$dir/tokens.lua" "$dir/tokens.txt"
  run nginx "http://127.0.0.1:$nport" "$dir/paths.lua"
  ours=$(awk '/Requests\/sec/ {print $2}' "$dir/slipway.txt")
  theirs=$(awk '/Requests\/sec/ {print $2}' "$dir/nginx.txt")
  awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "slipway/nginx throughput ratio: %.2f\n", a / b }'
done
