#!/usr/bin/env bash
# test.sh — install what the tests need when missing, then run the whole
# suite: formatting, vet, unit/simulator/multi-process tests with -race,
# and a short fuzzing pass over every decoder.
#
#   scripts/test.sh            everything (about 7 minutes on 2 cores)
#   FUZZTIME=0 scripts/test.sh skip the fuzzing pass (seed corpora still run)
#   FUZZTIME=30s scripts/test.sh  fuzz each decoder longer (default: 100000
#                              executions each, a few seconds; a count, not a
#                              duration, because Go 1.26's fuzzer can report
#                              "context deadline exceeded" at the end of a
#                              timed run on a loaded machine, golang/go#75804)
#   SEEDS=200 scripts/test.sh  fewer simulator seeds per algorithm (default 1000)
#   CHAOS_SECS=300 scripts/test.sh  a longer chaos run (default 60 s)
#
# The simulator property runs go twice: with -race over RACE_SEEDS (20)
# seeds, to catch data races in every code path, and without -race over
# SEEDS seeds, where their counts are reported.
set -euo pipefail
cd "$(dirname "$0")/.."

export PATH="$PATH:/usr/local/go/bin:$HOME/go/bin"
fuzztime=${FUZZTIME:-100000x}
seeds=${SEEDS:-${SIM_SEEDS:-1000}}

step() { printf '\n== %s\n' "$*"; }

apt_install() { # packages...: install with apt-get when root and apt are available
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    # RUNLEVEL=1: packages such as chrony must not start their services
    # (a system chronyd would try to discipline this machine's clock).
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  else
    echo "test.sh: please install: $*" >&2
    return 1
  fi
}

step "prerequisites"
command -v go >/dev/null 2>&1 || { echo "test.sh: Go 1.26 is required (https://go.dev/dl/)" >&2; exit 69; }
missing=()
command -v ps >/dev/null 2>&1 || missing+=(procps)
command -v ss >/dev/null 2>&1 || missing+=(iproute2)
# chronyd for the clocksync interoperability tests (run with -Q or -x only)
command -v chronyd >/dev/null 2>&1 || [ -x /usr/sbin/chronyd ] || missing+=(chrony)
# iptables for the real-partition tests (scripts/netsplit.sh; they skip without root)
command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || missing+=(iptables)
if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
go version
go mod download
if command -v chronyd >/dev/null 2>&1 || [ -x /usr/sbin/chronyd ]; then
  export CLOCKSYNC_REQUIRE_CHRONY=1
fi

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "not gofmt'ed:"; echo "$unformatted"; exit 1; fi

step "go vet"
go vet ./...
go vet -tags plot ./pkg/ticketd ./cmd/ticketd

step "ticketd sim --plot (a ticketd built with -tags plot)"
go test -tags plot -count=1 -run 'TestSimCommand' ./cmd/ticketd

race_seeds=${RACE_SEEDS:-20}
step "go test -race (unit, examples, fuzz seed corpora, multi-process; simulator at $race_seeds seeds)"
SIM_SEEDS=$race_seeds go test -race -timeout 20m -count=1 ./...

step "simulator properties, $seeds seeds per algorithm"
log=$(mktemp)
if ! SIM_SEEDS=$seeds go test -count=1 -timeout 20m -run 'TestSimProperties|Properties$|TooFewRounds|PlantedBug|TestSimLeases|TestSimChurn|TestSimFaults|TestSimCrashReclaim|TestSimEpochs|TestSimGossip|TestSimOrders|LargeSkews|TestSimulateLarge|TestSimulateAvailabilityPaper|TestVotingRestart|TestVotingSlowAcks|TestSimLinkCut|EvenSplit|TestSimLeaseSchedules|TestSimRingTies|TestSimGroups|TestSimAllLeave|TestRingTwoHoldersCrash|TestCentralTakeoverKeepsHolder' -v \
     ./pkg/election ./pkg/consensus ./pkg/mutex ./pkg/clocksync ./pkg/ticket ./pkg/ticketd ./pkg/gossip ./pkg/mcast >"$log" 2>&1; then
  cat "$log"; rm -f "$log"; exit 1
fi
grep -E 'seeds passed|disagreement found|caught|lease intervals|tickets taken|liveness|processes 10000|the bound' "$log"; rm -f "$log"

step "chaos: 60 s of partitions, pauses, kills and restarts of lockd and elect members, with the witnesses"
scripts/chaos.sh "${CHAOS_SECS:-60}"

if [ "$fuzztime" != 0 ]; then
  step "fuzzing every decoder ($fuzztime each)"
  log=$(mktemp)
  grep -rHoE '^func Fuzz[A-Za-z0-9_]+' --include='*_test.go' pkg cmd | sort -u |
  while IFS=: read -r file decl; do
    target=${decl#func }
    pkg=$(dirname "$file")
    echo "$target ($pkg)"
    if ! go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" "./$pkg" >"$log" 2>&1; then
      tail -n 40 "$log"
      echo "fuzzing $target failed; a failing input is kept under $pkg/testdata/fuzz/$target/" >&2
      exit 1
    fi
  done
fi

step "all tests passed"
