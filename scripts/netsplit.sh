#!/usr/bin/env bash
# netsplit.sh — a local cluster whose members each live in a network
# namespace of their own, joined by a bridge, so that partitions are real:
# iptables drops the traffic between the sides. Needs root, ip (iproute2)
# and iptables; everything it makes it removes again with `down`.
#
#   netsplit.sh up -n N -d DIR [BINARY SUBCOMMAND ARGS...]
#       Make namespaces rt<tag>-hub (the bridge) and rt<tag>-1..N (member i
#       at 10.<tag>.0.i), write DIR/peers (id=10.x.0.i:7000) and DIR/key
#       (an AES-256 key: the members are not on loopback). With a BINARY,
#       start member i in its namespace: BINARY SUBCOMMAND --id i --peers
#       @DIR/peers --key-file DIR/key --ready-file DIR/i.ready ARGS...
#       ("{id}" in ARGS becomes i), stdout DIR/i.out, stderr DIR/i.log, pid
#       DIR/i.pid; up returns once every member is ready.
#   netsplit.sh up -n N -d DIR -j BINARY SUBCOMMAND ARGS...
#       The same for tools whose members find each other (ticketd): instead
#       of --peers, --bind 10.x.0.i:7000, and for every member but 1 (which
#       founds the group) --join with every other member's address.
#   netsplit.sh partition 1,2/3 -d DIR   drop all traffic between the sides
#   netsplit.sh isolate ID -d DIR        ID from everyone
#   netsplit.sh oneway A B -d DIR        drop what A sends to B (B still reaches A)
#   netsplit.sh heal -d DIR              remove every drop rule
#   netsplit.sh exec ID -d DIR -- CMD... run CMD inside member ID's namespace
#   netsplit.sh kill ID | stop ID -d DIR SIGKILL | SIGTERM member ID
#   netsplit.sh pause ID | resume ID -d DIR  SIGSTOP | SIGCONT member ID
#   netsplit.sh restart ID -d DIR        start member ID again, as up did
#   netsplit.sh down -d DIR              stop the members, remove the namespaces
#
# Exit codes: 64 usage, 69 not root or ip/iptables missing (tests skip),
# 1 a step failed.
set -euo pipefail

help() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "netsplit.sh: $1" >&2; exit "${2:-1}"; }

cmd=${1:-}; [ -n "$cmd" ] || { help >&2; exit 64; }; shift
case "$cmd" in -h|--help|help) help; exit 0;; esac
[ "$(id -u)" = 0 ] || die "needs root (network namespaces and iptables)" 69
command -v ip >/dev/null 2>&1 || die "needs ip (iproute2)" 69
command -v iptables >/dev/null 2>&1 || die "needs iptables" 69

n=3; dir=""; arg1=""; arg2=""; joinmode=0
case "$cmd" in
  partition|isolate|exec|kill|stop|pause|resume|restart) arg1=${1:-}; [ -n "$arg1" ] || die "$cmd needs an argument" 64; shift;;
  oneway) arg1=${1:-}; arg2=${2:-}; [ -n "$arg2" ] || die "oneway needs A and B" 64; shift 2;;
esac
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n=$2; shift 2;;
    -d) dir=$2; shift 2;;
    -j) joinmode=1; shift;;
    --) shift; break;;
    *) break;;
  esac
done
[ -n "$dir" ] || die "-d DIR is required" 64
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# One tag per cluster directory: namespaces and addresses of clusters run
# side by side never collide.
if [ -f "$dir/tag" ]; then tag=$(cat "$dir/tag"); else
  tag=$(( ($(date +%s%N) / 1000 + $$) % 200 + 20 ))
  echo "$tag" >"$dir/tag"
fi
ns() { echo "rt$tag-$1"; }
addr() { echo "10.$tag.0.$1"; }
members() { ls "$dir"/*.ns 2>/dev/null | sed 's|.*/||; s|\.ns$||' | sort -n; }
in_ns() { local id=$1; shift; ip netns exec "$(ns "$id")" "$@"; }

alive() { # pid: running, and not a zombie left for a parent to reap
  kill -0 "$1" 2>/dev/null && [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != Z ]
}

start_member() { # id: start it in its namespace with the command saved by up
  local cmdline
  source "$dir/$1.cmd"
  rm -f "$dir/$1.ready"
  # ip itself, not a function, in the background: bash execs it, and ip
  # execs the member, so $! is the member's own process ID.
  ip netns exec "$(ns "$1")" "${cmdline[@]}" >>"$dir/$1.out" 2>>"$dir/$1.log" &
  echo $! >"$dir/$1.pid"
}

drop() { # from to: member "to" drops what "from" sends
  in_ns "$2" iptables -A INPUT -s "$(addr "$1")" -j DROP
  in_ns "$1" iptables -A OUTPUT -d "$(addr "$2")" -j DROP
}

case "$cmd" in
  up)
    [[ "$n" =~ ^[1-9][0-9]*$ ]] && [ "$n" -le 50 ] || die "-n wants 1 to 50" 64
    ip netns add "$(ns hub)" 2>/dev/null || die "cannot make network namespaces here" 69
    in_ns hub ip link add br0 type bridge || { ip netns del "$(ns hub)"; die "cannot make a bridge here" 69; }
    in_ns hub ip link set br0 up
    in_ns hub ip link set lo up
    : >"$dir/peers"
    for i in $(seq 1 "$n"); do
      ip netns add "$(ns "$i")"
      touch "$dir/$i.ns"
      ip link add "rt${tag}m$i" netns "$(ns "$i")" type veth peer name "p$i" netns "$(ns hub)"
      in_ns hub ip link set "p$i" master br0 up
      in_ns "$i" ip addr add "$(addr "$i")/24" dev "rt${tag}m$i"
      in_ns "$i" ip link set "rt${tag}m$i" up
      in_ns "$i" ip link set lo up
      echo "$i=$(addr "$i"):7000" >>"$dir/peers"
    done
    head -c 32 /dev/urandom >"$dir/key"; chmod 600 "$dir/key"
    if [ $# -gt 0 ]; then
      bin=$1; shift
      command -v "$bin" >/dev/null 2>&1 || [ -x "$bin" ] || die "$bin: not found" 127
      bin=$(command -v "$bin" || echo "$bin")
      sub=""; if [ $# -gt 0 ] && [[ "$1" != -* ]]; then sub=$1; shift; fi
      for i in $(seq 1 "$n"); do
        args=(); for a in "$@"; do args+=("${a//\{id\}/$i}"); done
        where=(--peers "@$dir/peers")
        if [ "$joinmode" = 1 ]; then
          where=(--bind "$(addr "$i"):7000")
          others=""; for j in $(seq 1 "$n"); do [ "$j" = "$i" ] || others+="${others:+,}$(addr "$j"):7000"; done
          if [ "$i" != 1 ]; then where+=(--join "$others"); fi
        fi
        cmdline=("$bin" $sub --id "$i" "${where[@]}" --key-file "$dir/key" --ready-file "$dir/$i.ready" "${args[@]}")
        declare -p cmdline >"$dir/$i.cmd"
        start_member "$i"
      done
      deadline=$(( $(date +%s) + 15 ))
      for i in $(seq 1 "$n"); do
        until [ -f "$dir/$i.ready" ]; do
          [ "$(date +%s)" -lt "$deadline" ] || die "member $i not ready (see $dir/$i.log)" 69
          sleep 0.02
        done
      done
    fi
    echo "netsplit: $n members in namespaces $(ns 1)..$(ns "$n") ($(addr 1)..), in $dir"
    ;;
  partition)
    left=${arg1%%/*}; right=${arg1#*/}
    [ "$left" != "$arg1" ] || die "partition wants A,B/C,D" 64
    for a in ${left//,/ }; do for b in ${right//,/ }; do drop "$a" "$b"; drop "$b" "$a"; done; done
    ;;
  isolate)
    for b in $(members); do [ "$b" = "$arg1" ] || { drop "$arg1" "$b"; drop "$b" "$arg1"; }; done
    ;;
  oneway)
    drop "$arg1" "$arg2"
    ;;
  heal)
    for i in $(members); do in_ns "$i" iptables -F; done
    ;;
  exec)
    in_ns "$arg1" "$@"
    ;;
  kill|stop|pause|resume)
    case "$cmd" in kill) sig=KILL;; stop) sig=TERM;; pause) sig=STOP;; resume) sig=CONT;; esac
    kill -s "$sig" "$(cat "$dir/$arg1.pid")" 2>/dev/null || true
    ;;
  restart)
    [ -f "$dir/$arg1.cmd" ] || die "no member $arg1 in $dir" 64
    if alive "$(cat "$dir/$arg1.pid")"; then die "member $arg1 is still running" 1; fi
    start_member "$arg1"
    deadline=$(( $(date +%s) + 15 ))
    until [ -f "$dir/$arg1.ready" ]; do
      [ "$(date +%s)" -lt "$deadline" ] || die "member $arg1 not ready (see $dir/$arg1.log)" 69
      sleep 0.02
    done
    ;;
  down)
    for i in $(members); do
      [ -f "$dir/$i.pid" ] && kill "$(cat "$dir/$i.pid")" 2>/dev/null || true
    done
    for i in $(members); do
      if [ -f "$dir/$i.pid" ]; then
        for _ in $(seq 1 100); do alive "$(cat "$dir/$i.pid")" || break; sleep 0.02; done
      fi
      # Whatever still runs in the namespace goes with it: nothing is left
      # behind.
      ip netns pids "$(ns "$i")" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
      ip netns del "$(ns "$i")" 2>/dev/null || true
      rm -f "$dir/$i.ns"
    done
    ip netns del "$(ns hub)" 2>/dev/null || true
    ;;
  *) help >&2; exit 64;;
esac
