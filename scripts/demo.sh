#!/usr/bin/env bash
# demo.sh — build every binary into ./bin and run the main job on a local
# cluster: five `elect` members on loopback, each ready to run a command
# while it leads. Kill the leader, watch the survivors agree on a new one
# (and its command start), then restart the old leader and watch it take
# over again at a higher term.
. "$(dirname "$0")/lib.sh"


say "building ./bin"
build_tools bin
ls "$bin"

dir=$(mktemp -d)
trap 'scripts/cluster.sh stop -d "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT

leader_of() { grep '^leader ' "$dir/$1.out" 2>/dev/null | tail -n1; }
wait_leader() { # leader, members...
  local want=$1; shift
  local deadline=$(( $(date +%s) + 15 ))
  for i in "$@"; do
    until leader_of "$i" | grep -q "^leader $want "; do
      [ "$(date +%s)" -lt "$deadline" ] || { echo "demo: member $i did not see leader $want" >&2; exit 1; }
      sleep 0.01
    done
  done
}
wait_line() { # file pattern: the command starts once the leader holds its lease
  local deadline=$(( $(date +%s) + 15 ))
  until grep -q "$2" "$1" 2>/dev/null; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "demo: no '$2' in $1" >&2; exit 1; }
    sleep 0.01
  done
}
show() { for i in "$@"; do echo "member $i: $(leader_of "$i")"; done; }

say "starting 5 members: scripts/cluster.sh start -n 5 bin/elect run --rerun -- <command run only by the leader>"
scripts/cluster.sh start -n 5 -d "$dir" "$bin/elect" run --rerun --kill-grace 1s --no-color --log-level warn -- \
  sh -c 'echo "  [member $ELECT_ID] now leading, ELECT_TERM=$ELECT_TERM"; exec sleep 3600'
cat "$dir/peers"
wait_leader 5 1 2 3 4 5
show 1 2 3 4 5
wait_line "$dir/5.out" 'lease held'
wait_line "$dir/5.out" 'now leading'
grep -h 'lease held\|now leading' "$dir"/*.out

say "elect status --peers @peers"
"$bin/elect" status --peers "@$dir/peers"

say "SIGKILL the leader (member 5)"
start=$(date +%s%N)
scripts/cluster.sh kill 5 -d "$dir"
wait_leader 4 1 2 3 4
echo "all survivors agreed within $(( ($(date +%s%N) - start) / 1000000 )) ms (measured by polling their output)"
show 1 2 3 4
wait_line "$dir/4.out" 'now leading'
echo "member 4's command started $(( ($(date +%s%N) - start) / 1000000 )) ms after the kill, once it held the lease:"
grep -h 'lease held\|now leading' "$dir/4.out"

say "elect status: member 5 is silent, the rest agree"
"$bin/elect" status --peers "@$dir/peers" || true

say "restart member 5: under bully the highest-priority member takes over again, at a higher term"
scripts/cluster.sh restart 5 -d "$dir"
wait_leader 5 1 2 3 4 5
show 1 2 3 4 5
wait_line "$dir/4.out" 'lease lost'
echo "member 4 lost its lease and stopped its command (stdout, then its log):"
grep -h 'lease lost' "$dir/4.out" | sed 's/^/  /'
grep -h 'leadership lost' "$dir/4.log" | sed 's/^/  /'

say "stopping the cluster"
scripts/cluster.sh stop -d "$dir"
echo done
