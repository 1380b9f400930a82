#!/usr/bin/env bash
# chaos.sh — SECS seconds (default 60) of random partitions, one-way cuts,
# pauses, kills and restarts of lockd members, each in a network namespace
# of its own (scripts/netsplit.sh), while clients take one lock in turns
# with a witness running; then it heals, checks that every client gets in
# again, and prints what it did and what the witness found (no two holders
# at once, tokens only grow). Needs root, ip and iptables; without them it
# says so and exits 0.
#
#   scripts/chaos.sh [SECS]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
secs=${1:-60}
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || { echo "chaos.sh: SECS must be a positive number of seconds" >&2; exit 64; }
CHAOS_SECS=$secs go test -count=1 -timeout $((secs + 300))s -run '^TestChaos$' -v ./cmd/lockd |
  grep -E '^\s+netsplit_test.go|^--- |^(ok|FAIL|PASS)|SKIP' | sed 's/^\s*netsplit_test.go:[0-9]*: /  /'
