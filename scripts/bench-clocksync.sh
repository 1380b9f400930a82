#!/usr/bin/env bash
# bench-clocksync.sh — clocksync against chronyd, in one run (loopback,
# non-default ports, chronyd -x: the system clock is never touched):
#   1. ≥ 100 queries each via github.com/beevik/ntp: median round trip and
#      offset, and their ratio (targets: rtt ≤ 1.5× chronyd's, |offset| ≤ 20 µs);
#   2. server throughput, sequential queries per second on one socket;
#   3. convergence: a server started +250 ms ahead with 200 ppm drift, polling
#      a stratum-1 server every second, until within 1 ms (target ≤ 30 s).
# Installs chrony when missing (lib.sh's apt_install), without starting it.
. "$(dirname "$0")/lib.sh"
if ! command -v chronyd >/dev/null 2>&1; then
  apt_install chrony || { echo "bench-clocksync: chronyd is needed" >&2; exit 69; }
fi
go test -run '^$' -bench 'AgainstChronyd|Convergence' -benchtime 1x ./cmd/clocksync | grep -vE '^(goos|goarch|pkg|cpu|PASS|ok|Benchmark)'
