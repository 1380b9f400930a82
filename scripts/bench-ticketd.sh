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
#      with its defaults (--round 30ms --max-kill-grace 100ms) and with each
#      variant of TICKETD_FLAGS (default: --round 100ms --max-kill-grace 1s,
#      for a command that needs a second to stop).
#   3. in-daemon take+release per second, 5 members, 4 tickets, without
#      process start-up (go test -bench);
#   4. load: CLIENTS (50) concurrent clients for LOAD_SECS (30) seconds
#      against 5 ticketd members sharing TICKETS (5) tickets, then the same
#      harness against 5 lockd daemons (central) and TICKETS lock names:
#      each client loops `run --timeout 10s -- sleep 0.01` on member
#      (client mod 5) + 1 (lockd: lock L<client mod TICKETS>) until the time
#      is up. Grants, timeouts (75) and other ends for each, the pool's
#      refounds (from every member's status) and lockd's coordinator terms,
#      and the ratio of grants ticketd/lockd (target: ≥ 0.8, 0 timeouts,
#      0 refounds). Then the bound: the same lockd harness where each grant
#      also starts the ticketd binary once more, as `ticketd run` starts its
#      watchdog: the binary re-executed as an unarmed watchdog
#      (ROUNDTABLE_WATCHDOG_DEADLINE=-), started as the lock is asked for
#      and waited for after the command; with stdin at its end it exits as
#      soon as it is up. That is what ticketd's design costs per grant
#      beyond lockd's (one more Go process start) without ticketd's
#      protocol: ticketd/bound near 1 means the rest of the gap is process
#      start.
# Installs etcd-server and etcd-client when missing (lib.sh's apt_install),
# for parts 1 and 2.
#
#   scripts/bench-ticketd.sh [ITER] [ROUNDS]     (defaults 200 and 5)
#   PARTS="4" scripts/bench-ticketd.sh            only the parts listed (default "1 2 3 4")
#   CLIENTS=50 LOAD_SECS=30 TICKETS=5            part 4's load
#   TICKETD_FLAGS="--round 30ms;--round 25ms"    part 2's variants beside the defaults,
#                                                ';' between variants: each is timed in
#                                                every round, in turn with the defaults
#                                                and etcd, against etcd's median
#   HOG=8                                        part 4 beside 8 busy loops (a busy
#                                                host; each ends with the script, or
#                                                after 10 min at most)
#   PROFILE=DIR                                  part 4's ticketd members write CPU
#                                                profiles to DIR/ticketd.cpu.<id>
#                                                (go tool pprof BINARY FILE)
. "$(dirname "$0")/lib.sh"
iter=${1:-200}
rounds=${2:-5}
parts=" ${PARTS:-1 2 3 4} "
clients=${CLIENTS:-50}
load_secs=${LOAD_SECS:-30}
pool=${TICKETS:-5}
hog=${HOG:-0}
[[ "$hog" =~ ^[0-9]+$ ]] || { echo "bench-ticketd: HOG is a whole number of busy loops" >&2; exit 64; }
for v in "$iter" "$rounds" "$clients" "$load_secs" "$pool"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "bench-ticketd: ITER, ROUNDS, CLIENTS, LOAD_SECS and TICKETS are positive whole numbers" >&2; exit 64; }
done
part() { [[ "$parts" == *" $1 "* ]]; }
work=$(mktemp -d)
bg=() # background clients and holders, killed at exit
cleanup() {
  for p in ${bg[@]+"${bg[@]}"}; do kill "$p" 2>/dev/null || true; done
  for c in t l r lt ll; do scripts/cluster.sh stop -d "$work/$c" >/dev/null 2>&1 || true; done
  [ -n "${etcd_pid:-}" ] && kill "$etcd_pid" 2>/dev/null || true
  # commands that outlived a SIGKILLed client (etcdctl's); ticketd's and
  # lockd's are stopped by their watchdogs
  for f in "$work"/*.sleeper; do [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

build_tools "$work/bin"
stats() { sort -n "$1" | awk '{ a[NR] = $1 } END { printf "%d %d", a[int((NR + 1) / 2)], a[int(NR * 0.99 + 0.999)] }'; }
ms() { awk -v us="$1" 'BEGIN { printf "%.2f ms", us / 1000 }'; }

if part 1 || part 2; then
  . scripts/etcd.sh
  need_etcd bench-ticketd
  start_etcd "$work"
fi

if part 1; then

# ticketd: 3 members, 4 tickets; lockd: 3 daemons (central)
scripts/cluster.sh start -j -n 3 -d "$work/t" "$bin/ticketd" serve --no-color --log-level warn --tickets 4 --socket "$work/t/{id}.sock" >/dev/null
scripts/cluster.sh start -n 3 -d "$work/l" "$bin/lockd" serve --no-color --log-level warn --socket "$work/l/{id}.sock" >/dev/null
tsock="$work/t/1.sock"; lsock="$work/l/3.sock"
until "$bin/ticketd" run --socket "$tsock" --nonblock -- true 2>/dev/null; do sleep 0.05; done
until "$bin/lockd" run --socket "$lsock" --nonblock warmup -- true 2>/dev/null; do sleep 0.05; done

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
fi

if part 2; then
echo "== 2. reclaim after SIGKILL, $rounds rounds each (ticketd defaults: --round 30ms, --max-kill-grace 100ms)"
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
    bg+=($!)
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
  for i in 1 2 3; do kill "$(cat "$work/r/h$i.pid")" 2>/dev/null || true; done
  rm -rf "$work/r"
}
# part 2's variants: TICKETD_FLAGS, ';' between them
IFS=';' read -ra variants <<<"${TICKETD_FLAGS:---round 100ms --max-kill-grace 1s}"
for j in "${!variants[@]}"; do : >"$work/tv$j.ms"; done
for ((r = 0; r < rounds; r++)); do
  reclaim_ticketd "$work/tr.ms"
  # the same with each variant's flags (unquoted: one word per flag)
  for j in "${!variants[@]}"; do
    # shellcheck disable=SC2086
    reclaim_ticketd "$work/tv$j.ms" ${variants[$j]}
  done

  # etcd: a holder with a 1 s lease killed by SIGKILL; a waiter
  # (started from a subshell, so that its SIGKILL is not reported as a job's)
  holder=$(sh -c 'etcdctl lock --ttl 1 R -- sh -c "echo \$\$ >$1; exec sleep 1000" >/dev/null 2>&1 & echo $!' sh "$work/etcd.sleeper")
  until [ "$(etcdctl get --prefix R --keys-only 2>/dev/null | grep -c .)" -gt 0 ]; do sleep 0.02; done
  etcdctl lock R -- true >/dev/null 2>&1 &
  waiter=$!
  sleep 0.3
  t0=${EPOCHREALTIME/./}
  kill -9 "$holder"
  wait "$waiter"
  t1=${EPOCHREALTIME/./}
  echo $(((t1 - t0) / 1000)) >>"$work/er.ms"
  kill "$(cat "$work/etcd.sleeper")" 2>/dev/null || true
done
med() { sort -n "$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
tr_med=$(med "$work/tr.ms"); er_med=$(med "$work/er.ms")
echo "ticketd: ticket reclaimed after $(paste -sd' ' "$work/tr.ms") ms; median $tr_med ms (the killed member's command was gone first, every time)"
echo "etcd --ttl 1: lock free after $(paste -sd' ' "$work/er.ms") ms; median $er_med ms"
awk -v a="$tr_med" -v b="$er_med" 'BEGIN { printf "ratio ticketd/etcd: %.2f with the defaults (target ≤ 0.5)\n", a / b }'
for j in "${!variants[@]}"; do
  tv_med=$(med "$work/tv$j.ms")
  echo "ticketd ${variants[$j]}: reclaimed after $(paste -sd' ' "$work/tv$j.ms") ms; median $tv_med ms; ratio ticketd/etcd $(awk -v a="$tv_med" -v b="$er_med" 'BEGIN { printf "%.2f", a / b }')"
done

fi

if part 3; then
echo "== 3. in-daemon take+release, 5 members, 4 tickets (go test -bench, 3 rounds)"
go test -run '^$' -bench TakeRelease -benchtime 2s -count 3 ./cmd/ticketd | grep -E '^Benchmark' |
  awk '{ for (i = 1; i <= NF; i++) if ($i == "take+release/s") print $1, $(i - 1) }' |
  awk '{ sub(/-[0-9]+$/, "", $1); v[$1] = v[$1] " " $2 } END { for (k in v) print k ":" v[k] " take+release/s (target ≥ 10,000)" }' | sort
fi

if part 4; then
echo "== 4. load: $clients clients for ${load_secs}s against 5 ticketd members ($pool tickets), then 5 lockd daemons ($pool locks)"
prof=()
if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$PROFILE"; cp "$bin/ticketd" "$PROFILE/ticketd"
  prof=(env ROUNDTABLE_CPUPROFILE="$(cd "$PROFILE" && pwd)/ticketd.cpu")
fi
${prof[@]+"${prof[@]}"} scripts/cluster.sh start -j -n 5 -d "$work/lt" "$bin/ticketd" serve --no-color --log-level warn --tickets "$pool" --socket "$work/lt/{id}.sock" >/dev/null
scripts/cluster.sh start -n 5 -d "$work/ll" "$bin/lockd" serve --no-color --log-level warn --socket "$work/ll/{id}.sock" >/dev/null
# every member grants once before the clock starts (three tries: on a
# loaded host a first grant can be lost before its command starts)
for i in 1 2 3 4 5; do
  ok=0
  for try in 1 2 3; do
    "$bin/ticketd" run --socket "$work/lt/$i.sock" --quiet --timeout 20s -- true && { ok=1; break; }
  done
  [ "$ok" = 1 ] || { echo "bench-ticketd: ticketd member $i granted nothing in three tries of 20 s" >&2; exit 1; }
  "$bin/lockd" run --socket "$work/ll/$i.sock" --quiet --timeout 20s warmup -- true ||
    { echo "bench-ticketd: lockd daemon $i granted nothing within 20 s" >&2; exit 1; }
done
# refounds: the sum over the members' status (absent: "?")
refounds() {
  local i n sum=0 seen=0
  for i in 1 2 3 4 5; do
    n=$("$bin/ticketd" status --json --socket "$work/lt/$i.sock" 2>/dev/null | grep -oE '"refounds":[0-9]+' | head -1 | cut -d: -f2) || true
    [ -n "$n" ] && { sum=$((sum + n)); seen=1; }
  done
  [ "$seen" = 1 ] && echo "$sum" || echo "?"
}
# term: lockd's coordinator term, as daemon 1 sees it
term() { "$bin/lockd" status --json --socket "$work/ll/1.sock" 2>/dev/null | grep -oE '"term":[0-9]+' | head -1 | cut -d: -f2 || true; }
# load TOOL DIR: CLIENTS loops until LOAD_SECS are up, each `run --timeout
# 10s -- sleep 0.01` in turn (every run ends within its 10 s wait and the
# hold, so every loop ends within about 10 s of the deadline); prints the
# sums: grants timeouts(75) unavailable(69) lost(76) other.
load() {
  local tool=$1 dir=$2 i m end pids=() cmd
  end=$((EPOCHSECONDS + load_secs))
  for ((i = 0; i < clients; i++)); do
    m=$((i % 5 + 1))
    if [ "$tool" = ticketd ]; then
      cmd=("$bin/ticketd" run --socket "$dir/$m.sock" --quiet --timeout 10s -- sleep 0.01)
    else
      cmd=("$bin/lockd" run --socket "$dir/$m.sock" --quiet --timeout 10s "L$((i % pool))" -- sleep 0.01)
    fi
    ( g=0 t=0 u=0 l=0 o=0
      while ((EPOCHSECONDS < end)); do
        [ "$tool" = bound ] && { ROUNDTABLE_WATCHDOG_DEADLINE=- "$bin/ticketd" </dev/null >/dev/null 2>>"$dir/clients.err" & w=$!; }
        rc=0; "${cmd[@]}" >/dev/null 2>>"$dir/clients.err" || rc=$?
        [ "$tool" = bound ] && { wait "$w" || true; }
        case $rc in 0) g=$((g + 1));; 75) t=$((t + 1));; 69) u=$((u + 1));; 76) l=$((l + 1));; *) o=$((o + 1));; esac
      done
      echo "$g $t $u $l $o" >"$dir/c$i.count" ) &
    pids+=($!); bg+=($!)
  done
  wait "${pids[@]}"
  echo "$tool: load average at the end $(cut -d' ' -f1 /proc/loadavg) ($(nproc) cores)" >&2
  cat "$dir"/c*.count | awk '{ for (k = 1; k <= 5; k++) s[k] += $k } END { print s[1], s[2], s[3], s[4], s[5] }'
}
if [ "$hog" -gt 0 ]; then
  for ((h = 0; h < hog; h++)); do
    timeout 600 sh -c 'while :; do :; done' &
    bg+=($!)
  done
  echo "beside $hog busy loops ($(nproc) cores)"
fi
rf0=$(refounds); term0=$(term)
load ticketd "$work/lt" >"$work/lt.sums"
rf1=$(refounds)
if [ -n "${PROFILE:-}" ]; then
  for i in 1 2 3 4 5; do
    cp "$work/lt/$i.log" "$PROFILE/ticketd.log.$i" 2>/dev/null || true
    "$bin/ticketd" status --json --socket "$work/lt/$i.sock" >"$PROFILE/ticketd.status.$i" 2>/dev/null || true
  done
fi
load lockd "$work/ll" >"$work/ll.sums"
term1=$(term)
load bound "$work/ll" >"$work/lb.sums"
read -r tg tt tu tl to <"$work/lt.sums"
read -r lg lt lu ll lo <"$work/ll.sums"
read -r bg_ bt bu bl bo <"$work/lb.sums"
rf_delta="?"; [ "$rf0" != "?" ] && [ "$rf1" != "?" ] && rf_delta=$((rf1 - rf0))
term_delta="?"; [ -n "$term0" ] && [ -n "$term1" ] && term_delta=$((term1 - term0))
echo "ticketd: $tg grants ($(awk -v g="$tg" -v s="$load_secs" 'BEGIN { printf "%.1f", g / s }')/s), $tt timeouts, $tu unavailable, $tl lost, $to other; $rf_delta refounds"
echo "lockd:   $lg grants ($(awk -v g="$lg" -v s="$load_secs" 'BEGIN { printf "%.1f", g / s }')/s), $lt timeouts, $lu unavailable, $ll lost, $lo other; coordinator term +$term_delta"
echo "bound:   $bg_ grants ($(awk -v g="$bg_" -v s="$load_secs" 'BEGIN { printf "%.1f", g / s }')/s), $bt timeouts, $bu unavailable, $bl lost, $bo other (lockd + one more start of the ticketd binary per grant)"
awk -v a="$tg" -v b="$lg" 'BEGIN { if (b > 0) printf "ratio ticketd/lockd grants: %.2f (target ≥ 0.8, with 0 timeouts and 0 refounds)\n", a / b }'
awk -v a="$tg" -v b="$bg_" -v l="$lg" 'BEGIN { if (b > 0) printf "ratio ticketd/bound grants: %.2f (the bound is %.2f of lockd)\n", a / b, b / l }'
if [ -s "$work/lt/clients.err" ] || [ -s "$work/ll/clients.err" ]; then
  echo "the clients' stderr, first lines (ticketd, then lockd):"
  head -n 5 "$work/lt/clients.err" 2>/dev/null | sed 's/^/  /'
  head -n 5 "$work/ll/clients.err" 2>/dev/null | sed 's/^/  /'
fi
fi
