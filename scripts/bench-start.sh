#!/usr/bin/env bash
# bench-start.sh — what each operations feature (--metrics, sd_notify,
# --log-format, the keyring, peers by name, the version stamp, shell
# completions) costs one `lockd run L -- true` against a running 3-member
# loopback cluster (central), in one run:
#   a. package initialisation: GODEBUG=inittrace=1 on RUNS starts of
#      `lockd run L -- true`; per feature, the sum over the packages that
#      only it brings in (the import graph from `go list -deps` with the
#      feature's root packages removed), median (and p99) over the starts;
#      beside it the largest initialisers of the whole binary;
#   b. work on the client path at start: `go test -bench` of the functions
#      every start calls (pkg/cli's BenchmarkVersion, BenchmarkPrepare,
#      ...), and whole starts with and without what a feature reads
#      (NOTIFY_SOCKET set and unset; a release build's stamped version,
#      which skips reading the build information);
#   c. binary size: `go tool nm -size` summed over the feature's own
#      packages, or over the functions of its files where it lives in a
#      shared package (pkg/cli, pkg/wire);
#   and the whole `lockd run L -- true`, median and p99 (hyperfine -N,
#   else a bash loop), with the machine's load before and after.
# The features run in the daemons only where `lockd run` has no flag for
# them: run's flags are --socket and the waiting flags, so it reads no key
# file, builds no log handler, resolves no name and opens no NOTIFY_SOCKET;
# part b measures what it does call.
# Installs hyperfine when missing (lib.sh's apt_install); without it the
# whole starts are timed from bash. Loopback only; removes what it made.
#
#   scripts/bench-start.sh [RUNS]     (default 200)
. "$(dirname "$0")/lib.sh"
runs=${1:-200}
case $runs in '' | *[!0-9]*) echo "usage: $script [RUNS]" >&2; exit 64;; esac
[ "$runs" -ge 10 ] || { echo "$script: RUNS must be at least 10" >&2; exit 64; }
work=$(mktemp -d)
cleanup() {
  scripts/cluster.sh stop -d "$work/c" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
mod=github.com/roundtable-go/roundtable

command -v hyperfine >/dev/null 2>&1 || apt_install hyperfine || true

say "machine"
echo "$(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg); $(go version)"

build_tools "$work/bin"
lockd=$bin/lockd
# Two more builds of lockd for part b: a release build's stamped version
# (scripts/release.sh's -X flag), and the tool without urfave/cli's
# man-page and markdown generator (its build tag), for context.
build_variant "$work/stamped" lockd -ldflags "-X $mod/pkg/cli.stamped=v0.0.0-bench"
build_variant "$work/nodocs" lockd -tags urfave_cli_no_docs

scripts/cluster.sh start -n 3 -d "$work/c" "$lockd" serve --no-color --log-level warn --socket "$work/c/{id}.sock" >/dev/null
sock=$work/c/3.sock
for ((i = 0; i < 100; i++)); do
  "$lockd" run --socket "$sock" --nonblock warmup -- true 2>/dev/null && break
  sleep 0.1
done
"$lockd" run --socket "$sock" --nonblock warmup -- true

# Each feature: its name, the packages that are its own (roots: what they
# alone bring in is counted), and the files whose functions are its code
# in a shared package (size only). "-" for none.
features=(
  "--metrics|$mod/pkg/metrics|-"
  "sd_notify|-|pkg/cli/notify.go"
  "--log-format json|-|pkg/cli/logfmt.go"
  "keyring, SIGHUP|-|pkg/wire/keyring.go"
  "peers by name, --advertise|-|pkg/cli/names.go pkg/cli/join.go"
  "version stamp|runtime/debug|pkg/cli/version.go:Version,versionOf,versionCommand"
  "shell completions|-|pkg/cli/version.go:completionCommand,completionScript"
  "(urfave/cli's man-page generator)|github.com/cpuguy83/go-md2man/v2/md2man|-"
)

# only ROOT... — the packages of lockd that only ROOTs bring in: those
# reachable from cmd/lockd through the import graph, but no longer once the
# roots are taken out. (go list also lists packages no import names, such
# as runtime/cgo; they are nobody's.)
go list -deps -f '{{.ImportPath}} {{join .Imports " "}}' ./cmd/lockd >"$work/graph"
only() {
  awk -v roots="$*" -v top="$mod/cmd/lockd" '
    function reach(cut, seen,   stack, sp, p, q, m, i) {
      stack[++sp] = top; seen[top] = 1
      while (sp > 0) {
        p = stack[sp--]; m = split(imp[p], q, " ")
        for (i = 2; i <= m; i++) if (!(q[i] in seen) && !(q[i] in cut)) { seen[q[i]] = 1; stack[++sp] = q[i] }
      }
    }
    { imp[$1] = $0 }
    END {
      n = split(roots, r, " "); for (i = 1; i <= n; i++) cut[r[i]] = 1
      reach(none, all); reach(cut, kept)
      for (p in all) if (!(p in kept)) print p
    }' "$work/graph"
}

# a. inittrace of every start, one file of "run package ms bytes" lines.
say "a. package initialisation, $runs starts of lockd run L -- true"
: >"$work/init"
for ((i = 0; i < runs; i++)); do
  GODEBUG=inittrace=1 "$lockd" run --socket "$sock" L -- true 2>&1 >/dev/null |
    awk -v run="$i" '$1 == "init" { print run, $2, $5, $8 }' >>"$work/init"
done
# median and p99 of a column of numbers on stdin
medp99() { sort -n | awk '{ v[NR] = $1 } END { printf "%.0f %.0f", v[int((NR + 1) / 2)], v[int(NR * 0.99 + 0.999)] }'; }
# initsum PKGFILE: per start, the µs the listed packages spent; prints
# "median p99 bytes packages".
initsum() {
  local mp
  mp=$(awk -v runs="$runs" 'FILENAME == ARGV[1] { want[$1] = 1; next }
    $2 in want { us[$1] += $3 * 1000 }
    END { for (i = 0; i < runs; i++) print us[i] + 0 }' "$1" "$work/init" | medp99)
  echo "$mp $(awk 'FILENAME == ARGV[1] { want[$1] = 1; n++; next }
    $1 == 0 && $2 in want { b += $4 } END { print b + 0, n + 0 }' "$1" "$work/init")"
}
echo "largest initialisers (median µs over the starts, bytes allocated):"
sort -k2,2 -k3,3n "$work/init" |
  awk '$2 != p { if (p != "") print v[int((n + 1) / 2)], b, p; p = $2; n = 0 } { v[++n] = $3 * 1000; b = $4 }
    END { print v[int((n + 1) / 2)], b, p }' |
  sort -rn | head -8 | awk '{ printf "%10.0f %9d  %s\n", $1, $2, $3 }'
awk '{ us[$1] += $3 * 1000 } END { for (r in us) print us[r] }' "$work/init" | medp99 |
  awk '{ printf "all packages: median %d µs, p99 %d µs per start\n", $1, $2 }'
echo "$mod/pkg/cli" >"$work/p.cli"; read -r cli_us _ <<<"$(initsum "$work/p.cli")"
echo "$mod/pkg/wire" >"$work/p.wire"; read -r wire_us _ <<<"$(initsum "$work/p.wire")"
echo "(whole packages that also hold other code: pkg/cli ${cli_us} µs, pkg/wire ${wire_us} µs)"

# c. size: nm's symbol sizes, summed over packages or over a file's
# functions and methods (their closures included).
go tool nm -size "$lockd" >"$work/nm"
pkgsize() { # PKGFILE
  awk 'FILENAME == ARGV[1] { want[$1] = 1; next }
    { s = $4; sub(/^type:\*?/, "", s); p = s; sub(/\.[^\/]*$/, "", p); if (p in want) t += $2 }
    END { print t + 0 }' "$1" "$work/nm"
}
filesize() { # FILE[:NAME,NAME...]...
  local spec f names pkg total=0 s
  for spec in "$@"; do
    f=${spec%%:*}; names=${spec#*:}; [ "$names" = "$spec" ] && names=''
    pkg=$mod/$(dirname "$f")
    if [ -z "$names" ]; then # every func, method and type the file declares
      names=$(sed -nE 's/^func \(([a-z]+ )?\*?([A-Za-z0-9_]+)[^)]*\) ([A-Za-z0-9_]+).*/\2.\3/p
        s/^func ([A-Za-z0-9_]+).*/\1/p; s/^type ([A-Za-z0-9_]+).*/\1/p' "$f" | paste -sd, -)
    fi
    s=$(awk -v pkg="$pkg" -v names="$names" '
      BEGIN { n = split(names, a, ","); for (i = 1; i <= n; i++) want[a[i]] = 1 }
      index($4, pkg ".") == 1 {
        rest = substr($4, length(pkg) + 2)
        if (sub(/^\(\*?/, "", rest)) { # a method: Recv.Name, or any of type Recv
          recv = rest; sub(/\).*/, "", recv); sub(/\[.*/, "", recv)
          m = rest; sub(/^[^)]*\)\./, "", m); sub(/\..*/, "", m)
          if (recv in want || (recv "." m) in want) t += $2
        } else {
          sub(/\..*/, "", rest)
          if (rest in want) t += $2
        }
      }
      END { print t + 0 }' "$work/nm")
    total=$((total + s))
  done
  echo "$total"
}

# b. the client path's functions.
say "b. client path: the functions every start calls (go test -bench ./pkg/cli)"
go test -count=1 -run XXX -bench 'Version|CompletionCommands|Prepare' -benchmem ./pkg/cli >"$work/bench" 2>&1 ||
  { cat "$work/bench" >&2; exit 1; }
grep '^Benchmark' "$work/bench"
benchus() { awk -v b="Benchmark$1-" 'index($1, b) == 1 { printf "%.1f", $3 / 1000 }' "$work/bench"; }

# Whole starts: hyperfine -N, RUNS per variant, in ten rounds that
# rotate the order, so a change in load falls on every variant.
say "whole lockd run L -- true, $runs starts per variant"
variants=(base notify stamped nodocs)
for v in "${variants[@]}"; do : >"$work/w.$v"; done
whole() { # variant count
  local env=() cmd=("$lockd")
  case $1 in
    notify) env=(NOTIFY_SOCKET="$work/notify.sock");;
    stamped) cmd=("$work/stamped/lockd");;
    nodocs) cmd=("$work/nodocs/lockd");;
  esac
  cmd+=(run --socket "$sock" L -- true)
  if command -v hyperfine >/dev/null 2>&1; then
    env "${env[@]}" hyperfine -N -w 2 -r "$2" --export-json "$work/hf.json" "${cmd[*]}" >/dev/null 2>&1
    awk '/"times": \[/ { t = 1; next } t && /\]/ { t = 0 } t { v = $1; sub(/,$/, "", v); printf "%d\n", v * 1000000 }' "$work/hf.json"
  else
    local i t0 t1
    for ((i = 0; i < $2; i++)); do
      t0=${EPOCHREALTIME/./}; env "${env[@]}" "${cmd[@]}" >/dev/null; t1=${EPOCHREALTIME/./}
      echo $((t1 - t0))
    done
  fi
}
per=$(( (runs + 9) / 10 ))
for round in 0 1 2 3 4 5 6 7 8 9; do
  for ((k = 0; k < ${#variants[@]}; k++)); do
    v=${variants[(k + round) % ${#variants[@]}]}
    whole "$v" "$per" >>"$work/w.$v"
  done
done
stats() { medp99 <"$1"; }
command -v hyperfine >/dev/null 2>&1 && how="hyperfine -N" || how="from bash (hyperfine is not installed)"
read -r base_med base_p99 <<<"$(stats "$work/w.base")"
for v in "${variants[@]}"; do
  read -r med p99 <<<"$(stats "$work/w.$v")"
  case $v in
    base) label="as built (go build)";;
    notify) label="NOTIFY_SOCKET set";;
    stamped) label="stamped version (release.sh's -X)";;
    nodocs) label="-tags urfave_cli_no_docs";;
  esac
  awk -v l="$label" -v m="$med" -v p="$p99" -v b="$base_med" -v h="$how" \
    'BEGIN { printf "%-36s median %.2f ms, p99 %.2f ms (%+.0f µs against as built; %s)\n", l, m / 1000, p / 1000, m - b, h }'
done

say "What the operations features cost a lockd run start"
printf '| %s | %s | %s | %s | %s | %s |\n' feature "init µs (median, p99)" "client path µs" "size KB" "total µs" "within +0.3 ms"
printf '|---|---|---|---|---|---|\n'
for f in "${features[@]}"; do
  IFS='|' read -r name roots files <<<"$f"
  init_med=0 init_p99=0 npk=0 size=0
  if [ "$roots" != - ]; then
    # shellcheck disable=SC2086 # roots is a list
    only $roots >"$work/p.only"
    read -r init_med init_p99 _ npk <<<"$(initsum "$work/p.only")"
    size=$(pkgsize "$work/p.only")
  fi
  if [ "$files" != - ]; then
    # shellcheck disable=SC2086 # files is a list
    size=$((size + $(filesize $files)))
  fi
  case $name in
    "version stamp") client=$(benchus Version);;
    "shell completions") client=$(benchus CompletionCommands);;
    *) client=0;;
  esac
  if [ "$roots" = - ]; then
    initcol="0 (no package of its own)"
  else
    initcol="$init_med, $init_p99 ($(sed "s|^$mod/||" "$work/p.only" | sort | paste -sd' ' -))"
  fi
  # The last row is not an operations feature: context, no verdict.
  case $name in "("*) verdict="—";; *) verdict=$([ "${client%.*}" -le 300 ] && echo yes || echo NO);; esac
  awk -v n="$name" -v i="$initcol" -v im="$init_med" -v c="$client" -v s="$size" -v v="$verdict" 'BEGIN {
    printf "| %s | %s | %s | %.0f | %.0f | %s |\n", n, i, c, s / 1000, im + c, v }'
done
echo
echo "size: symbol sizes from go tool nm (code and data, without their line"
echo "tables); the whole lockd binary is $(stat -c %s "$lockd") bytes, and"
echo "$(stat -c %s "$work/nodocs/lockd") bytes built with -tags urfave_cli_no_docs."
echo
echo "client path 0: lockd run has no flag for it (it reads no key file, builds no"
echo "log handler, resolves no name, does not open NOTIFY_SOCKET); init 0: the"
echo "feature brings no package; its code is in a package every tool already had."
echo "Prepare, all of it (version string, version and completion commands,"
echo "usage handlers): $(benchus Prepare) µs."
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
