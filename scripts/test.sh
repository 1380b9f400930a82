#!/usr/bin/env bash
# test.sh — install what the tests need when missing, then run the whole
# suite: formatting, vet, unit/simulator/multi-process tests with -race,
# and a short fuzzing pass over every decoder. Every stage runs even when
# an earlier one failed; the script ends with a table of the stages (name,
# seconds, pass or fail) and the names of the failing tests, and exits 1
# when any stage failed.
#
#   scripts/test.sh            everything (about 30 minutes on 2 idle cores; at 1,000 seeds it took
#                              38, and 74 to 94 at load 10 to 14; SEEDS=200 for a quicker pass)
#   FUZZTIME=0 scripts/test.sh skip the fuzzing pass (seed corpora still run)
#   FUZZTIME=30s scripts/test.sh  fuzz each decoder longer (default: 100000
#                              executions each, a few seconds; a count, not a
#                              duration, because Go 1.26's fuzzer can report
#                              "context deadline exceeded" at the end of a
#                              timed run on a loaded machine, golang/go#75804)
#   SEEDS=1000 scripts/test.sh the simulator stage at 1,000 seeds per property, where
#                              the figures in docs/testing.md come from (default 500,
#                              which keeps the whole run near 30 minutes on 2 cores)
#   CHAOS_SECS=300 scripts/test.sh  a longer chaos run (default 60 s)
#
# The simulator property runs go twice: with -race over RACE_SEEDS (20)
# seeds, to catch data races in every code path, and without -race over
# SEEDS seeds, where their counts are reported. The simulator stage runs
# every test whose name starts with TestSim in the packages under pkg/
# (a plain `go test` runs them at 100 seeds, pkg/sim's DefaultSeeds).
. "$(dirname "$0")/lib.sh"
set +e # every stage runs, whatever the one before it did
fuzztime=${FUZZTIME:-100000x}
seeds=${SEEDS:-${SIM_SEEDS:-500}}

step() { say "$*"; }

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
stages=() # "name<TAB>seconds<TAB>pass|fail"
failed=() # failing tests (or stages without tests), one per entry

# stage NAME CMD...: run CMD as one stage, its output kept in a log for
# the failing tests' names; record its time and verdict, never stop.
stage() {
  local name=$1 t0=$SECONDS log="$logs/${#stages[@]}.log" rc
  shift
  step "$name"
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 0 ]; then
    stages+=("$name"$'\t'"$((SECONDS - t0))"$'\tpass')
    return 0
  fi
  stages+=("$name"$'\t'"$((SECONDS - t0))"$'\tfail')
  local tests
  # "--- FAIL: TestX/sub (1.2s)" for a failed test, "FAIL pkg" for a
  # package that failed without one (a panic, a timeout, a build error).
  tests=$(grep -E '^\s*--- FAIL: ' "$log" | sed -E 's/^\s*--- FAIL: ([^ ]+).*/\1/' | sort -u)
  if [ -z "$tests" ]; then
    tests=$(grep -E '^FAIL\s+\S+' "$log" | awk '{print $2}' | sort -u)
  fi
  if [ -n "$tests" ]; then
    while read -r t; do failed+=("$name: $t"); done <<<"$tests"
  else
    failed+=("$name (exit $rc)")
  fi
  return 0
}

# summary: the table of stages and the failing tests; exit 1 if any failed.
summary() {
  step "summary"
  local line bad=0
  printf '%-72s %7s  %s\n' stage seconds result
  for line in "${stages[@]}"; do
    IFS=$'\t' read -r n secs res <<<"$line"
    printf '%-72.72s %7s  %s\n' "$n" "$secs" "$res"
    [ "$res" = pass ] || bad=1
  done
  if [ "$bad" = 0 ]; then
    echo "all tests passed"
    exit 0
  fi
  echo
  echo "failing:"
  printf '  %s\n' "${failed[@]}"
  exit 1
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
# systemd-analyze for the unit files' test (contrib/systemd; verify only, nothing started)
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
# dpkg-deb and dpkg for the package test (docs/packaging_test.go), fish to run its fish completions
command -v dpkg-deb >/dev/null 2>&1 || missing+=(dpkg)
command -v fish >/dev/null 2>&1 || missing+=(fish)
if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
go version
go mod download
if command -v chronyd >/dev/null 2>&1 || [ -x /usr/sbin/chronyd ]; then
  export CLOCKSYNC_REQUIRE_CHRONY=1
fi

gofmt_check() {
  local unformatted
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
  if [ -n "$unformatted" ]; then echo "not gofmt'ed:"; echo "$unformatted"; return 1; fi
}
stage "gofmt" gofmt_check

vet() { go vet ./... && go vet -tags plot ./pkg/ticketsim ./cmd/ticketd; }
stage "go vet" vet

stage "ticketd sim --plot (a ticketd built with -tags plot)" \
  go test -tags plot -count=1 -run 'TestSimCommand' ./cmd/ticketd

race_seeds=${RACE_SEEDS:-20}
# The -timeout values find a test that hangs; they are no verdict on speed.
# On a 2-core host at load 13 the slowest package of this stage took 8.3
# minutes, and each simulator package got about a quarter of a core, so
# the limits are several times what such a host needs (a quiet one runs
# the whole script in about 30 minutes; 38 with SEEDS=1000).
stage "go test -race (unit, examples, fuzz seed corpora, multi-process; simulator at $race_seeds seeds)" \
  env SIM_SEEDS="$race_seeds" go test -race -timeout 60m -count=1 ./...

# The simulator stage's tests: by name, every TestSim... under pkg/. A
# long simulation of fixed size, which the seed count does not change, runs
# once: either named without the prefix (TestThousandProcesses), so only in
# the stage above, or, where the race detector would make it many times
# slower for nothing (the simulator runs on one goroutine), skipped under
# -race and run here (planted-bug sweeps, TestSimAvailabilityAnalysis).
sim_pkgs=$(grep -rlE '^func TestSim' --include='*_test.go' pkg | xargs -n1 dirname | sort -u | sed 's|^|./|')
simulate() {
  local log="$logs/sim-verbose.log"
  if ! SIM_SEEDS=$seeds go test -count=1 -timeout 90m -run '^TestSim' -v $sim_pkgs >"$log" 2>&1; then
    cat "$log"
    return 1
  fi
  grep -E 'seeds passed|disagreement found|caught|lease intervals|tickets taken|liveness|processes 10000|the bound' "$log" || true
}
stage "simulator properties, $seeds seeds per algorithm (TestSim* in $(echo $sim_pkgs | wc -w) packages)" simulate

stage "chaos: ${CHAOS_SECS:-60} s of partitions, pauses, kills and restarts of lockd and elect members, with the witnesses" \
  scripts/chaos.sh "${CHAOS_SECS:-60}"

# ticketd's promise that one member cut off never stops the pool for
# longer than the failure-detection time, with real processes and a real
# cut (network namespaces; skipped where there are none), after the
# heavier stages so that the host is as busy as a user's, not more.
stage "one ticketd member of five cut off: every grant on the others within the failure-detection time" \
  env TICKETD_ISOLATE=1 go test -count=1 -timeout 10m -run '^TestIsolateOneOfFive$' -v ./cmd/ticketd

fuzz_all() {
  local log="$logs/fuzz-one.log" bad=0 file decl target pkg
  while IFS=: read -r file decl; do
    target=${decl#func }
    pkg=$(dirname "$file")
    echo "$target ($pkg)"
    if ! go test -run '^$' -fuzz "^$target\$" -fuzztime "$fuzztime" "./$pkg" >"$log" 2>&1; then
      tail -n 40 "$log"
      # the summary's failing-test list reads this line
      echo "--- FAIL: $target ($pkg)"
      echo "fuzzing $target failed; a failing input is kept under $pkg/testdata/fuzz/$target/" >&2
      bad=1
    fi
  done < <(grep -rHoE '^func Fuzz[A-Za-z0-9_]+' --include='*_test.go' pkg cmd | sort -u)
  return $bad
}
if [ "$fuzztime" != 0 ]; then
  stage "fuzzing every decoder ($fuzztime each)" fuzz_all
fi

summary
