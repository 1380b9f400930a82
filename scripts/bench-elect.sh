#!/usr/bin/env bash
# bench-elect.sh — failover time of elect: 5 members on loopback with the
# default settings; SIGKILL the leader and time until every survivor has
# printed the new leader, and until the new leader holds its lease (when a
# command given to `elect run -- cmd` starts). Prints every trial, the
# median and the maximum.
# When etcd and etcdctl are installed, measures `etcdctl elect` failover in
# the same run and prints the ratio.
#
#   scripts/bench-elect.sh [TRIALS]      (default 10)
#   ALGO=ring scripts/bench-elect.sh     another algorithm
. "$(dirname "$0")/lib.sh"
trials=${1:-10}
algo=${ALGO:-bully}
work=$(mktemp -d)
trap 'scripts/cluster.sh stop -d "$work/c" >/dev/null 2>&1 || true; pkill -P $$ 2>/dev/null || true; rm -rf "$work"' EXIT

build_tools "$work/bin"

now_ns() { date +%s%N; }
ts_ns() { date -d "$1" +%s%N; } # RFC 3339 → ns

# first_time FILE LEADER: the time of the first JSON line naming LEADER
# after the first ${skip[FILE]} lines, or nothing. (A member may name the
# next leader while the cluster starts, before the leader that is then
# killed takes over: only what it printed after the kill counts.)
declare -A skip=()
first_time() {
  tail -n "+$((${skip[$1]:-0} + 1))" "$1" 2>/dev/null | grep -m1 "\"leader\":$2," | sed -E 's/^\{"time":"([^"]+)".*/\1/'
}

wait_all() { # leader ids...
  local l=$1; shift
  local deadline=$(( $(date +%s) + 20 ))
  for i in "$@"; do
    until [ -n "$(first_time "$work/c/$i.out" "$l")" ]; do
      [ "$(date +%s)" -lt "$deadline" ] || { echo "bench: member $i never reported leader $l" >&2; exit 1; }
      sleep 0.01
    done
  done
}

# lease_time FILE: the time of the first 'lease held' JSON line after the
# first ${skip[FILE]} lines, or nothing.
lease_time() { tail -n "+$((${skip[$1]:-0} + 1))" "$1" 2>/dev/null | grep -m1 '"event":"lease".*"held":true' | sed -E 's/^\{"time":"([^"]+)".*/\1/'; }

fmt() { awk -v us="$1" 'BEGIN { printf "%.1f ms", us / 1000 }'; }

results=(); leases=()
echo "elect failover, $algo, 5 members on loopback, defaults (heartbeat 50ms, timeout 200ms); SIGKILL the leader"
for ((t = 1; t <= trials; t++)); do
  rm -rf "$work/c"; skip=()
  scripts/cluster.sh start -n 5 -d "$work/c" "$bin/elect" run --algo "$algo" --json --no-color --log-level warn >/dev/null
  wait_all 5 1 2 3 4 5
  pid=$(cat "$work/c/5.pid")
  for i in 1 2 3 4; do skip[$work/c/$i.out]=$(wc -l <"$work/c/$i.out"); done
  t0=$(now_ns); kill -KILL "$pid"
  wait_all 4 1 2 3 4
  last=0
  for i in 1 2 3 4; do
    ns=$(ts_ns "$(first_time "$work/c/$i.out" 4)")
    [ "$ns" -gt "$last" ] && last=$ns
  done
  ms=$(( (last - t0) / 1000 ))
  results+=("$ms")
  deadline=$(( $(date +%s) + 20 ))
  until [ -n "$(lease_time "$work/c/4.out")" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "bench: member 4 never held the lease" >&2; exit 1; }
    sleep 0.01
  done
  lus=$(( ($(ts_ns "$(lease_time "$work/c/4.out")") - t0) / 1000 ))
  leases+=("$lus")
  echo "trial $t: $(fmt "$ms"), lease held after $(fmt "$lus")"
  scripts/cluster.sh stop -d "$work/c" >/dev/null
done

sorted=($(printf '%s\n' "${results[@]}" | sort -n))
n=${#sorted[@]}
if (( n % 2 )); then med=${sorted[$((n / 2))]}; else med=$(( (sorted[n/2 - 1] + sorted[n/2]) / 2 )); fi
max=${sorted[$((n - 1))]}
echo "elect ($algo): median $(fmt "$med"), max $(fmt "$max") over $n trials (target: median ≤ 250 ms)"
lsorted=($(printf '%s\n' "${leases[@]}" | sort -n))
if (( n % 2 )); then lmed=${lsorted[$((n / 2))]}; else lmed=$(( (lsorted[n/2 - 1] + lsorted[n/2]) / 2 )); fi
echo "elect ($algo): new leader holds its lease (its command starts): median $(fmt "$lmed"), max $(fmt "${lsorted[$((n - 1))]}")"

if command -v etcd >/dev/null 2>&1 && command -v etcdctl >/dev/null 2>&1; then
  echo
  echo "etcdctl elect, same machine: one trial (its lease TTL is 60 s, so this takes about a minute)"
  cport=$((20000 + RANDOM % 20000)); pport=$((cport + 1))
  etcd --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
       --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
       --initial-cluster "default=http://127.0.0.1:$pport" >"$work/etcd.log" 2>&1 &
  ep="--endpoints=127.0.0.1:$cport"
  until etcdctl "$ep" endpoint health >/dev/null 2>&1; do sleep 0.1; done
  etcdctl "$ep" elect bench one >"$work/one.out" 2>&1 &
  one=$!
  until grep -q one "$work/one.out"; do sleep 0.01; done
  etcdctl "$ep" elect bench two >"$work/two.out" 2>&1 &
  sleep 0.5 # let the second campaigner queue up behind the first
  t0=$(now_ns); kill -KILL "$one"; wait "$one" 2>/dev/null || true
  until grep -q two "$work/two.out"; do sleep 0.01; done
  etcd_us=$(( ($(now_ns) - t0) / 1000 ))
  echo "etcdctl elect: failover $(fmt "$etcd_us")"
  awk -v a="$etcd_us" -v b="$med" 'BEGIN { printf "ratio: elect median is %.0f× faster than etcdctl elect\n", a / b }'
  awk -v a="$etcd_us" -v b="$lmed" 'BEGIN { printf "ratio: elect lease median is %.0f× faster than etcdctl elect\n", a / b }'
else
  echo "(etcd/etcdctl not installed: etcdctl elect not measured in this run; install etcd-server and etcd-client to compare)"
fi
