#!/usr/bin/env bash
# cluster.sh — start and control a local cluster of any roundtable binary.
#
#   cluster.sh start [-n N] [-d DIR] BINARY [SUBCOMMAND] [ARGS...]
#       Start N members (default 3) on free loopback UDP/TCP ports. Writes
#       DIR/peers (id=127.0.0.1:port per line), and per member i:
#       DIR/i.out (stdout: events), DIR/i.log (stderr), DIR/i.pid, DIR/i.cmd,
#       and DIR/i.exit (exit status) once the member has ended.
#       Each member runs: BINARY SUBCOMMAND --id i --peers @DIR/peers
#       --ready-file DIR/i.ready ARGS...; start returns once all are ready.
#       "{id}" inside any ARG is replaced by the member's ID (--value v{id}).
#       With -j (tools whose members find each other, ticketd): instead of
#       --peers, member i gets --bind with its address and, except member
#       1 (which founds the group), --join with every other member's.
#   cluster.sh stop [-d DIR]            SIGTERM every member, wait for exit
#   cluster.sh wait [-d DIR]            wait until every member has ended by itself
#                                       (exit 75 after $CLUSTER_WAIT_TIMEOUT seconds, 60)
#   cluster.sh ports [-n N] [-d DIR]    only write DIR/peers with N free loopback
#                                       ports, for members started by hand
#   cluster.sh kill ID [-d DIR]         SIGKILL member ID
#   cluster.sh pause ID | resume ID     SIGSTOP / SIGCONT member ID
#   cluster.sh restart ID [-d DIR]      start member ID again with its saved command
#   cluster.sh pid ID | peers | ps      print a pid, the peers file, member states
#
# DIR defaults to $CLUSTER_DIR or ./.cluster. start refuses a DIR whose
# members still run. A member that has ended (DIR/i.exit written) is never
# signalled again: its PID may since belong to another process. Exit
# codes: 64 usage, 69 a member did not become ready within
# $CLUSTER_READY_TIMEOUT seconds (10), or kill, pause or resume of a member
# that has ended; 75 start: DIR has live members.
set -euo pipefail

help() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
usage() { help >&2; exit 64; }
die() { echo "cluster.sh: $1" >&2; exit "${2:-64}"; }

dir=${CLUSTER_DIR:-./.cluster}
n=3
cmd=${1:-}; [ -n "$cmd" ] || usage; shift
case "$cmd" in -h|--help|help) help; exit 0;; esac
id=""
joinmode=0
case "$cmd" in kill|pause|resume|restart|pid) id=${1:-}; [ -n "$id" ] || usage; shift;; esac
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n=$2; shift 2;;
    -d) dir=$2; shift 2;;
    -j) joinmode=1; shift;;
    -h|--help) help; exit 0;;
    *) break;;
  esac
done

port_busy() { # port: in use for UDP or TCP on this host?
  command -v ss >/dev/null 2>&1 || return 1
  ss -Hlnu "sport = :$1" 2>/dev/null | grep -q . && return 0
  ss -Hlnt "sport = :$1" 2>/dev/null | grep -q .
}

free_ports() { # count -> prints count consecutive free ports
  local tries=0 base i ok
  while [ $tries -lt 50 ]; do
    base=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    ok=1
    for ((i = 0; i < $1; i++)); do port_busy $((base + i)) && { ok=0; break; }; done
    if [ $ok = 1 ]; then seq "$base" $((base + $1 - 1)); return; fi
    tries=$((tries + 1))
  done
  die "no free port range found" 69
}

wait_ready() { # id
  local deadline=$(( $(date +%s) + ${CLUSTER_READY_TIMEOUT:-10} ))
  while [ ! -s "$dir/$1.ready" ]; do
    if ! kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null; then
      # A member that was ready and has already ended (a consensus
      # member that decided) wrote its ready file before exiting.
      [ -s "$dir/$1.ready" ] && break
      echo "cluster.sh: member $1 exited during start-up; its log:" >&2
      tail -n 20 "$dir/$1.log" >&2 || true
      exit 69
    fi
    [ "$(date +%s)" -lt "$deadline" ] || die "member $1 not ready after ${CLUSTER_READY_TIMEOUT:-10}s (see $dir/$1.log)" 69
    sleep 0.01
  done
}

start_member() { # id
  id=$1
  rm -f "$dir/$id.ready" "$dir/$id.pid" "$dir/$id.exit"
  eval "set -- $(cat "$dir/$id.cmd")"
  # A small keeper subshell records the member's real PID and, when it
  # ends, its exit status in DIR/ID.exit.
  ( "$@" >>"$dir/$id.out" 2>>"$dir/$id.log" </dev/null &
    echo $! >"$dir/$id.pid.tmp" && mv "$dir/$id.pid.tmp" "$dir/$id.pid"
    code=0; wait $! || code=$?; echo "$code" >"$dir/$id.exit" ) </dev/null >/dev/null 2>&1 &
  while [ ! -s "$dir/$id.pid" ]; do sleep 0.005; done
}

pid_of() { [ -f "$dir/$1.pid" ] || die "no member $1 in $dir"; cat "$dir/$1.pid"; }

# live_pid ID: print the member's PID and succeed only while it runs. Its
# keeper writes DIR/ID.exit once it has ended; from then on the PID may be
# reused by any other process (pid_max is 32768 on many hosts), which must
# never be signalled, nor taken for a live member, in the member's name.
live_pid() {
  local p
  [ -e "$dir/$1.exit" ] && return 1
  p=$(cat "$dir/$1.pid" 2>/dev/null) || return 1
  [ -n "$p" ] && kill -0 "$p" 2>/dev/null || return 1
  [ "$(ps -o stat= -p "$p" 2>/dev/null | cut -c1)" = Z ] && return 1
  echo "$p"
}

# signal_member SIG ID: send SIG to member ID; exit 69 if it has ended.
signal_member() {
  local p
  pid_of "$2" >/dev/null
  p=$(live_pid "$2") || die "member $2 has ended$( [ -e "$dir/$2.exit" ] && echo " (exit $(cat "$dir/$2.exit"))")" 69
  kill "-$1" "$p"
}

case "$cmd" in
  start)
    [ $# -ge 1 ] || usage
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive integer"
    bin=$1; shift
    command -v "$bin" >/dev/null 2>&1 || [ -x "$bin" ] || die "$bin: not found (scripts/demo.sh builds the tools into ./bin: export PATH=\"\$PWD/bin:\$PATH\", or give the binary's path)" 127
    sub=()
    if [ $# -gt 0 ] && [[ "$1" != -* ]]; then sub=("$1"); shift; fi
    mkdir -p "$dir"
    # Never over a running cluster: its pid files would be lost, and stop
    # would leave it running untracked.
    live=()
    for f in "$dir"/*.pid; do
      [ -e "$f" ] || continue
      p=$(live_pid "$(basename "$f" .pid)") || continue
      live+=("$(basename "$f" .pid) (pid $p)")
    done
    if [ ${#live[@]} -gt 0 ]; then
      die "$dir has live members: ${live[*]}; stop them first with 'scripts/cluster.sh stop -d $dir', or use another directory" 75
    fi
    rm -f "$dir"/*.out "$dir"/*.log "$dir"/*.pid "$dir"/*.ready "$dir"/*.cmd "$dir"/*.exit
    : >"$dir/peers"
    i=1
    for p in $(free_ports "$n"); do echo "$i=127.0.0.1:$p" >>"$dir/peers"; i=$((i + 1)); done
    for ((i = 1; i <= n; i++)); do
      args=()
      for a in "$@"; do args+=("${a//\{id\}/$i}"); done
      if [ "$joinmode" = 1 ]; then
        me=$(sed -n "s/^$i=//p" "$dir/peers")
        others=$( (grep -v "^$i=" "$dir/peers" || true) | cut -d= -f2 | paste -sd, -)
        where=(--bind "$me")
        if [ "$i" != 1 ] && [ -n "$others" ]; then where+=(--join "$others"); fi
      else
        where=(--peers "@$dir/peers")
      fi
      printf '%q ' "$bin" "${sub[@]}" --id "$i" "${where[@]}" --ready-file "$dir/$i.ready" ${args[@]+"${args[@]}"} >"$dir/$i.cmd"
      start_member "$i"
    done
    for ((i = 1; i <= n; i++)); do wait_ready "$i"; done
    echo "cluster: $n members of $(basename "$bin") ready in $dir"
    ;;
  stop)
    for f in "$dir"/*.pid; do
      [ -e "$f" ] || continue
      p=$(live_pid "$(basename "$f" .pid)") || continue
      kill -CONT "$p" 2>/dev/null || true; kill -TERM "$p" 2>/dev/null || true
    done
    for f in "$dir"/*.pid; do
      [ -e "$f" ] || continue
      i=$(basename "$f" .pid)
      for _ in $(seq 500); do live_pid "$i" >/dev/null || break; sleep 0.01; done
      if p=$(live_pid "$i"); then kill -KILL "$p" 2>/dev/null || true; fi
    done
    ;;
  wait)
    deadline=$(( $(date +%s) + ${CLUSTER_WAIT_TIMEOUT:-60} ))
    for f in "$dir"/*.pid; do
      [ -e "$f" ] || continue
      i=$(basename "$f" .pid)
      while [ ! -e "$dir/$i.exit" ]; do
        [ "$(date +%s)" -lt "$deadline" ] || die "member $i still running after ${CLUSTER_WAIT_TIMEOUT:-60}s" 75
        sleep 0.01
      done
    done
    ;;
  ports)
    [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "-n wants a positive integer"
    mkdir -p "$dir"
    i=1
    for p in $(free_ports "$n"); do echo "$i=127.0.0.1:$p"; i=$((i + 1)); done >"$dir/peers"
    ;;
  kill) signal_member KILL "$id" ;;
  pause) signal_member STOP "$id" ;;
  resume) signal_member CONT "$id" ;;
  restart)
    [ -f "$dir/$id.cmd" ] || die "no member $id in $dir"
    if live_pid "$id" >/dev/null; then die "member $id is still running"; fi
    start_member "$id"; wait_ready "$id"
    ;;
  pid) pid_of "$id" ;;
  peers) cat "$dir/peers" ;;
  ps)
    for f in "$dir"/*.pid; do
      [ -e "$f" ] || continue
      i=$(basename "$f" .pid); p=$(cat "$f")
      state=$(ps -o stat= -p "$p" 2>/dev/null | cut -c1 || true)
      live_pid "$i" >/dev/null || state=""
      case "$state" in T) s=paused;; "") s=dead;; Z) s=dead;; *) s=running;; esac
      echo "member $i pid $p $s"
    done | sort -k2n
    ;;
  *) usage ;;
esac
