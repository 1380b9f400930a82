#!/usr/bin/env bash
# bench-ticketd.sh — ticketd against lockd and etcd, in one run, as ratios:
#   1. whole-process latency: `ticketd run -- true` vs `lockd run L -- true`
#      vs `etcdctl lock L -- true` (median and p99 over ITER runs each,
#      uncontended, alternating run by run); then `hold` of each (the same
#      take and release without a command) and one bare start of the
#      ticketd binary, the cost of run's watchdog;
#   2. reclaim: a pool of 3 members and 3 tickets, every ticket held; SIGKILL
#      the member whose client holds one, and time until a client waiting on
#      another member gets that ticket, checking the killed client's command
#      was gone by then. Anchor: `etcdctl lock --ttl 1` held by a process
#      that is killed with SIGKILL, and the time until a waiting
#      `etcdctl lock` gets it. ROUNDS rounds each, alternating; ticketd
#      twice: with its defaults (--round 40ms --max-kill-grace 100ms) and
#      with --round 100ms --max-kill-grace 1s, for a command that needs a
#      second to stop.
#   3. in-daemon take+release per second, 5 members, 4 tickets, without
#      process start-up (go test -bench).
# Installs etcd-server and etcd-client when missing (lib.sh's apt_install).
#
#   scripts/bench-ticketd.sh [ITER] [ROUNDS]     (defaults 200 and 5)
. "$(dirname "$0")/lib.sh"
iter=${1:-200}
rounds=${2:-5}
work=$(mktemp -d)
cleanup() {
  scripts/cluster.sh stop -d "$work/t" >/dev/null 2>&1 || true
  scripts/cluster.sh stop -d "$work/l" >/dev/null 2>&1 || true
  scripts/cluster.sh stop -d "$work/r" >/dev/null 2>&1 || true
  [ -n "${etcd_pid:-}" ] && kill "$etcd_pid" 2>/dev/null || true
  pkill -f "sleep 1000" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

. scripts/etcd.sh
need_etcd bench-ticketd

build_tools "$work/bin"

start_etcd "$work"

# ticketd: 3 members, 4 tickets; lockd: 3 daemons (central)
scripts/cluster.sh start -j -n 3 -d "$work/t" "$bin/ticketd" serve --no-color --log-level warn --tickets 4 --socket "$work/t/{id}.sock" >/dev/null
scripts/cluster.sh start -n 3 -d "$work/l" "$bin/lockd" serve --no-color --log-level warn --socket "$work/l/{id}.sock" >/dev/null
tsock="$work/t/1.sock"; lsock="$work/l/3.sock"
until "$bin/ticketd" run --socket "$tsock" --nonblock -- true 2>/dev/null; do sleep 0.05; done
until "$bin/lockd" run --socket "$lsock" --nonblock warmup -- true 2>/dev/null; do sleep 0.05; done

stats() { sort -n "$1" | awk '{ a[NR] = $1 } END { printf "%d %d", a[int((NR + 1) / 2)], a[int(NR * 0.99 + 0.999)] }'; }
ms() { awk -v us="$1" 'BEGIN { printf "%.2f ms", us / 1000 }'; }

echo "== 1. whole process, uncontended, $iter runs each (alternating)"
: >"$work/t.us"; : >"$work/l.us"; : >"$work/e.us"
for ((i = 0; i < iter; i++)); do
  t0=${EPOCHREALTIME/./}; "$bin/ticketd" run --socket "$tsock" -- true; t1=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >>"$work/t.us"
  t0=${EPOCHREALTIME/./}; "$bin/lockd" run --socket "$lsock" L -- true; t1=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >>"$work/l.us"
  t0=${EPOCHREALTIME/./}; etcdctl lock L -- true >/dev/null; t1=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >>"$work/e.us"
done
read -r t_med t_p99 <<<"$(stats "$work/t.us")"
read -r l_med l_p99 <<<"$(stats "$work/l.us")"
read -r e_med e_p99 <<<"$(stats "$work/e.us")"
echo "ticketd run -- true  : median $(ms "$t_med"), p99 $(ms "$t_p99")"
echo "lockd run L -- true  : median $(ms "$l_med"), p99 $(ms "$l_p99")"
echo "etcdctl lock L -- true: median $(ms "$e_med"), p99 $(ms "$e_p99")"
awk -v t="$t_med" -v l="$l_med" -v e="$e_med" -v tp="$t_p99" -v lp="$l_p99" \
  'BEGIN { printf "ratio ticketd/lockd: median %.3f (target ≤ 1.2), p99 %.2f; ticketd/etcd: median %.3f\n", t / l, tp / lp, t / e }'
# Where the difference lies: the same take and release without a command
# (hold, stdin closed at once), and one bare start of the ticketd binary,
# which is what the watchdog of `ticketd run` costs on top of lockd's
# single child.
: >"$work/th.us"; : >"$work/lh.us"; : >"$work/ts.us"
for ((i = 0; i < iter; i++)); do
  t0=${EPOCHREALTIME/./}; "$bin/ticketd" hold --socket "$tsock" </dev/null >/dev/null; t1=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >>"$work/th.us"
  t0=${EPOCHREALTIME/./}; "$bin/lockd" hold --socket "$lsock" L </dev/null >/dev/null; t1=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >>"$work/lh.us"
  t0=${EPOCHREALTIME/./}; "$bin/ticketd" --version >/dev/null; t1=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >>"$work/ts.us"
done
read -r th_med _ <<<"$(stats "$work/th.us")"
read -r lh_med _ <<<"$(stats "$work/lh.us")"
read -r ts_med _ <<<"$(stats "$work/ts.us")"
echo "ticketd hold (take, release): median $(ms "$th_med"); lockd hold L: median $(ms "$lh_med") (ratio $(awk -v a="$th_med" -v b="$lh_med" 'BEGIN { printf "%.3f", a / b }'))"
echo "one start of the ticketd binary (--version): median $(ms "$ts_med"); run's difference from lockd's: $(ms $((t_med - l_med))) (the watchdog is one more start)"
scripts/cluster.sh stop -d "$work/t" >/dev/null; scripts/cluster.sh stop -d "$work/l" >/dev/null

echo "== 2. reclaim after SIGKILL, $rounds rounds each (ticketd defaults: --round 40ms, --max-kill-grace 100ms)"
: >"$work/tr.ms"; : >"$work/er.ms"
core() { # members in the core, from their status
  local n=0 i
  for i in 1 2 3; do
    "$bin/ticketd" status --socket "$work/r/$i.sock" 2>/dev/null | grep -q '^slot 0 id .* coordinator ticket' && n=$((n + 1))
  done
  echo $n
}
# reclaim_ticketd OUT FLAGS...: one round of the ticketd reclaim, time
# appended to OUT.
reclaim_ticketd() {
  local out=$1; shift
  # ticketd: 3 members, 3 tickets, one holder on each member
  scripts/cluster.sh start -j -n 3 -d "$work/r" "$bin/ticketd" serve --no-color --log-level warn --tickets 3 --socket "$work/r/{id}.sock" "$@" >/dev/null
  until [ "$(core)" = 3 ]; do sleep 0.05; done
  for i in 1 2 3; do
    "$bin/ticketd" run --socket "$work/r/$i.sock" -- sh -c "echo \$TICKETD_TICKET > $work/r/h$i.ticket; echo \$\$ > $work/r/h$i.pid; exec sleep 1000" 2>/dev/null &
  done
  for i in 1 2 3; do until [ -s "$work/r/h$i.pid" ]; do sleep 0.01; done; done
  victim_child=$(cat "$work/r/h2.pid"); lost=$(cat "$work/r/h2.ticket")
  "$bin/ticketd" run --socket "$work/r/1.sock" --timeout 60s -- sh -c "echo \$TICKETD_TICKET > $work/r/w.ticket" 2>/dev/null &
  waiter=$!
  sleep 0.3   # the waiter is queued on member 1
  t0=${EPOCHREALTIME/./}
  scripts/cluster.sh kill 2 -d "$work/r"
  wait "$waiter" || { echo "bench-ticketd: the waiting client failed" >&2; exit 1; }
  t1=${EPOCHREALTIME/./}
  if kill -0 "$victim_child" 2>/dev/null; then
    echo "bench-ticketd: the killed member's command (pid $victim_child) still ran when its ticket was handed out again" >&2; exit 1
  fi
  got=$(cat "$work/r/w.ticket")
  [ "$got" = "$lost" ] || { echo "bench-ticketd: the waiter got ticket $got, not the killed member's $lost" >&2; exit 1; }
  echo $(((t1 - t0) / 1000)) >>"$out"
  scripts/cluster.sh stop -d "$work/r" >/dev/null
  pkill -f "exec sleep 1000" 2>/dev/null || true
  rm -rf "$work/r"
}
: >"$work/tf.ms"
for ((r = 0; r < rounds; r++)); do
  reclaim_ticketd "$work/tr.ms"
  # the same with slower rounds and a long kill grace
  reclaim_ticketd "$work/tf.ms" --round 100ms --max-kill-grace 1s

  # etcd: a holder with a 1 s lease killed by SIGKILL; a waiter
  # (started from a subshell, so that its SIGKILL is not reported as a job's)
  holder=$(sh -c 'etcdctl lock --ttl 1 R -- sleep 1000 >/dev/null 2>&1 & echo $!')
  until [ "$(etcdctl get --prefix R --keys-only 2>/dev/null | grep -c .)" -gt 0 ]; do sleep 0.02; done
  etcdctl lock R -- true >/dev/null 2>&1 &
  waiter=$!
  sleep 0.3
  t0=${EPOCHREALTIME/./}
  kill -9 "$holder"
  wait "$waiter"
  t1=${EPOCHREALTIME/./}
  echo $(((t1 - t0) / 1000)) >>"$work/er.ms"
  pkill -f "sleep 1000" 2>/dev/null || true
done
med() { sort -n "$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
tr_med=$(med "$work/tr.ms"); er_med=$(med "$work/er.ms")
echo "ticketd: ticket reclaimed after $(paste -sd' ' "$work/tr.ms") ms; median $tr_med ms (the killed member's command was gone first, every time)"
tf_med=$(med "$work/tf.ms")
echo "ticketd --round 100ms --max-kill-grace 1s: reclaimed after $(paste -sd' ' "$work/tf.ms") ms; median $tf_med ms"
echo "etcd --ttl 1: lock free after $(paste -sd' ' "$work/er.ms") ms; median $er_med ms"
awk -v a="$tr_med" -v f="$tf_med" -v b="$er_med" 'BEGIN { printf "ratio ticketd/etcd: %.2f with the defaults (target ≤ 0.5), %.2f with 100 ms rounds and a 1 s kill grace\n", a / b, f / b }'

echo "== 3. in-daemon take+release, 5 members, 4 tickets (go test -bench, 3 rounds)"
go test -run '^$' -bench TakeRelease -benchtime 2s -count 3 ./cmd/ticketd | grep -E '^Benchmark' |
  awk '{ for (i = 1; i <= NF; i++) if ($i == "take+release/s") print $1, $(i - 1) }' |
  awk '{ sub(/-[0-9]+$/, "", $1); v[$1] = v[$1] " " $2 } END { for (k in v) print k ":" v[k] " take+release/s (target ≥ 10,000)" }' | sort
