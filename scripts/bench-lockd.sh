#!/usr/bin/env bash
# bench-lockd.sh — lockd against etcd, in one run, as ratios:
#   1. whole-process latency: `lockd run L -- true` vs `etcdctl lock L -- true`
#      (median and p99 over ITER runs, uncontended);
#   2. 8 processes contending for one lock for SECS seconds: acquisitions/s;
#   3. in-daemon acquire+release per second (central, 3 daemons), without
#      process start-up (go test -bench).
# Installs etcd-server and etcd-client with apt-get when missing (as root).
#
#   scripts/bench-lockd.sh [ITER] [SECS]     (defaults 200 and 5)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
iter=${1:-200}
secs=${2:-5}
work=$(mktemp -d)
cleanup() {
  scripts/cluster.sh stop -d "$work/c" >/dev/null 2>&1 || true
  [ -n "${etcd_pid:-}" ] && kill "$etcd_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

if ! command -v etcd >/dev/null 2>&1 || ! command -v etcdctl >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing etcd-server and etcd-client..."
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server etcd-client >/dev/null
    systemctl stop etcd >/dev/null 2>&1 || pkill -x etcd || true
  else
    echo "bench-lockd: etcd and etcdctl are needed (apt-get install etcd-server etcd-client)" >&2
    exit 69
  fi
fi

# Release build: static (no dynamic loader at start-up: about 0.6 ms of
# each `lockd run`), no man-page generator linked in, no symbol tables.
CGO_ENABLED=0 go build -tags urfave_cli_no_docs -ldflags "-s -w" -o "$work/lockd" ./cmd/lockd

# etcd on loopback, non-default ports
cport=$((20000 + RANDOM % 20000)); pport=$((cport + 1))
etcd --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
     --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
     --initial-cluster "default=http://127.0.0.1:$pport" >"$work/etcd.log" 2>&1 &
etcd_pid=$!
export ETCDCTL_API=3 ETCDCTL_ENDPOINTS="127.0.0.1:$cport"
until etcdctl endpoint health >/dev/null 2>&1; do sleep 0.1; done

# lockd: 3 daemons, the client on daemon 3 (the coordinator once elected)
scripts/cluster.sh start -n 3 -d "$work/c" "$work/lockd" serve --no-color --log-level warn --socket "$work/c/{id}.sock" >/dev/null
sock="$work/c/3.sock"
until "$work/lockd" run --socket "$sock" --nonblock warmup -- true 2>/dev/null; do sleep 0.05; done

# Whole-process times, lockd and etcdctl alternating run by run, so a
# change in the machine's load (other tenants, CPU steal) falls on both.
# (EPOCHREALTIME is a bash built-in: no process is spawned to read the clock)
lockd_cmd=("$work/lockd" run --socket "$sock" L -- true)
etcd_cmd=(etcdctl lock L -- true)
: >"$work/l.us"; : >"$work/e.us"
for ((i = 0; i < iter; i++)); do
  t0=${EPOCHREALTIME/./}; "${lockd_cmd[@]}" >/dev/null; t1=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >>"$work/l.us"
  t0=${EPOCHREALTIME/./}; "${etcd_cmd[@]}" >/dev/null; t1=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >>"$work/e.us"
done
stats() { sort -n "$1" | awk '{ a[NR] = $1 } END { printf "%d %d", a[int((NR + 1) / 2)], a[int(NR * 0.99 + 0.999)] }'; }
ms() { awk -v us="$1" 'BEGIN { printf "%.2f ms", us / 1000 }'; }

echo "== 1. whole process, uncontended, $iter runs each (alternating)"
read -r l_med l_p99 <<<"$(stats "$work/l.us")"
read -r e_med e_p99 <<<"$(stats "$work/e.us")"
echo "lockd run   : median $(ms "$l_med"), p99 $(ms "$l_p99")"
echo "etcdctl lock: median $(ms "$e_med"), p99 $(ms "$e_p99")"
awk -v a="$l_med" -v b="$e_med" -v c="$l_p99" -v d="$e_p99" \
  'BEGIN { printf "ratio lockd/etcd: median %.2f (target ≤ 0.25), p99 %.2f\n", a / b, c / d }'

echo "== 2. 8 processes contending for one lock, 2×${secs}s each (lockd, etcd, etcd, lockd)"
contend() { # label cmd... ; prints acquisitions/s
  local end=$((EPOCHSECONDS + secs)) j
  rm -f "$work/count"
  for j in 1 2 3 4 5 6 7 8; do
    # bash built-ins only in the loop: no extra process per iteration
    ( n=0; while ((EPOCHSECONDS < end)); do "$@" >/dev/null 2>&1 && n=$((n + 1)); done; echo $n >>"$work/count" ) &
  done
  wait
  awk -v s="$secs" '{ t += $1 } END { printf "%.1f", t / s }' "$work/count"
}
l1=$(contend "$work/lockd" run --socket "$sock" C -- true)
e1=$(contend etcdctl lock C -- true)
e2=$(contend etcdctl lock C -- true)
l2=$(contend "$work/lockd" run --socket "$sock" C -- true)
l_rate=$(awk -v a="$l1" -v b="$l2" 'BEGIN { printf "%.1f", (a + b) / 2 }')
e_rate=$(awk -v a="$e1" -v b="$e2" 'BEGIN { printf "%.1f", (a + b) / 2 }')
echo "lockd run   : $l_rate acquisitions/s ($l1, $l2)"
echo "etcdctl lock: $e_rate acquisitions/s ($e1, $e2)"
awk -v a="$l_rate" -v b="$e_rate" 'BEGIN { printf "ratio lockd/etcd: %.1f× (target ≥ 10×)\n", a / b }'

echo "== 3. in-daemon acquire+release, central, 3 daemons (go test -bench, 3 rounds, median)"
go test -run '^$' -bench AcquireRelease -benchtime 2s -count 3 ./cmd/lockd | grep -E '^Benchmark' |
  awk '{ r[$1] = r[$1] " " $(NF-1) } END {
    for (k in r) {
      n = split(r[k], v, " ")
      for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
      printf "%-40s %s acquire+release/s (rounds:%s)\n", k, v[int((n + 1) / 2)], r[k]
    }
  }' | sort
echo "(target ≥ 20,000/s)"
