#!/usr/bin/env bash
# bench-mcast.sh — mcast's numbers, measured in one run on this machine:
#
#   1. flood: 3 members on loopback, `mcast bench` flat out, 64-byte
#      messages: delivered msgs/s per member (all senders), latency;
#   2. latency at 1,000 msgs/s from every member, beside the loopback UDP
#      one-way latency that `mcast bench` measures;
#   3. pipes: 3 members each piping 200,000 64-byte lines stdin → stdout:
#      delivered lines/s per member;
#   4. dissemination against serf (installed with lib.sh's apt_install
#      when missing): 10 local members, time from one line (`serf event`) to the
#      last member printing it (running its event handler), median of 20,
#      and the ratio;
#   5. view change: 5 members in total order with the default settings,
#      one SIGKILLed, time until every survivor has installed the view
#      without it; median and worst of 20 fresh groups (target: median
#      ≤ 300 ms; corosync's defaults wait out a 3 s token timeout first);
#   6. agreed (total) order against corosync CPG (installed with lib.sh's
#      apt_install when missing; one corosync node on loopback, n CPG
#      clients of scripts/cpgflood.c, built here against libcpg): 3, 5 and
#      9 members, 64-byte messages, a flood of 100,000 each and 3,000 each
#      at 1,000/s; mcast bench --order total in every total order for the
#      flood, with the sequencer and TOTEM at 1,000/s, the same counts,
#      every member waiting for every message (as cpgflood does), each
#      rate run once as normal processes and once with --realtime
#      (SCHED_RR, as corosync runs itself: the script prints its policy);
#      delivered msgs/s per member and median latency, and the ratios;
#      for each run at 1,000/s on loopback, how busy the host's CPUs were.
#      Any sequence-check error of any member fails the script; the
#      failed flood's reports and stderr logs of every member are kept
#      in a directory the script names (bench-mcast-failed.* in TMPDIR).
#      The one-node anchor is no ring: its n clients reach one daemon over
#      IPC, with no network hop between members. At 1,000/s its clients
#      wait for their next send in ppoll(2), as event-driven CPG clients
#      do; the same run with clients that spin on cpg_dispatch (how
#      cpgflood waited before) is measured and reported beside it, with
#      the host's CPU use of each. Beside it, for each n:
#      a. the token ring's physical bound: n processes on loopback pass
#         one UDP datagram round a ring with no protocol at all
#         (scripts/ringbound.c, built here with gcc), idle and while each
#         also sends 1,000 64-byte datagrams/s to every other: median
#         rotation and hop, the latency a token protocol cannot beat at
#         1,000 msgs/s per member (half a rotation, then one hop), and
#         TOTEM's median at 1,000/s divided by it;
#      b. corosync as a ring of n nodes: n daemons (transport udpu), each
#         in a network namespace of scripts/netsplit.sh (veth pairs onto a
#         bridge in a namespace of its own, all removed at exit, on failure
#         and on SIGINT), one cpgflood client per namespace, and the mcast
#         members in the same namespaces (--insecure, as corosync runs
#         with crypto none); the same flood and rate runs, and the ratios
#         of corosync's ring to its one node and of every order (in the
#         namespaces, and on loopback) to the ring. Needs ip, iptables
#         and network namespaces (root); without them it says so and skips.
#
#   scripts/bench-mcast.sh
#   PARTS="6" MEMBERS="9" scripts/bench-mcast.sh   only the steps listed
#       (default "1 2 3 4 5 6"), and in step 6 only these member counts
#       (default "3 5 9"); COUNT sets step 6's flood per member (default
#       100000), BENCH_TIMEOUT the longest one member of one run of step 6
#       may take (default 300 s; a member that takes longer fails the bench)
#   FLOOD=0 PARTS=6 scripts/bench-mcast.sh   step 6 without its floods:
#       only the runs at 1,000/s (corosync, the sequencer and TOTEM), their
#       ratios and the bound
#   RING=0 scripts/bench-mcast.sh   step 6 without corosync's ring of n
#       nodes in namespaces (the bound is still measured); BOUND_SECS how
#       long each of the bound's runs lasts (default 3)
. "$(dirname "$0")/lib.sh"
parts=" ${PARTS:-1 2 3 4 5 6} "
part() { [[ "$parts" == *" $1 "* ]]; }
work=$(mktemp -d)
pids=()
ringdir=
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  # Step 6's namespaced ring: its daemons and members go with the
  # namespaces (scripts/netsplit.sh down kills whatever runs in them).
  [ -z "$ringdir" ] || scripts/netsplit.sh down -d "$ringdir" >/dev/null 2>&1 || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
build_tools "$work/bin"
mc="$bin/mcast"

ports() { # n: n free-looking UDP ports from a random base
  local base=$((20000 + RANDOM % 20000))
  for ((i = 0; i < $1; i++)); do echo $((base + i)); done
}
peers() { # n
  local i=1
  for p in $(ports "$1"); do printf '%d=127.0.0.1:%d\n' "$i" "$p"; i=$((i + 1)); done >"$work/peers"
}

if part 1; then
echo "== 1. flood: 3 members, mcast bench flat out, 64-byte messages, 200,000 sent by each"
peers 3
for i in 1 2 3; do "$mc" bench --id "$i" --peers @"$work/peers" --count 200000 --size 64 2>/dev/null >"$work/flood.$i" & done
wait
cat "$work"/flood.*
fi

if part 2; then
echo
echo "== 2. latency at 1,000 msgs/s from each of 3 members (3,000 each)"
peers 3
for i in 1 2 3; do "$mc" bench --id "$i" --peers @"$work/peers" --count 3000 --rate 1000 --size 64 2>/dev/null >"$work/rate.$i" & done
wait
cat "$work"/rate.*
fi

if part 3; then
echo
echo "== 3. pipes: 3 members, each piping 200,000 64-byte lines through stdin to stdout"
peers 3
start=$(date +%s%N)
for i in 1 2 3; do seq -f '%063g' 1 200000 | "$mc" run --id "$i" --peers @"$work/peers" 2>/dev/null | wc -l >"$work/pipe.$i" & done
wait
ms=$(( ($(date +%s%N) - start) / 1000000 ))
for i in 1 2 3; do
  awk -v n="$(cat "$work/pipe.$i")" -v ms="$ms" -v i="$i" 'BEGIN { printf "member %d: %d lines delivered in %d ms: %.0f lines/s\n", i, n, ms, n * 1000 / ms }'
done
fi

if part 4; then
echo
echo "== 4. dissemination: 10 local members, one line to the last member's output, median of 20"
ts_ns() { date -d "$1" +%s%N; }
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
n=10
peers $n
mkfifo "$work/in"
for i in $(seq 1 $n); do
  if [ "$i" = 1 ]; then
    "$mc" run --id 1 --peers @"$work/peers" --json --ready-file "$work/ready.1" <"$work/in" >"$work/d.1" 2>/dev/null &
  else
    "$mc" run --id "$i" --peers @"$work/peers" --json --linger 10m --ready-file "$work/ready.$i" </dev/null >"$work/d.$i" 2>/dev/null &
  fi
  pids+=($!)
done
exec 3>"$work/in"
for i in $(seq 1 $n); do until [ -s "$work/ready.$i" ]; do sleep 0.01; done; done
: >"$work/mcast.lat"
for k in $(seq 1 20); do
  t0=$(date +%s%N)
  echo "line $k" >&3
  for i in $(seq 2 $n); do
    until grep -q "\"sender\":1,\"seq\":$k," "$work/d.$i" 2>/dev/null; do sleep 0.002; done
  done
  last=0
  for i in $(seq 2 $n); do
    t=$(ts_ns "$(grep -m1 "\"sender\":1,\"seq\":$k," "$work/d.$i" | sed -E 's/^\{"time":"([^"]+)".*/\1/')")
    [ "$t" -gt "$last" ] && last=$t
  done
  echo $(( (last - t0) / 1000 )) >>"$work/mcast.lat"
  sleep 0.2
done
exec 3>&-
mcast_us=$(median <"$work/mcast.lat")
echo "mcast: median $(awk -v u="$mcast_us" 'BEGIN { printf "%.2f ms", u / 1000 }') from the write to member 1's stdin to the last of the other 9 printing the line"

command -v serf >/dev/null 2>&1 || apt_install serf || true
if ! command -v serf >/dev/null 2>&1; then
  echo "(serf is not installed and cannot be here: the serf comparison is skipped)"
else
cat >"$work/handler.sh" <<EOF
#!/bin/sh
read -r payload
echo "\$SERF_SELF_NAME \$payload \$(date +%s%N)" >>"$work/serf.events"
EOF
chmod +x "$work/handler.sh"
: >"$work/serf.events"
base=$((40000 + RANDOM % 10000))
for i in $(seq 1 $n); do
  args=(agent -node "n$i" -bind "127.0.0.1:$((base + i))" -rpc-addr "127.0.0.1:$((base + 100 + i))"
        -event-handler "user:bench=$work/handler.sh" -log-level err)
  [ "$i" -gt 1 ] && args+=(-join "127.0.0.1:$((base + 1))")
  serf "${args[@]}" >"$work/serf.$i.log" 2>&1 &
  pids+=($!)
  # The first agent must listen before the others join it.
  [ "$i" = 1 ] && until serf members -rpc-addr "127.0.0.1:$((base + 101))" >/dev/null 2>&1; do sleep 0.05; done
done
deadline=$(( $(date +%s) + 30 ))
until [ "$(serf members -rpc-addr "127.0.0.1:$((base + 101))" 2>/dev/null | grep -c alive || true)" = "$n" ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { echo "serf: the 10 agents did not form a cluster within 30 s" >&2; exit 1; }
  sleep 0.1
done
: >"$work/serf.lat"
for k in $(seq 1 20); do
  t0=$(date +%s%N)
  serf event -coalesce=false -rpc-addr "127.0.0.1:$((base + 101))" bench "e$k" >/dev/null
  until [ "$(grep -c " e$k " "$work/serf.events")" -ge "$n" ]; do sleep 0.002; done
  last=$(grep " e$k " "$work/serf.events" | awk '{ print $3 }' | sort -n | tail -1)
  echo $(( (last - t0) / 1000 )) >>"$work/serf.lat"
  sleep 0.2
done
serf_us=$(median <"$work/serf.lat")
echo "serf:  median $(awk -v u="$serf_us" 'BEGIN { printf "%.2f ms", u / 1000 }') from 'serf event' to the last of the 10 agents running its handler"
awk -v a="$mcast_us" -v b="$serf_us" 'BEGIN { printf "ratio: mcast takes %.3f of serf'"'"'s time (target ≤ 0.5)\n", a / b }'
fi
fi

if part 5; then
echo
echo "== 5. view change after SIGKILL: 5 members, --order total, default settings, 20 fresh groups"
go test -run '^$' -bench 'BenchmarkViewChange$' -benchtime 20x ./cmd/mcast | grep -E '^Benchmark'
fi

part 6 || exit 0
echo
echo "== 6. agreed order against corosync CPG: 3, 5 and 9 members, 64-byte messages"
if ! command -v corosync >/dev/null 2>&1 || [ ! -e /usr/include/corosync/cpg.h ]; then
  apt_install corosync libcpg-dev || true
fi
if ! command -v corosync >/dev/null 2>&1 || [ ! -e /usr/include/corosync/cpg.h ] || [ "$(id -u)" != 0 ]; then
  echo "(corosync and libcpg-dev are not installed and cannot be here, or not root: the corosync comparison is skipped)"
  exit 0
fi
gcc -O2 -o "$work/cpgflood" scripts/cpgflood.c -lcpg
cat >"$work/corosync.conf" <<EOC
totem {
    version: 2
    cluster_name: rtbench
    transport: knet
    crypto_cipher: none
    crypto_hash: none
}
nodelist {
    node {
        ring0_addr: 127.0.0.1
        nodeid: 1
    }
}
quorum {
    provider: corosync_votequorum
}
logging {
    to_stderr: yes
    to_syslog: no
}
EOC
mkdir -p /var/run/corosync /var/lib/corosync
corosync -f -c "$work/corosync.conf" >"$work/corosync.log" 2>&1 &
pids+=($!)
deadline=$(( $(date +%s) + 30 ))
until corosync-cpgtool >/dev/null 2>&1; do
  [ "$(date +%s)" -lt "$deadline" ] || { echo "corosync did not start within 30 s:" >&2; tail "$work/corosync.log" >&2; exit 1; }
  sleep 0.1
done
# corosync-cpgtool answers for any corosync of this network namespace: if
# ours exited because another daemon holds /var/run/corosync.pid (another
# run of step 6 on this host), our clients would share that daemon, its
# load and group names, and fail when it ends.
sleep 0.5
if ! kill -0 "${pids[-1]}" 2>/dev/null; then
  echo "corosync exited: another corosync holds /var/run/corosync.pid (another run of step 6 on this host?); the one-node anchor would not be ours alone:" >&2
  tail -3 "$work/corosync.log" >&2
  exit 1
fi
field() { # file regexp: the last number in the first match
  grep -oE "$2" "$1" | head -1 | grep -oE '[0-9.]+' | tail -1
}
member() { # i CMD...: run CMD as member i: on loopback, or in the ring's namespace i
  local i=$1
  shift
  if [ -n "$inring" ]; then scripts/netsplit.sh exec "$i" -d "$inring" -- "$@"; else "$@"; fi
}
inring=
where=
coro() { # tag members count [rate [spin]] (corosync runs in the background: wait for the clients only)
  local c=() how=${5:+ (clients spinning)}
  for ((i = 1; i <= $2; i++)); do member "$i" timeout "$tmo" "$work/cpgflood" "rt$1" "$2" "$3" 64 ${4:-} ${5:-} >"$work/coro.$1.$i" & c+=($!); done
  wait "${c[@]}" || echo "corosync CPG$where$how, $2 members: a client failed or took over $tmo s" >&2
  echo "corosync CPG$where$how, $2 members: $(cat "$work/coro.$1.1")"
}
# corosync runs itself under SCHED_RR by default (corosync.conf's
# system.sched_rr); the members run normally unless rt is set (mcast
# --realtime), and step 6 measures them both ways at 1,000/s.
echo "corosync's scheduling: $(chrt -p "${pids[-1]}" 2>/dev/null | sed -E 's/^pid [0-9]+.s current //' | paste -sd ';' || echo unknown)"
rt=
fails=0
tmo=${BENCH_TIMEOUT:-300}
count=${COUNT:-100000}
ours() { # tag total members count [rate]: every member waits for every message
  local c=() i pf=$work/peers insecure=()
  # In the ring's namespaces the members reach each other over veth, not
  # loopback: without a key, as corosync runs here (crypto none).
  if [ -n "$inring" ]; then pf=$inring/peers insecure=(--insecure); else peers "$3"; fi
  for ((i = 1; i <= $3; i++)); do member "$i" timeout "$tmo" "$mc" bench --id "$i" --peers @"$pf" "${insecure[@]}" --order total --total "$2" --count "$4" ${5:+--rate $5} --size 64 --json ${rt:+--realtime} 2>"$work/ours.$1.$i.log" >"$work/ours.$1.$i" & c+=($!); done
  wait "${c[@]}" || true
  echo "mcast $2${rt:+ --realtime}$where, $3 members: $(cat "$work/ours.$1.1")"
  local failed=0
  for ((i = 1; i <= $3; i++)); do
    # A sequence-check error (a hole, a repeat, a bad checksum, a missing
    # message) at any member fails the bench.
    # No report at all (a member that died) is a failure too, not the
    # end of the script.
    e=$(field "$work/ours.$1.$i" '"errors":[0-9]+' || true)
    if [ "${e:-1}" != 0 ]; then
      echo "FAIL: $1, member $i: ${e:-no report} errors: $(grep -oE '"first_error":"[^"]*"' "$work/ours.$1.$i")" >&2
      fails=$((fails + 1))
      failed=1
    fi
  done
  if [ "$failed" = 1 ]; then
    # Keep a failed flood's reports and logs (views, suspicions, missed
    # and lost lines) past the script's cleanup.
    [ -n "$kept" ] || kept=$(mktemp -d "${TMPDIR:-/tmp}/bench-mcast-failed.XXXXXX")
    cp "$pf" "$kept/$1.peers"
    cp "$work/ours.$1".* "$kept/"
    echo "FAIL: $1: reports and logs of every member kept in $kept" >&2
  fi
}
kept=
ratio() { awk -v a="$1" -v b="$2" -v what="$3" 'BEGIN { printf "ratio %s: %.2f\n", what, a / b }'; }
ratio_or() { # as ratio, or say that a run gave no figure
  if [ -n "$1" ] && [ -n "$2" ]; then ratio "$@"; else echo "ratio $3: none (a run gave no figure)"; fi
}

# The token ring's physical bound (scripts/ringbound.c): n processes on
# loopback pass one datagram round a ring with no protocol, idle and under
# the bench's load (1,000 64-byte datagrams/s from each to every other).
gcc -O2 -o "$work/ringbound" scripts/ringbound.c
bound_secs=${BOUND_SECS:-3}
bound() { # n (a failed run says so; the bench goes on)
  "$work/ringbound" "$1" "$bound_secs" >"$work/bound.$1.idle" || true
  "$work/ringbound" "$1" "$bound_secs" 1000 >"$work/bound.$1.load" || true
  cat "$work/bound.$1.idle" "$work/bound.$1.load"
  echo "(load average: $(cut -d' ' -f1-3 /proc/loadavg))"
}

# corosync as a ring of n nodes: n daemons, one per network namespace of
# scripts/netsplit.sh (veth pairs onto a bridge in a namespace of its own),
# transport udpu, and one CPG client in each namespace: libqb's IPC uses
# abstract unix sockets, which belong to a network namespace, so each
# client reaches its own namespace's daemon. corosync locks
# /var/run/corosync.pid: each daemon gets a /run of its own (ip netns exec
# runs it in a mount namespace of its own, so the bind stays there).
ring=${RING:-1}
flood=${FLOOD:-1}
if [ "$ring" != 0 ] && { ! command -v ip >/dev/null 2>&1 || ! command -v iptables >/dev/null 2>&1 || ! ip netns list >/dev/null 2>&1; }; then
  echo "(ip or iptables is missing, or this host refuses network namespaces: corosync as a ring of n nodes is skipped)"
  ring=0
fi
ring_up() { # n: the namespaces, and corosync running in each; returns 1 if it cannot
  ringdir=$work/ring$1
  if ! scripts/netsplit.sh up -n "$1" -d "$ringdir" >"$work/netsplit.log" 2>&1; then
    echo "(cannot make network namespaces here: corosync as a ring of $1 nodes is skipped)"; cat "$work/netsplit.log" >&2
    scripts/netsplit.sh down -d "$ringdir" >/dev/null 2>&1 || true
    ringdir=
    return 1
  fi
  {
    printf 'totem {\n    version: 2\n    cluster_name: rtring\n    transport: udpu\n    crypto_cipher: none\n    crypto_hash: none\n}\n'
    printf 'nodelist {\n'
    sed -E 's/^([0-9]+)=([0-9.]+):.*/    node {\n        ring0_addr: \2\n        nodeid: \1\n    }/' "$ringdir/peers"
    printf '}\nquorum {\n    provider: corosync_votequorum\n}\nlogging {\n    to_stderr: yes\n    to_syslog: no\n}\n'
  } >"$ringdir/corosync.conf"
  local i deadline
  for ((i = 1; i <= $1; i++)); do
    mkdir -p "$ringdir/run.$i" "$ringdir/state.$i"
    sed "s|^totem {|system {\n    state_dir: $ringdir/state.$i\n}\ntotem {|" "$ringdir/corosync.conf" >"$ringdir/corosync.$i.conf"
    scripts/netsplit.sh exec "$i" -d "$ringdir" -- sh -c 'mount --bind "$1" /run && exec corosync -f -c "$2"' sh "$ringdir/run.$i" "$ringdir/corosync.$i.conf" >"$ringdir/corosync.$i.log" 2>&1 &
  done
  # Up once every daemon has the whole ring among its members.
  deadline=$(( $(date +%s) + 30 ))
  for ((i = 1; i <= $1; i++)); do
    until [ "$(scripts/netsplit.sh exec "$i" -d "$ringdir" -- corosync-cmapctl runtime.members 2>/dev/null | grep -c 'status (str) = joined' || true)" = "$1" ]; do
      if [ "$(date +%s)" -ge "$deadline" ]; then
        echo "corosync ring of $1 nodes: node $i did not see every node joined within 30 s:" >&2
        tail -5 "$ringdir/corosync.$i.log" >&2
        return 1
      fi
      sleep 0.1
    done
  done
}
ring_down() {
  scripts/netsplit.sh down -d "$ringdir" >/dev/null 2>&1 || true
  ringdir=
}
# cpu LABEL CMD...: run CMD and say how busy the whole host was meanwhile
# (/proc/stat: every CPU's user, nice, system, irq, softirq and steal time, from
# the members' start to the last one's end, formation included): the
# CPU a run at 1,000/s costs, which on a 2-core host at 9 members is
# what its latency queues behind. The kernel counts these times by
# sampling at its ticks, and on a virtual machine the busy and idle
# times of a run were seen to add up to less than its wall time: an estimate, good
# for telling a host kept busy (a client that spins) from one that is not.
cpustat() { awk '/^cpu /{b = $2 + $3 + $4 + $7 + $8 + $9; print b, b + $5 + $6; exit}' /proc/stat; }
cpu() {
  local label=$1 b0 t0 b1 t1 hz
  shift
  hz=$(getconf CLK_TCK)
  read -r b0 t0 < <(cpustat)
  "$@"
  read -r b1 t1 < <(cpustat)
  awk -v b=$((b1 - b0)) -v t=$((t1 - t0)) -v hz="$hz" -v l="$label" -v c="$(nproc)" \
    'BEGIN { printf "host CPU, %s: %.2f CPU-s busy in %.2f s (%.0f%% of %d cores)\n", l, b / hz, t / hz / c, t ? 100 * b / t : 0, c }'
}
for n in ${MEMBERS:-3 5 9}; do
  echo
  if [ "$flood" != 0 ]; then
    echo "-- $n members: a flood of $count each, then 3,000 each at 1,000/s"
    coro "flood$n" "$n" "$count"
    for t in sequencer lamport isis totem; do ours "${t}flood$n" "$t" "$n" "$count"; done
  else
    echo "-- $n members: 3,000 each at 1,000/s (FLOOD=0: no flood)"
  fi
  # The anchor at 1,000/s: cpgflood's clients wait for their next send in
  # ppoll(2), as an event-driven CPG client does. Measured too as they
  # waited before (cpg_dispatch in a loop that never blocks: every client
  # keeps a CPU busy and sees a delivery without a wake-up), for the
  # figures of earlier runs; the targets are against the first.
  cpu "corosync CPG, $n members at 1,000/s" coro "rate$n" "$n" 3000 1000
  cpu "corosync CPG (clients spinning), $n members at 1,000/s" coro "spinrate$n" "$n" 3000 1000 spin
  for t in sequencer totem; do cpu "mcast $t, $n members at 1,000/s" ours "${t}rate$n" "$t" "$n" 3000 1000; done
  rt=1
  for t in sequencer totem; do cpu "mcast $t --realtime, $n members at 1,000/s" ours "${t}rtrate$n" "$t" "$n" 3000 1000; done
  rt=
  if [ "$flood" != 0 ]; then
    cf=$(field "$work/coro.flood$n.1" '[0-9]+ msgs/s')
    for t in sequencer lamport isis totem; do
      ratio "$(field "$work/ours.${t}flood$n.1" '"msgs_per_s":[0-9.]+')" "$cf" "$t flood msgs/s / corosync, $n members (target ≥ 1)"
    done
  fi
  cl=$(field "$work/coro.rate$n.1" 'p50 [0-9.]+us')
  for t in sequencer totem; do
    ratio "$(field "$work/ours.${t}rate$n.1" '"p50_us":[0-9]+')" "$cl" "$t median latency at 1,000/s / corosync, $n members (target ≤ 1)"
    ratio_or "$(field "$work/ours.${t}rtrate$n.1" '"p50_us":[0-9]+' || true)" "$cl" "$t --realtime median latency at 1,000/s / corosync (both under SCHED_RR), $n members (target ≤ 1)"
  done
  cs=$(field "$work/coro.spinrate$n.1" 'p50 [0-9.]+us' || true)
  for t in sequencer totem; do
    ratio_or "$(field "$work/ours.${t}rate$n.1" '"p50_us":[0-9]+')" "$cs" "$t median latency at 1,000/s / corosync with its clients spinning, $n members"
    ratio_or "$(field "$work/ours.${t}rtrate$n.1" '"p50_us":[0-9]+' || true)" "$cs" "$t --realtime median latency at 1,000/s / corosync with its clients spinning, $n members"
  done

  echo "-- $n members: the token ring's physical bound (n processes on loopback, one datagram round the ring, no protocol)"
  bound "$n"
  bl=$(field "$work/bound.$n.load" 'bound \(rotation/2 \+ hop\) [0-9.]+us' || true)
  ratio_or "$(field "$work/ours.totemrate$n.1" '"p50_us":[0-9]+')" "$bl" "totem median latency at 1,000/s / the token ring's bound under load ($bl us), $n members"
  ratio_or "$(field "$work/ours.totemrtrate$n.1" '"p50_us":[0-9]+' || true)" "$bl" "totem --realtime median latency at 1,000/s / the token ring's bound under load ($bl us), $n members"

  [ "$ring" != 0 ] || continue
  echo "-- $n members: corosync as a ring of $n nodes (one daemon per network namespace, udpu over veth and a bridge), mcast members in the same namespaces"
  echo "(load average: $(cut -d' ' -f1-3 /proc/loadavg))"
  ring_up "$n" || { ring_down; continue; }
  inring=$ringdir where=" (namespaces)"
  if [ "$flood" != 0 ]; then
    coro "ringflood$n" "$n" "$count"
    for t in sequencer lamport isis totem; do ours "${t}ringflood$n" "$t" "$n" "$count"; done
  fi
  coro "ringrate$n" "$n" 3000 1000
  for t in sequencer totem; do ours "${t}ringrate$n" "$t" "$n" 3000 1000; done
  rt=1
  for t in sequencer totem; do ours "${t}ringrtrate$n" "$t" "$n" 3000 1000; done
  rt=
  inring= where=
  ring_down
  echo "(load average: $(cut -d' ' -f1-3 /proc/loadavg))"
  rf=$(field "$work/coro.ringflood$n.1" '[0-9]+ msgs/s' 2>/dev/null || true)
  rl=$(field "$work/coro.ringrate$n.1" 'p50 [0-9.]+us' || true)
  ratio_or "$rl" "$cl" "corosync median latency at 1,000/s, ring of $n nodes / one node"
  if [ "$flood" != 0 ]; then
    ratio_or "$rf" "$cf" "corosync flood msgs/s, ring of $n nodes / one node"
    for t in sequencer lamport isis totem; do
      ratio_or "$(field "$work/ours.${t}ringflood$n.1" '"msgs_per_s":[0-9.]+')" "$rf" "$t flood msgs/s / corosync, both in namespaces, ring of $n nodes"
      ratio_or "$(field "$work/ours.${t}flood$n.1" '"msgs_per_s":[0-9.]+')" "$rf" "$t flood msgs/s on loopback / corosync ring of $n nodes"
    done
  fi
  for t in sequencer totem; do
    ratio_or "$(field "$work/ours.${t}ringrate$n.1" '"p50_us":[0-9]+')" "$rl" "$t median latency at 1,000/s / corosync, both in namespaces, ring of $n nodes"
    ratio_or "$(field "$work/ours.${t}ringrtrate$n.1" '"p50_us":[0-9]+' || true)" "$rl" "$t --realtime median latency at 1,000/s / corosync, both in namespaces and under SCHED_RR, ring of $n nodes"
    ratio_or "$(field "$work/ours.${t}rate$n.1" '"p50_us":[0-9]+')" "$rl" "$t median latency at 1,000/s on loopback / corosync ring of $n nodes"
  done
done
if [ "$fails" -gt 0 ]; then
  echo "$fails floods failed their sequence check (logs in $kept)" >&2
  exit 1
fi
