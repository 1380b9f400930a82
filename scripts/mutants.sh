#!/usr/bin/env bash
# mutants.sh — the standing mutant suite. Each patch under testdata/mutants/
# plants one realistic bug; this applies it to a scratch copy of HEAD, runs
# the tests meant to catch it, and reports whether the default test run
# catches it and on what fraction of simulator seeds.
#
#   scripts/mutants.sh [-n SEEDS] [PATTERN]
#       SEEDS: seeds tried one by one per mutant for the catch rate
#       (default 100); PATTERN: only the patches whose file name contains it.
#
# A patch file starts with header lines, then a unified diff against the
# repository's root (as `git diff` writes it):
#   # what: the bug, in one line
#   # breaks: the property it breaks
#   # pkg: the package whose tests catch it (./pkg/mutex)
#   # test: the tests, as a go test -run pattern
#   # seeds: yes when those tests take -seed (simulator runs), else no
#   # equivalent: why it cannot be caught (only for equivalent mutants)
#
# Output: one line per mutant (caught / SURVIVED / equivalent, seeds that
# catch it, what it is), then a summary. Exit 1 when a mutant that is not
# marked equivalent survives the default run, or does not apply; 64 usage.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

n=100
while getopts "n:h" o; do
  case "$o" in
    n) n=$OPTARG;;
    h) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0;;
    *) exit 64;;
  esac
done
shift $((OPTIND - 1))
pattern=${1:-}
[[ "$n" =~ ^[0-9]+$ ]] || { echo "mutants.sh: -n wants a number" >&2; exit 64; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git archive HEAD | tar -x -C "$work" --one-top-level=base
header() { sed -n "s/^# $1: //p" "$2" | head -n 1; }

total=0; caught=0; survived=0; equivalent=0; weak=0; broken=0
start=$(date +%s)
printf '%-34s %-10s %-9s %s\n' mutant verdict seeds what
for patch in testdata/mutants/*.patch; do
  name=$(basename "$patch" .patch)
  [ -z "$pattern" ] || [[ "$name" == *"$pattern"* ]] || continue
  total=$((total + 1))
  what=$(header what "$patch"); pkg=$(header pkg "$patch"); test=$(header test "$patch")
  seeds=$(header seeds "$patch"); equiv=$(header equivalent "$patch")
  tree="$work/$name"
  rm -rf "$tree"; cp -a "$work/base" "$tree"
  if ! (cd "$tree" && git apply "$OLDPWD/$patch" 2>"$work/$name.apply"); then
    printf '%-34s %-10s %-9s %s\n' "$name" "NO-APPLY" - "$what"; broken=$((broken + 1)); continue
  fi
  bin="$work/$name.test"
  if ! (cd "$tree" && go test -c -o "$bin" "$pkg" >"$work/$name.build" 2>&1); then
    printf '%-34s %-10s %-9s %s\n' "$name" "NO-BUILD" - "$what"; broken=$((broken + 1)); continue
  fi
  dir="$tree/${pkg#./}"
  # The default run: the test as scripts/test.sh runs it.
  if (cd "$dir" && "$bin" -test.run "$test" -test.count=1 >"$work/$name.log" 2>&1); then verdict=SURVIVED; else verdict=caught; fi
  rate=-
  if [ "$seeds" = yes ] && [ "$n" -gt 0 ]; then
    k=0
    for ((s = 1; s <= n; s++)); do
      (cd "$dir" && "$bin" -test.run "$test" -test.count=1 -seed "$s" >/dev/null 2>&1) || k=$((k + 1))
    done
    rate="$k/$n"
    [ $((k * 5)) -ge "$n" ] || { [ -n "$equiv" ] || weak=$((weak + 1)); }
  fi
  if [ -n "$equiv" ]; then
    equivalent=$((equivalent + 1)); verdict="equivalent"; what="$what (equivalent: $equiv)"
  elif [ "$verdict" = caught ]; then
    caught=$((caught + 1))
  else
    survived=$((survived + 1))
  fi
  printf '%-34s %-10s %-9s %s\n' "$name" "$verdict" "$rate" "$what"
  rm -rf "$tree" "$bin"
done
echo
echo "$total mutants: $caught caught by the default run, $survived survived, $equivalent equivalent, $broken did not apply or build; $weak caught by fewer than 20% of $n seeds; $(( $(date +%s) - start )) s"
[ "$survived" = 0 ] && [ "$broken" = 0 ]
