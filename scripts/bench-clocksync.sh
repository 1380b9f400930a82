#!/usr/bin/env bash
# bench-clocksync.sh — clocksync against chronyd, in one run (loopback,
# non-default ports, chronyd -x: the system clock is never touched):
#   1. ≥ 100 queries each via github.com/beevik/ntp: median round trip and
#      offset, and their ratio (targets: rtt ≤ 1.5× chronyd's, |offset| ≤ 20 µs);
#   2. server throughput, sequential queries per second on one socket;
#   3. convergence: a server started +250 ms ahead with 200 ppm drift, polling
#      a stratum-1 server every second, until within 1 ms (target ≤ 30 s).
# Installs chrony with apt-get when missing (as root), without starting it.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin:/usr/sbin"
if ! command -v chronyd >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chrony >/dev/null
  else
    echo "bench-clocksync: chronyd is needed (apt-get install chrony)" >&2
    exit 69
  fi
fi
go test -run '^$' -bench 'AgainstChronyd|Convergence' -benchtime 1x ./cmd/clocksync | grep -vE '^(goos|goarch|pkg|cpu|PASS|ok|Benchmark)'
