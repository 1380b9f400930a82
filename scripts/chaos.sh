#!/usr/bin/env bash
# chaos.sh — SECS seconds (default 60) of random partitions, one-way cuts,
# pauses, kills and restarts, each member in a network namespace of its own
# (scripts/netsplit.sh), for two clusters side by side: lockd members whose
# clients take one lock in turns with a witness running, and elect members
# that each run a witness under their lease. Then it heals, checks that
# every lockd client gets in again and that an elect command runs again,
# and prints what it did and what the witnesses found (no two holders or
# commands at once, tokens only grow). Needs root, ip and iptables; without
# them it says so and exits 0.
#
#   scripts/chaos.sh [SECS]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
secs=${1:-60}
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || { echo "chaos.sh: SECS must be a positive number of seconds" >&2; exit 64; }
CHAOS_SECS=$secs go test -count=1 -timeout $((secs + 300))s -run '^TestChaos$' -v ./cmd/lockd ./cmd/elect |
  grep -E '^\s+(netsplit|lease)_test.go|^--- |^(ok|FAIL|PASS)|SKIP' | sed 's/^\s*\(netsplit\|lease\)_test.go:[0-9]*: /  /'
