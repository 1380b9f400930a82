#!/usr/bin/env bash
# bench-lockd.sh — lockd against etcd, in one run, as ratios:
#   1. whole-process latency: `lockd run L -- true` vs `etcdctl lock L -- true`
#      (median and p99 over ITER runs, uncontended), started from bash and
#      (1b) without a shell by hyperfine -N; 1c: one acquire+release
#      through a `lockd session`;
#   2. 8 processes contending for one lock for SECS seconds: acquisitions/s,
#      each acquisition a `lockd run` (as each is an `etcdctl lock`), with
#      the machine's bound for a process per acquisition measured alongside;
#      then 8 `lockd session` coprocesses, the critical section running
#      /bin/true or staying in the shell; 2b: the same contention with the
#      processes spawned by xargs -P 8 instead of bash loops, beside the
#      machine's bounds for a process (or two) per acquisition;
#   3. in-daemon acquire+release per second (central, 3 daemons), without
#      process start-up (go test -bench).
# Installs etcd-server, etcd-client and hyperfine when missing (lib.sh's
# apt_install); without hyperfine, 1b is skipped.
#
#   scripts/bench-lockd.sh [ITER] [SECS]     (defaults 200 and 5)
. "$(dirname "$0")/lib.sh"
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

. scripts/etcd.sh
need_etcd bench-lockd hyperfine

# The tools as `go install` makes them (lib.sh), as every bench measures them.
build_tools "$work/bin"

# etcd on loopback, non-default ports
start_etcd "$work"

# lockd: 3 daemons, the client on daemon 3 (the coordinator once elected)
scripts/cluster.sh start -n 3 -d "$work/c" "$bin/lockd" serve --no-color --log-level warn --socket "$work/c/{id}.sock" >/dev/null
sock="$work/c/3.sock"
until "$bin/lockd" run --socket "$sock" --nonblock warmup -- true 2>/dev/null; do sleep 0.05; done

# Whole-process times, lockd and etcdctl alternating run by run, so a
# change in the machine's load (other tenants, CPU steal) falls on both.
# (EPOCHREALTIME is a bash built-in: no process is spawned to read the clock)
lockd_cmd=("$bin/lockd" run --socket "$sock" L -- true)
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

compare() { # lockd-times etcd-times: medians, p99s and their ratios
  local l_med l_p99 e_med e_p99
  read -r l_med l_p99 <<<"$(stats "$1")"
  read -r e_med e_p99 <<<"$(stats "$2")"
  echo "lockd run   : median $(ms "$l_med"), p99 $(ms "$l_p99")"
  echo "etcdctl lock: median $(ms "$e_med"), p99 $(ms "$e_p99")"
  awk -v a="$l_med" -v b="$e_med" -v c="$l_p99" -v d="$e_p99" \
    'BEGIN { printf "ratio lockd/etcd: median %.3f (target ≤ 0.25), p99 %.2f\n", a / b, c / d }'
}

echo "== 1. whole process, uncontended, $iter runs each (alternating)"
compare "$work/l.us" "$work/e.us"
read -r e_med _ <<<"$(stats "$work/e.us")"   # etcdctl from bash, for 1c

# The same two commands spawned without a shell: bash forks itself for
# every command (a page-table copy of bash, 1.6 ms more than hyperfine's
# spawn for /bin/true on a 2-vCPU VM), a cost of the harness that falls on
# both tools alike. hyperfine -N starts each command directly; four
# rounds, alternating which tool goes first.
echo "== 1b. whole process, spawned without a shell (hyperfine -N), $iter runs each"
if command -v hyperfine >/dev/null 2>&1; then
  hf_times() { # json tool-path: that command's times, in µs, one per line
    awk -v want="$2" '
      /"command":/ { cmd = $0; sub(/.*"command": "/, "", cmd) }
      /"times": \[/ { in_t = (index(cmd, want) == 1); next }
      in_t && /\]/ { in_t = 0; next }
      in_t { v = $1; sub(/,$/, "", v); printf "%d\n", v * 1000000 }' "$1"
  }
  : >"$work/hl.us"; : >"$work/he.us"
  per=$(( (iter + 3) / 4 ))
  for round in 1 2 3 4; do
    l="${lockd_cmd[*]}"; e="${etcd_cmd[*]}"
    if [ $((round % 2)) = 1 ]; then set -- "$l" "$e"; else set -- "$e" "$l"; fi
    hyperfine -N -w 5 -r "$per" --export-json "$work/hf.json" "$@" >/dev/null 2>&1
    hf_times "$work/hf.json" "$bin/lockd" >>"$work/hl.us"
    hf_times "$work/hf.json" etcdctl >>"$work/he.us"
  done
  compare "$work/hl.us" "$work/he.us"
else
  echo "(skipped: hyperfine is not installed)"
fi

echo "== 1c. a script's acquire+release through one lockd session (coprocess), $iter rounds"
coproc S { "$bin/lockd" session --socket "$sock"; }
: >"$work/s.us"
for ((i = 0; i < iter; i++)); do
  t0=${EPOCHREALTIME/./}
  echo "acquire L" >&"${S[1]}"; read -r _ <&"${S[0]}"
  echo "release L" >&"${S[1]}"; read -r _ <&"${S[0]}"
  t1=${EPOCHREALTIME/./}
  echo $((t1 - t0)) >>"$work/s.us"
done
exec {S[1]}>&-
wait "$S_PID" 2>/dev/null || true
read -r s_med s_p99 <<<"$(stats "$work/s.us")"
echo "lockd session: median $(ms "$s_med"), p99 $(ms "$s_p99")"
awk -v a="$s_med" -v b="$e_med" 'BEGIN { printf "ratio lockd session/etcdctl lock: median %.3f\n", a / b }'

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
# contend_session MODE: 8 loops, each with its own `lockd session`
# coprocess; the critical section runs /bin/true (MODE=true, one process
# per acquisition, as `etcdctl lock C -- true` runs) or stays in the shell
# (MODE=builtin).
contend_session() {
  local end=$((EPOCHSECONDS + secs)) j
  rm -f "$work/count"
  for j in 1 2 3 4 5 6 7 8; do
    ( coproc S { "$bin/lockd" session --socket "$sock"; }
      n=0
      while ((EPOCHSECONDS < end)); do
        echo "acquire C" >&"${S[1]}"; read -r ev _ <&"${S[0]}"
        [ "$ev" = acquired ] || break
        if [ "$1" = true ]; then /bin/true; else true; fi
        echo "release C" >&"${S[1]}"; read -r ev _ <&"${S[0]}"
        n=$((n + 1))
      done
      exec {S[1]}>&-
      echo $n >>"$work/count" ) &
  done
  wait
  awk -v s="$secs" '{ t += $1 } END { printf "%.1f", t / s }' "$work/count"
}
avg() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (a + b) / 2 }'; }
l1=$(contend "$bin/lockd" run --socket "$sock" C -- true)
e1=$(contend etcdctl lock C -- true)
t1=$(contend /bin/true)
s1=$(contend_session true)
b1=$(contend_session builtin)
b2=$(contend_session builtin)
s2=$(contend_session true)
t2=$(contend /bin/true)
e2=$(contend etcdctl lock C -- true)
l2=$(contend "$bin/lockd" run --socket "$sock" C -- true)
l_rate=$(avg "$l1" "$l2"); e_rate=$(avg "$e1" "$e2"); t_rate=$(avg "$t1" "$t2")
s_rate=$(avg "$s1" "$s2"); b_rate=$(avg "$b1" "$b2")
ratio() { awk -v a="$1" -v b="$e_rate" 'BEGIN { printf "%.1f×", a / b }'; }
echo "etcdctl lock C -- true          : $e_rate acquisitions/s ($e1, $e2)"
echo "lockd run C -- true             : $l_rate acquisitions/s ($l1, $l2)  ratio $(ratio "$l_rate") (target ≥ 10×)"
echo "  (bound: 8 loops that only start /bin/true: $t_rate/s ($t1, $t2); a process per acquisition"
echo "   for the client plus one for the command caps any such tool near half of it: $(ratio "$(awk -v t="$t_rate" 'BEGIN { print t / 2 }')")"
echo "lockd session, section runs true: $s_rate acquisitions/s ($s1, $s2)  ratio $(ratio "$s_rate")"
echo "lockd session, section in shell : $b_rate acquisitions/s ($b1, $b2)  ratio $(ratio "$b_rate")"

# 2b. The same contention with the processes spawned without a shell, as
# hyperfine -N does in 1b: xargs -P 8 keeps 8 going (xargs is a small C
# program, so each spawn costs far less than bash's fork of itself), for
# about SECS seconds each (the count comes from 2's rate). The bounds run
# the same way: one /bin/true per acquisition; two small C processes
# (dash, which forks /bin/true), what a client that cost no more than
# /bin/true would take; and an empty Go program, which with /bin/true
# after it is what any Go client that starts the command must spend.
go_empty="$work/empty"
mkdir -p "$work/emptysrc"
printf 'package main\n\nfunc main() {}\n' >"$work/emptysrc/main.go"
(cd "$work/emptysrc" && go build -o "$go_empty" main.go)
xrate() { # count cmd...: 8 at a time through xargs; prints runs/s
  local t0 t1 rc=0
  t0=$EPOCHREALTIME
  seq "$1" | xargs -P 8 -I{} "${@:2}" >/dev/null 2>&1 || rc=$?
  t1=$EPOCHREALTIME
  [ "$rc" = 0 ] || echo "bench-lockd: some of $1 runs of ${*:2} failed (xargs: $rc)" >&2
  awk -v n="$1" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / (b - a) }'
}
count() { awk -v r="$1" -v s="$secs" 'BEGIN { n = int(r * s); print (n < 40 ? 40 : n) }'; }
nl=$(count "$l_rate"); ne=$(count "$e_rate"); nt=$(count "$t_rate")
xl1=$(xrate "$nl" "$bin/lockd" run --socket "$sock" C -- true)
xe1=$(xrate "$ne" etcdctl lock C -- true)
xt1=$(xrate "$((nt * 2))" /bin/true)
xs1=$(xrate "$nt" /bin/sh -c '/bin/true; :')
xg1=$(xrate "$nt" "$go_empty")
xg2=$(xrate "$nt" "$go_empty")
xs2=$(xrate "$nt" /bin/sh -c '/bin/true; :')
xt2=$(xrate "$((nt * 2))" /bin/true)
xe2=$(xrate "$ne" etcdctl lock C -- true)
xl2=$(xrate "$nl" "$bin/lockd" run --socket "$sock" C -- true)
xl=$(avg "$xl1" "$xl2"); xe=$(avg "$xe1" "$xe2"); xt=$(avg "$xt1" "$xt2")
xs=$(avg "$xs1" "$xs2"); xg=$(avg "$xg1" "$xg2")
xgt=$(awk -v g="$xg" -v t="$xt" 'BEGIN { printf "%.1f", 1 / (1 / g + 1 / t) }')
xratio() { awk -v a="$1" -v b="$xe" 'BEGIN { printf "%.1f×", a / b }'; }
echo "== 2b. the same 8 at a time, spawned without a shell (xargs -P 8)"
echo "etcdctl lock C -- true          : $xe acquisitions/s ($xe1, $xe2)"
echo "lockd run C -- true             : $xl acquisitions/s ($xl1, $xl2)  ratio $(xratio "$xl") (target ≥ 10×)"
echo "  bounds, spawned the same way:"
echo "  /bin/true alone               : $xt/s ($xt1, $xt2) = $(xratio "$xt")"
echo "  sh -c '/bin/true; :' (2 small C processes): $xs/s ($xs1, $xs2) = $(xratio "$xs")"
echo "  an empty Go program           : $xg/s ($xg1, $xg2); with a /bin/true after it: $xgt/s = $(xratio "$xgt")"
awk -v l="$xl" -v g="$xgt" 'BEGIN { printf "  lockd run reaches %.0f%% of what a Go client that starts the command can\n", 100 * l / g }'

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
