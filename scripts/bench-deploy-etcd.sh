#!/usr/bin/env bash
# Deploys a generated site into the virtual lab with the engine's state in
# bbolt, in etcd on its default limits and in etcd with raised limits
# (--max-txn-ops 20000 --max-request-bytes 16 MiB, which the store is told
# of), alternately (bolt, etcd, etcd+, twice: load drift hits all), and
# compares them: per run the store, the nodes deployed by the
# lab's count, wall time against the floor (the longest any machine waited
# in the lab's phases) and MAAS requests per node; after each etcd run the
# keys under its prefix per node and each member's database size; last,
# the median wall/floor of each store and etcd's wall time over bbolt's.
#
# Each etcd is a 3-member cluster on loopback (Debian's etcd-server),
# started here and killed at exit. It is read through its JSON gateway
# (/health, /v3/kv/range, /v3/maintenance/status), so etcdctl is not needed.
#
# Usage: scripts/bench-deploy-etcd.sh [BIN [NODES [SCALE]]]
# (defaults bin/orchestrator 1000 0.1); RUN_TIMEOUT bounds each run (20m).
set -euo pipefail
bin=${1:-bin/orchestrator}
nodes=${2:-1000}
scale=${3:-0.1}
run_timeout=${RUN_TIMEOUT:-20m}
py=/usr/bin/python3
command -v etcd >/dev/null || { echo "etcd not found: install the Debian package etcd-server" >&2; exit 2; }
[ -x "$bin" ] || { echo "$bin: build it first (go build -o bin/orchestrator ./cmd/orchestrator)" >&2; exit 2; }

work=$(mktemp -d)
pids=()   # the etcd members
demo=""   # the running demo's timeout process
# shellcheck disable=SC2317 # called by the traps
cleanup() {
  if [ -n "$demo" ]; then
    kill "$demo" 2>/dev/null || true
    wait "$demo" 2>/dev/null || true
  fi
  for p in "${pids[@]}"; do # their data goes: no need to stop them gently
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The JSON parsing and etcd's gateway calls.
cat >"$work/bench.py" <<'PY'
import base64, json, os, statistics, sys, time, urllib.request

def post(url, path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)

def b64(b):
    return base64.b64encode(b).decode()

def ports(n):
    import socket
    ss = [socket.socket() for _ in range(int(n))]
    for s in ss:
        s.bind(("127.0.0.1", 0))
    print(" ".join(str(s.getsockname()[1]) for s in ss))

def health(*urls):
    deadline, err = time.time() + 60, "not healthy"
    while True:
        try:
            if all(json.load(urllib.request.urlopen(u + "/health", timeout=2)).get("health") == "true" for u in urls):
                return
        except Exception as e:
            err = e
        if time.time() > deadline:
            sys.exit("etcd did not become healthy within 60 s: %s" % err)
        time.sleep(0.2)

def run(n, store, out, rss, tsv):
    try:
        r = json.load(open(out))
    except Exception:
        print("run %s %s: no summary (see its log above)" % (n, store))
        return
    ratio = r["wall_seconds"] / r["floor_seconds"] if r["floor_seconds"] else float("nan")
    line = "run %s %-5s: %d nodes, %d deployed (lab), wall %.1f s, floor %.1f s, wall/floor %.2f, %.1f MAAS requests/node" % (
        n, store, r["nodes"], r["deployed"], r["wall_seconds"], r["floor_seconds"], ratio, r["maas_requests"] / max(r["nodes"], 1))
    try:
        line += ", peak RSS %d MiB" % (int(open(rss).read().split()[-1]) // 1024)
    except Exception:
        pass
    if r["leaked"] or r["duplicate_deploys"] or r["failed"] or r["stuck"]:
        line += " (failed %d, stuck %d, leaked %d, duplicate deploys %d)" % (r["failed"], r["stuck"], r["leaked"], r["duplicate_deploys"])
    print(line)
    with open(tsv, "a") as f:
        f.write("%s\t%f\t%f\n" % (store, r["wall_seconds"], ratio))

def etcd(prefix, nodes, *urls):
    p = prefix.encode()
    end = p[:-1] + bytes([p[-1] + 1])
    keys = int(post(urls[0], "/v3/kv/range", {"key": b64(p), "range_end": b64(end), "count_only": True}).get("count", 0))
    sizes = ["%.1f" % (int(post(u, "/v3/maintenance/status", {})["dbSize"]) / 2**20) for u in urls]
    print("  etcd: %d keys under %s (%.1f per node); db size %s MiB (members %s)" % (
        keys, prefix, keys / int(nodes), sizes[0], ", ".join(sizes)))

def final(tsv):
    by = {"bolt": [], "etcd": [], "etcd+": []}
    if os.path.exists(tsv):
        for l in open(tsv):
            s, wall, ratio = l.split("\t")
            by[s].append((float(wall), float(ratio)))
    med = lambda s, i: statistics.median(x[i] for x in by[s]) if by[s] else float("nan")
    ratio = lambda s: med(s, 0) / med("bolt", 0) if by["bolt"] and by[s] else float("nan")
    print("median wall/floor: bbolt %.2f, etcd %.2f (default limits), etcd+ %.2f (raised limits); wall over bbolt's: etcd %.2f, etcd+ %.2f" % (
        med("bolt", 1), med("etcd", 1), med("etcd+", 1), ratio("etcd"), ratio("etcd+")))

globals()[sys.argv[1]](*sys.argv[2:])
PY
bench() { "$py" "$work/bench.py" "$@"; }

# cluster NAME [ETCD FLAGS...]: a 3-member cluster on loopback, its client
# URLs in the array urls.
urls=()
cluster() {
  local name=$1 initial="" i c p
  shift
  local -a port
  read -r -a port <<<"$(bench ports 6)"
  for i in 0 1 2; do initial+="$name$i=http://127.0.0.1:${port[2*i+1]},"; done
  urls=()
  for i in 0 1 2; do
    c=http://127.0.0.1:${port[2*i]} p=http://127.0.0.1:${port[2*i+1]}
    etcd --name "$name$i" --data-dir "$work/$name$i" --listen-client-urls "$c" --advertise-client-urls "$c" \
      --listen-peer-urls "$p" --initial-advertise-peer-urls "$p" --initial-cluster "${initial%,}" \
      --initial-cluster-state new --initial-cluster-token "slipway-bench-$name" --log-level warn "$@" \
      >"$work/$name$i.log" 2>&1 &
    pids+=("$!")
    urls+=("$c")
  done
  bench health "${urls[@]}" || { tail -n 20 "$work/$name"*.log >&2; exit 1; }
}
storeOf() { local eps; eps=$(IFS=,; echo "$*"); echo "etcd://${eps//http:\/\//}"; }

# etcd with its default limits, and one started with raised limits that
# the store is told of (it then merges more Writes in a transaction).
raised=(--max-txn-ops 20000 --max-request-bytes 16777216)
cluster plain
plain=("${urls[@]}")
cluster big "${raised[@]}"
big=("${urls[@]}")
echo "etcd $(etcd --version | head -1 | awk '{print $3}'): 3 members at $(storeOf "${plain[@]}") (default limits) and 3 at $(storeOf "${big[@]}") (${raised[*]}); $nodes nodes at time scale $scale, runs bolt, etcd, etcd+ (raised limits), twice"

status=0
n=0
for round in 1 2; do
  for kind in bolt etcd etcd+; do
    n=$((n + 1))
    args=(demo --nodes "$nodes" --time-scale "$scale" -o json)
    prefix=/slipway-bench-$$-$round/
    case $kind in
      etcd) args+=(--store "$(storeOf "${plain[@]}")" --etcd-prefix "$prefix") ;;
      etcd+) args+=(--store "$(storeOf "${big[@]}")" --etcd-prefix "$prefix" --etcd-max-txn-ops 20000 --etcd-max-request-bytes 16777216) ;;
    esac
    rc=0
    # In the background, so that a signal to the script is handled at once
    # (timeout passes it on to the demo).
    timeout -k 30s "$run_timeout" /usr/bin/time -f "%M" -o "$work/run$n.rss" \
      "$bin" "${args[@]}" >"$work/run$n.json" 2>"$work/run$n.log" &
    demo=$!
    wait "$demo" || rc=$?
    demo=""
    if [ "$rc" != 0 ]; then
      status=1
      why=""
      [ "$rc" = 124 ] && why=" (over $run_timeout)"
      echo "run $n $kind: exited with status $rc$why; its last log lines:" >&2
      grep -v '"level":"info"' "$work/run$n.log" | tail -n 5 >&2 || true
    fi
    bench run "$n" "$kind" "$work/run$n.json" "$work/run$n.rss" "$work/runs.tsv"
    case $kind in
      etcd) bench etcd "$prefix" "$nodes" "${plain[@]}" 2>/dev/null || echo "  etcd: did not answer for its keys and status" >&2 ;;
      etcd+) bench etcd "$prefix" "$nodes" "${big[@]}" 2>/dev/null || echo "  etcd: did not answer for its keys and status" >&2 ;;
    esac
  done
done
bench final "$work/runs.tsv"
exit "$status"
