#!/usr/bin/env bash
# bench-consensus.sh — on loopback, FloodSet and EIG with n = 7, f = 2, and
# signed messages with n = 5, f = 2 and n = 7, f = 3 (which EIG would
# refuse): for each round length (smallest first) run TRIALS instances; a
# round length is reliable when every trial ends with all n deciding the
# same value in round f+1 with no late message. For the smallest reliable
# one, print the time from the common start to the last decision (median
# and max) and the messages per decision. Then signatures verified per
# second in a relayed chain beside the standard library's own
# BenchmarkVerification for Ed25519.
#
#   scripts/bench-consensus.sh [TRIALS]    (default 10)
. "$(dirname "$0")/lib.sh"
trials=${1:-10}
work=$(mktemp -d)
trap 'scripts/cluster.sh stop -d "$work/c" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
build_tools "$work/bin"

field() { sed -E "s/.*\"$2\":\"?([^,\"}]*)\"?.*/\1/" <<<"$1"; }
fmt_us() { awk -v us="$1" 'BEGIN { printf "%.2f ms", us / 1000 }'; }

# keys for the signed runs: one per process, and the public-keys file
mkdir -p "$work/keys"
for i in 1 2 3 4 5 6 7; do "$bin/consensus" keygen --id "$i" --out "$work/keys/$i.key"; done >"$work/keys/pub"

# trial ALGO N F ROUND: prints "ok <us-to-last-decision> <messages>" or "fail <why>"
trial() {
  local algo=$1 n=$2 f=$3 round=$4 now start_ns start i line t last=0 msgs=0 value="" late extra=()
  rm -rf "$work/c"
  now=$(date +%s%N); start_ns=$((now + 1500000000))
  start="$((start_ns / 1000000000)).$(printf %09d $((start_ns % 1000000000)))"
  [ "$algo" = signed ] && extra=(--signing-key "$work/keys/{id}.key" --public-keys "$work/keys/pub")
  scripts/cluster.sh start -n "$n" -d "$work/c" "$bin/consensus" run --algo "$algo" --f "$f" --round "$round" \
    --value '{id}' --default 0 --start-at "$start" --json --no-color --log-level error "${extra[@]}" >/dev/null
  for ((i = 1; i <= n; i++)); do
    until [ -s "$work/c/$i.exit" ]; do sleep 0.01; done
    line=$(head -n1 "$work/c/$i.out")
    [ "$(field "$line" event)" = decide ] || { echo "fail member $i: $line"; return; }
    [ "$(field "$line" round)" = $((f + 1)) ] || { echo "fail member $i decided in round $(field "$line" round)"; return; }
    late=$(field "$line" late); [ "$late" = 0 ] || { echo "fail member $i saw $late late messages"; return; }
    [ -z "$value" ] || [ "$value" = "$(field "$line" value)" ] || { echo "fail disagreement"; return; }
    value=$(field "$line" value)
    t=$(date -d "$(field "$line" time)" +%s%N)
    [ "$t" -gt "$last" ] && last=$t
    msgs=$((msgs + $(field "$line" messages)))
  done
  echo "ok $(( (last - start_ns) / 1000 )) $msgs"
}

for case in "floodset 7 2" "eig 7 2" "signed 5 2" "signed 7 3"; do
  read -r algo n f <<<"$case"
  echo "== $algo, n = $n, f = $f, $trials trials per round length"
  for round in 1ms 2ms 5ms 10ms 20ms 50ms; do
    times=(); msgs=0; reliable=1
    for ((k = 1; k <= trials; k++)); do
      read -r status a b <<<"$(trial "$algo" "$n" "$f" "$round")"
      if [ "$status" != ok ]; then echo "  round $round: unreliable ($a $b)"; reliable=0; break; fi
      times+=("$a"); msgs=$b
    done
    [ $reliable = 1 ] || continue
    sorted=($(printf '%s\n' "${times[@]}" | sort -n))
    cnt=${#sorted[@]}
    med=${sorted[$((cnt / 2))]}; max=${sorted[$((cnt - 1))]}
    echo "  smallest reliable round length: $round"
    echo "  start to last decision: median $(fmt_us "$med"), max $(fmt_us "$max") over $cnt trials; exactly $((f + 1)) rounds"
    echo "  messages: $msgs in all, $(( msgs / n )) per decision (bound n(n-1)(f+1) = $(( n * (n - 1) * (f + 1) )) in all)"
    break
  done
done

echo "== Ed25519 signatures verified per second"
ours=$(go test -run '^$' -bench 'BenchmarkSignedChainVerify$' -benchtime 3000x ./pkg/consensus | awk '/^Benchmark/ { for (i = 1; i < NF; i++) if ($(i+1) == "sigs/s") print $i }')
std=$(go test -run '^$' -bench 'BenchmarkVerification$' -benchtime 3000x crypto/ed25519 | awk '/^Benchmark/ { print $3 }')
awk -v o="$ours" -v s="$std" 'BEGIN { printf "  a relayed chain of 3 (pkg/consensus): %.0f/s; crypto/ed25519 BenchmarkVerification: %.0f/s (%.0f ns/op); ratio %.2f\n", o, 1e9 / s, s, o / (1e9 / s) }'
