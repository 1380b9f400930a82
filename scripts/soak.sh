#!/usr/bin/env bash
# soak.sh — leadership stability and failover of elect and lockd on a busy
# machine. Runs the README's two clusters side by side on loopback for a
# fixed time: 5 members of `elect run -- sh -c 'sleep 3600'` (leases on,
# the defaults) and 3 members of `lockd serve` (central coordinator), and
# counts every spurious change after both settled: new elect terms, lost
# leases, elect members that exited (exit 76: leadership lost while the
# command ran), new lockd coordinator terms. Then SIGKILLs the elect leader
# of a fresh cluster TRIALS times and times the failover: until every
# survivor reports the new leader, and until it holds its lease; and
# SIGKILLs the coordinator of a fresh 3-member lockd cluster TRIALS times:
# until both survivors report the new coordinator, and until a `lockd run`
# on a survivor, started at the kill, has run its command.
#
#   scripts/soak.sh [--load] [--secs N] [--trials N] [--bin DIR] [--keep DIR]
#
#   --load       run beside one busy loop per core and a memory-heavy
#                race-detector workload (`go test -race -count=1 ./pkg/mcast`
#                in a loop), as a shared CI host or busy server would
#   --secs N     soak time in seconds (default 300; 0 skips the soak)
#   --trials N   failover trials of each tool (default 5; 0 skips them)
#   --bin DIR    use DIR/elect and DIR/lockd instead of building ./cmd/...
#                (to measure another revision with the same script)
#   --keep DIR   keep every member's events and log in DIR (elect/, lockd/,
#                failover-T/: i.out is stdout, i.log is stderr at
#                --log-level info, both timestamped) to tell afterwards
#                why a leader or coordinator changed
#
# Beside the soak, leased commands nobody extends run back to back for the
# same time (pkg/cli's TestWatchdogLateness, WATCHDOG_SOAK): each must die
# by its deadline plus the slack docs/elect.md states; their lateness is
# reported (median, p99, worst). The members run with each binary's default
# scheduling (--realtime where the binary has it; ELECT_REALTIME=false and
# LOCKD_REALTIME=false turn it off); WATCHDOG_REALTIME=on runs the leased
# commands under the same realtime scheduling.
#
# Everything runs in a temporary directory on free ports and is stopped at
# exit. Exit code: 0 when no spurious change was seen and every leased
# command died within the slack, 1 otherwise.
. "$(dirname "$0")/lib.sh"

load=0; secs=300; trials=5; bin=""; keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    --load) load=1; shift;;
    --secs) secs=$2; shift 2;;
    --trials) trials=$2; shift 2;;
    --bin) bin=$2; shift 2;;
    --keep) keep=$2; shift 2;;
    -h|--help) sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
    *) echo "soak.sh: unknown argument $1" >&2; exit 64;;
  esac
done
[[ "$secs" =~ ^[0-9]+$ && "$trials" =~ ^[0-9]+$ ]] || { echo "soak.sh: --secs and --trials want whole numbers" >&2; exit 64; }
if [ -n "$keep" ]; then
  mkdir -p "$keep" || exit 64
  keep=$(cd "$keep" && pwd)
fi
loglevel=warn; [ -n "$keep" ] && loglevel=info
# keep_dir SRC NAME: copy a cluster's events and logs into the keep dir.
keep_dir() {
  [ -n "$keep" ] && [ -d "$1" ] || return 0
  mkdir -p "$keep/$2"
  cp "$1"/*.out "$1"/*.log "$keep/$2/" 2>/dev/null || true
  [ ! -e "$work/watchdog.out" ] || cp "$work/watchdog.out" "$keep/"
}

work=$(mktemp -d)
loaders=()
cleanup() {
  for c in "$work/e" "$work/l" "$work/f" "$work/g"; do scripts/cluster.sh stop -d "$c" >/dev/null 2>&1 || true; done
  keep_dir "$work/e" elect; keep_dir "$work/l" lockd
  for p in ${loaders[@]+"${loaders[@]}"}; do kill -KILL -- "-$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "$bin" ]; then
  ROUNDTABLE_BIN=$bin build_tools "$bin"
else
  build_tools "$work/bin"
fi

if [ "$load" = 1 ]; then
  # Each loader is its own process group (setsid), killed whole at exit.
  for ((i = 0; i < $(nproc); i++)); do
    setsid bash -c 'while :; do :; done' </dev/null >/dev/null 2>&1 &
    loaders+=($!)
  done
  setsid bash -c 'while :; do go test -race -count=1 ./pkg/mcast; done' </dev/null >/dev/null 2>&1 &
  loaders+=($!)
fi

now_ns() { date +%s%N; }
ts_ns() { date -d "$1" +%s%N; } # RFC 3339 → ns
fmt() { awk -v us="$1" 'BEGIN { printf "%.1f ms", us / 1000 }'; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

# agree DIR FIELD N [IDS...]: prints the value every member 1..N (or each
# of IDS) last reported in FIELD ("leader" or "coordinator"), or nothing
# while they disagree.
agree() {
  local d=$1 f=$2 n=$3 v="" x i; shift 3
  local ids=("$@"); [ ${#ids[@]} -gt 0 ] || ids=($(seq 1 "$n"))
  for i in "${ids[@]}"; do
    x=$(grep "\"event\":\"$f\"" "$d/$i.out" 2>/dev/null | tail -n1 | sed -nE "s/.*\"$f\":([0-9]+),\"term\":([0-9]+).*/\1 \2/p")
    [ -n "$x" ] || return 0
    [ -z "$v" ] || [ "$v" = "$x" ] || return 0
    v=$x
  done
  echo "$v"
}

# settle DIR FIELD N: wait up to 30 s for agreement; prints it.
settle() {
  local deadline=$(( $(date +%s) + 30 )) v
  while :; do
    v=$(agree "$@")
    [ -n "$v" ] && { echo "$v"; return; }
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "soak.sh: $1: no agreement on a $2 within 30 s; last events:" >&2
      for ((i = 1; i <= $3; i++)); do tail -n 2 "$1/$i.out" >&2; done
      exit 1
    fi
    sleep 0.05
  done
}

# terms_after DIR FIELD N OFFSETS...: distinct terms reported after each
# member's line OFFSET.
terms_after() {
  local d=$1 f=$2 n=$3; shift 3
  local i
  for ((i = 1; i <= n; i++)); do
    tail -n +"$(( $1 + 1 ))" "$d/$i.out" | grep "\"event\":\"$f\"" | sed -nE 's/.*"term":([0-9]+).*/\1/p'
    shift
  done | sort -un | grep -c . || true
}

lines() { local i; for ((i = 1; i <= $2; i++)); do wc -l <"$1/$i.out"; done; }

echo "soak: load=$load, $(nproc) cores, load average before: $(loadavg)"
bad=0
if [ "$secs" -gt 0 ]; then
  scripts/cluster.sh start -n 5 -d "$work/e" "$bin/elect" run --json --no-color --log-level "$loglevel" -- sh -c 'sleep 3600' >/dev/null
  scripts/cluster.sh start -n 3 -d "$work/l" "$bin/lockd" serve --socket "$work/l/{id}.sock" --json --no-color --log-level "$loglevel" >/dev/null
  e0=$(settle "$work/e" leader 5); l0=$(settle "$work/l" coordinator 3)
  eoff=($(lines "$work/e" 5)); loff=($(lines "$work/l" 3))
  echo "soak: settled: elect leader/term $e0, lockd coordinator/term $l0; running ${secs}s"
  go test -c -o "$work/cli.test" ./pkg/cli
  WATCHDOG_SOAK=${secs}s "$work/cli.test" -test.run '^TestWatchdogLateness$' -test.v -test.timeout $((secs + 600))s \
    >"$work/watchdog.out" 2>&1 &
  wdpid=$!
  end=$(( $(date +%s) + secs )); peak=0
  while [ "$(date +%s)" -lt "$end" ]; do
    sleep 5
    peak=$(awk -v a="$peak" -v b="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN { print (b > a) ? b : a }')
  done
  eterms=$(terms_after "$work/e" leader 5 "${eoff[@]}")
  lterms=$(terms_after "$work/l" coordinator 3 "${loff[@]}")
  lost=0; exited=0
  for ((i = 1; i <= 5; i++)); do
    lost=$(( lost + $(tail -n +"$(( eoff[i-1] + 1 ))" "$work/e/$i.out" | grep -c '"held":false' || true) ))
    if [ -e "$work/e/$i.exit" ]; then
      exited=$((exited + 1))
      echo "soak: elect member $i exited with code $(cat "$work/e/$i.exit"); its last events and log lines:"
      tail -n 4 "$work/e/$i.out" | sed 's/^/    /'
      tail -n 4 "$work/e/$i.log" | sed 's/^/    /'
    fi
  done
  echo "soak: ${secs}s, peak 1-min load average $peak"
  echo "soak: elect (5 members): $eterms new terms, $lost lease losses, $exited of 5 members exited"
  echo "soak: lockd (3 members): $lterms new coordinator terms"
  [ $((eterms + lost + exited + lterms)) -eq 0 ] || bad=1
  if wait "$wdpid"; then
    echo "soak: watchdog: $(grep -o '[0-9]* leased commands of .*' "$work/watchdog.out")"
  else
    echo "soak: watchdog: FAILED:"; sed 's/^/    /' "$work/watchdog.out" | tail -n 5
    bad=1
  fi
  scripts/cluster.sh stop -d "$work/e" >/dev/null; scripts/cluster.sh stop -d "$work/l" >/dev/null
  keep_dir "$work/e" elect; keep_dir "$work/l" lockd
fi

# first_time FILE LEADER [SKIP]: the time of the first JSON line naming
# LEADER after the first SKIP lines; lease_time FILE [SKIP]: of the first
# 'lease held'.
first_time() { tail -n +"$(( ${3:-0} + 1 ))" "$1" 2>/dev/null | grep -m1 "\"leader\":$2," | sed -E 's/^\{"time":"([^"]+)".*/\1/'; }
lease_time() { tail -n +"$(( ${2:-0} + 1 ))" "$1" 2>/dev/null | grep -m1 '"event":"lease".*"held":true' | sed -E 's/^\{"time":"([^"]+)".*/\1/'; }
wait_for() { # what command...: poll for up to 30 s
  local what=$1; shift
  local deadline=$(( $(date +%s) + 30 ))
  until [ -n "$("$@")" ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "soak.sh: $what within 30 s" >&2; exit 1; }
    sleep 0.01
  done
}

fo=(); le=()
for ((t = 1; t <= trials; t++)); do
  rm -rf "$work/f"
  scripts/cluster.sh start -n 5 -d "$work/f" "$bin/elect" run --json --no-color --log-level "$loglevel" >/dev/null
  for i in 1 2 3 4 5; do wait_for "member $i reports leader 5" first_time "$work/f/$i.out" 5; done
  wait_for "5 holds its lease" lease_time "$work/f/5.out"
  off=(0 $(lines "$work/f" 5))
  t0=$(now_ns); kill -KILL "$(cat "$work/f/5.pid")"
  last=0
  for i in 1 2 3 4; do
    wait_for "member $i reports leader 4" first_time "$work/f/$i.out" 4 "${off[i]}"
    ns=$(ts_ns "$(first_time "$work/f/$i.out" 4 "${off[i]}")"); [ "$ns" -gt "$last" ] && last=$ns
  done
  wait_for "4 holds its lease" lease_time "$work/f/4.out" "${off[4]}"
  us=$(( (last - t0) / 1000 )); lus=$(( ($(ts_ns "$(lease_time "$work/f/4.out" "${off[4]}")") - t0) / 1000 ))
  fo+=("$us"); le+=("$lus")
  echo "failover trial $t: every survivor follows 4 after $(fmt "$us"), 4 holds its lease after $(fmt "$lus") (load $(loadavg))"
  scripts/cluster.sh stop -d "$work/f" >/dev/null
  keep_dir "$work/f" "failover-$t"
done

# lockd: SIGKILL the coordinator of a fresh 3-member cluster (central, the
# defaults); time until both survivors report the same new coordinator, and
# until a `lockd run` started on a survivor at the kill has its lock (its
# command ran and it exited 0: process start included).
lfo=(); lac=()
for ((t = 1; t <= trials; t++)); do
  rm -rf "$work/g"
  scripts/cluster.sh start -n 3 -d "$work/g" "$bin/lockd" serve --socket "$work/g/{id}.sock" --json --no-color --log-level "$loglevel" >/dev/null
  read -r c term <<<"$(settle "$work/g" coordinator 3)"
  surv=(); for i in 1 2 3; do [ "$i" = "$c" ] || surv+=("$i"); done
  goff=(0 $(lines "$work/g" 3))
  t0=$(now_ns); kill -KILL "$(cat "$work/g/$c.pid")"
  "$bin/lockd" run --socket "$work/g/${surv[0]}.sock" --quiet --timeout 30s soak -- true &
  runpid=$!
  newc() { local v; v=$(agree "$work/g" coordinator 3 "${surv[@]}"); [ -n "$v" ] && [ "${v#* }" -gt "$term" ] && echo "$v"; }
  wait_for "the survivors agree on a new coordinator" newc
  wait "$runpid" || { echo "soak.sh: lockd run on a survivor failed after the coordinator's kill" >&2; exit 1; }
  ac=$(( ($(now_ns) - t0) / 1000 ))
  read -r nc _ <<<"$(newc)"
  last=0
  for i in "${surv[@]}"; do
    ts=$(tail -n +"$(( goff[i] + 1 ))" "$work/g/$i.out" | grep -m1 "\"coordinator\":$nc," | sed -E 's/^\{"time":"([^"]+)".*/\1/')
    ns=$(ts_ns "$ts"); [ "$ns" -gt "$last" ] && last=$ns
  done
  us=$(( (last - t0) / 1000 ))
  lfo+=("$us"); lac+=("$ac")
  echo "lockd failover trial $t: coordinator $c killed; both survivors follow $nc after $(fmt "$us"), a waiting lockd run has the lock after $(fmt "$ac") (load $(loadavg))"
  scripts/cluster.sh stop -d "$work/g" >/dev/null
  keep_dir "$work/g" "lockd-failover-$t"
done
if [ "$trials" -gt 0 ]; then
  med() { local s=($(printf '%s\n' "$@" | sort -n)); echo "${s[$(( (${#s[@]} - 1) / 2 ))]} ${s[$(( ${#s[@]} - 1 ))]}"; }
  read -r m x <<<"$(med "${fo[@]}")"; read -r lm lx <<<"$(med "${le[@]}")"
  echo "failover over $trials trials: followed median $(fmt "$m"), max $(fmt "$x"); lease held median $(fmt "$lm"), max $(fmt "$lx")"
  read -r m x <<<"$(med "${lfo[@]}")"; read -r lm lx <<<"$(med "${lac[@]}")"
  echo "lockd failover over $trials trials: followed median $(fmt "$m"), max $(fmt "$x"); lock had median $(fmt "$lm"), max $(fmt "$lx")"
fi
echo "soak: load average after: $(loadavg)"
exit "$bad"
