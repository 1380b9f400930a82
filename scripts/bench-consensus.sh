#!/usr/bin/env bash
# bench-consensus.sh — n = 7, f = 2 on loopback, FloodSet and EIG: for each
# round length (smallest first) run TRIALS instances; a round length is
# reliable when every trial ends with all 7 deciding the same value in
# round f+1 = 3 with no late message. For the smallest reliable one, print
# the time from the common start to the last decision (median and max) and
# the messages per decision.
#
#   scripts/bench-consensus.sh [TRIALS]    (default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
trials=${1:-10}
work=$(mktemp -d)
trap 'scripts/cluster.sh stop -d "$work/c" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
go build -o "$work/consensus" ./cmd/consensus

field() { sed -E "s/.*\"$2\":\"?([^,\"}]*)\"?.*/\1/" <<<"$1"; }
fmt_us() { awk -v us="$1" 'BEGIN { printf "%.2f ms", us / 1000 }'; }

# trial ALGO ROUND: prints "ok <us-to-last-decision> <messages>" or "fail <why>"
trial() {
  local algo=$1 round=$2 now start_ns start i line t last=0 msgs=0 value="" late
  rm -rf "$work/c"
  now=$(date +%s%N); start_ns=$((now + 1500000000))
  start="$((start_ns / 1000000000)).$(printf %09d $((start_ns % 1000000000)))"
  scripts/cluster.sh start -n 7 -d "$work/c" "$work/consensus" run --algo "$algo" --f 2 --round "$round" \
    --value '{id}' --default 0 --start-at "$start" --json --no-color --log-level error >/dev/null
  for i in 1 2 3 4 5 6 7; do
    until [ -s "$work/c/$i.exit" ]; do sleep 0.01; done
    line=$(head -n1 "$work/c/$i.out")
    [ "$(field "$line" event)" = decide ] || { echo "fail member $i: $line"; return; }
    [ "$(field "$line" round)" = 3 ] || { echo "fail member $i decided in round $(field "$line" round)"; return; }
    late=$(field "$line" late); [ "$late" = 0 ] || { echo "fail member $i saw $late late messages"; return; }
    [ -z "$value" ] || [ "$value" = "$(field "$line" value)" ] || { echo "fail disagreement"; return; }
    value=$(field "$line" value)
    t=$(date -d "$(field "$line" time)" +%s%N)
    [ "$t" -gt "$last" ] && last=$t
    msgs=$((msgs + $(field "$line" messages)))
  done
  echo "ok $(( (last - start_ns) / 1000 )) $msgs"
}

for algo in floodset eig; do
  echo "== $algo, n = 7, f = 2, $trials trials per round length"
  for round in 1ms 2ms 5ms 10ms 20ms 50ms; do
    times=(); msgs=0; reliable=1
    for ((k = 1; k <= trials; k++)); do
      read -r status a b <<<"$(trial "$algo" "$round")"
      if [ "$status" != ok ]; then echo "  round $round: unreliable ($a $b)"; reliable=0; break; fi
      times+=("$a"); msgs=$b
    done
    [ $reliable = 1 ] || continue
    sorted=($(printf '%s\n' "${times[@]}" | sort -n))
    n=${#sorted[@]}
    med=${sorted[$((n / 2))]}; max=${sorted[$((n - 1))]}
    echo "  smallest reliable round length: $round"
    echo "  start to last decision: median $(fmt_us "$med"), max $(fmt_us "$max") over $n trials; exactly 3 rounds"
    echo "  messages: $msgs in all, $(( msgs / 7 )) per decision (bound n(n-1)(f+1) = 126 in all)"
    break
  done
done
