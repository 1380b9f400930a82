#!/usr/bin/env bash
# release.sh — build what a release ships: static, version-stamped binaries
# of the six tools for Linux, and one Debian package per architecture.
#
#   scripts/release.sh [--version V] [--arch amd64|arm64|all] [--out DIR] [--fast]
#   scripts/release.sh --print-version [--version V]
#
#   --version V   the version the tools print (default: git describe --tags
#                 --always --dirty); the package's version is derived from it
#   --arch A      amd64, arm64 or all (default: all)
#   --out DIR     where the artifacts go (default: dist)
#   --fast        compress with gzip -1 instead of xz -6 (package) and
#                 gzip -9 (tarball): 40 times less CPU for files 2.5 times
#                 larger; for tests and trying a change, not for a release
#   --print-version  print the version and the package's version, build nothing
#
# Writes, per architecture A, into DIR:
#   roundtable_<debversion>_<A>.deb          the package (dpkg -i it)
#   roundtable_<debversion>_linux_<A>.tar.gz the same files, unpackaged
#   SHA256SUMS                               sha256sum -c it
# and prints the sums. The package holds /usr/bin/<tool>, man pages in
# /usr/share/man/man1, bash, zsh and fish completions in their Debian
# vendor directories, /usr/share/doc/roundtable/{README.md,copyright}, and
# the systemd units of contrib/systemd (when the tree has them) in
# /usr/lib/systemd/system. The binaries are built with CGO_ENABLED=0 and
# -trimpath, so they run on any Linux of their architecture.
#
# Needs Go, dpkg-deb (package dpkg), tar and gzip. Runs as any user: the
# files in the package are owned by root all the same (--root-owner-group).
# Exit codes: 64 usage, 69 a tool is missing or a build failed.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

help() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { echo "release.sh: $1" >&2; exit "${2:-64}"; }

tools=(clocksync consensus elect lockd mcast ticketd)
module=github.com/roundtable-go/roundtable
version="" arch=all out=dist fast=0 print=0
while [ $# -gt 0 ]; do
  case "$1" in
    --version) [ $# -ge 2 ] && [ -n "$2" ] || die "--version needs a value"; version=$2; shift 2;;
    --arch) [ $# -ge 2 ] || die "--arch needs a value"; arch=$2; shift 2;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; out=$2; shift 2;;
    --fast) fast=1; shift;;
    --print-version) print=1; shift;;
    -h|--help) help; exit 0;;
    *) die "unknown argument '$1' (see 'scripts/release.sh --help')";;
  esac
done
case "$arch" in
  amd64|arm64) arches=("$arch");;
  all) arches=(amd64 arm64);;
  *) die "--arch takes amd64, arm64 or all, not '$arch'";;
esac
untagged=0
if [ -z "$version" ]; then
  version=$(git describe --tags --always --dirty 2>/dev/null) ||
    die "not a git checkout: give the version with --version"
  git describe --tags >/dev/null 2>&1 || untagged=1
fi
case "$version" in
  *[!A-Za-z0-9.+~_-]*|"") die "--version '$version': use letters, digits and . + ~ _ -";;
esac

# debversion: a Debian version for a git describe output, ordered as
# dpkg --compare-versions expects: "v1.2.0" → "1.2.0"; "v1.2.0-rc1" →
# "1.2.0~rc1" (before 1.2.0); "v1.2.0-5-gabc1234-dirty" →
# "1.2.0+5.gabc1234.dirty" (after it). Without a tag, git describe gives
# the bare commit "abc1234": "0.0.0+gabc1234".
debversion() {
  local v=${1#v} base="" extra=""
  if [ "$untagged" = 1 ] && [[ $v =~ ^([0-9a-f]+)(-dirty)?$ ]]; then
    echo "0.0.0+g${BASH_REMATCH[1]}${BASH_REMATCH[2]:+.dirty}"
    return
  fi
  if [[ $v =~ ^(.*)-([0-9]+)-g([0-9a-f]+)(-dirty)?$ ]]; then
    base=${BASH_REMATCH[1]}
    extra="+${BASH_REMATCH[2]}.g${BASH_REMATCH[3]}${BASH_REMATCH[4]:+.dirty}"
  else
    base=$v
  fi
  base=${base//-/\~}
  base=${base//_/.}
  [[ $base =~ ^[0-9] ]] || base="0.0.0~$base"
  echo "$base$extra"
}
debv=$(debversion "$version")
if [ "$print" = 1 ]; then
  echo "$version $debv"
  exit 0
fi
for need in go dpkg-deb tar gzip sha256sum; do
  command -v "$need" >/dev/null 2>&1 || die "$need is required (dpkg-deb: apt-get install dpkg)" 69
done

# Every file gets the last commit's time, so two builds of one commit
# give the same archives.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# build ARCH DIR: the six static binaries into DIR.
build() {
  echo "building $version for linux/$1" >&2
  # urfave_cli_no_docs leaves out urfave/cli's man-page generator, 0.6-0.9 ms
  # of package initialisation on every start (docs/performance.md); the
  # man pages come from the test helpers (scripts/man.sh).
  CGO_ENABLED=0 GOOS=linux GOARCH=$1 go build -trimpath -tags urfave_cli_no_docs \
    -ldflags "-s -w -X $module/pkg/cli.stamped=$version" -o "$2/" ./cmd/... ||
    die "go build for linux/$1 failed" 69
}

# The completions ask the binary itself (TOOL completion SHELL), so they
# come from binaries this host can run.
host=$(go env GOARCH)
hostbin=$work/host
build "$host" "$hostbin"

# copyright: the project's licence (LICENSE, when the tree has one) and
# that of every module linked into the binaries, from the module cache.
copyright() {
  echo "roundtable: https://$module"
  echo "Copyright: the roundtable authors"
  echo
  if [ -f LICENSE ]; then cat LICENSE; else echo "License: none stated in the source tree."; fi
  echo
  echo "The programs in /usr/bin are statically linked with these Go modules,"
  echo "each under the licence that follows its name."
  local mod ver dir lic
  while read -r mod ver dir; do
    lic=$(ls "$dir"/LICENSE* "$dir"/LICENCE* "$dir"/COPYING* 2>/dev/null | head -n 1 || true)
    echo
    echo "-- $mod $ver"
    echo
    if [ -n "$lic" ]; then sed 's/[[:space:]]*$//' "$lic"; else echo "(no licence file found in the module)"; fi
  done < <(go list -m -f '{{.Path}} {{.Version}} {{.Dir}}' $(for t in "${tools[@]}"; do go version -m "$hostbin/$t"; done |
    awk '$1 == "dep" {print $2}' | sort -u))
}
copyright >"$work/copyright"

# xz -6's 8 MiB dictionary finds the code the six binaries share: the
# package is 2.5 times smaller than with gzip, for 40 s of CPU per
# architecture.
debz=(-Zxz -z6) tarz=(gzip -9n)
[ "$fast" = 0 ] || debz=(-Zgzip -z1) tarz=(gzip -1n)

sums=()
for a in "${arches[@]}"; do
  name=roundtable_${debv}_$a
  root=$work/$name
  if [ "$a" = "$host" ]; then
    mkdir -p "$root/usr/bin" && cp "$hostbin"/* "$root/usr/bin/"
  else
    build "$a" "$root/usr/bin"
  fi
  man=$root/usr/share/man/man1
  bash=$root/usr/share/bash-completion/completions
  zsh=$root/usr/share/zsh/vendor-completions
  fish=$root/usr/share/fish/vendor_completions.d
  doc=$root/usr/share/doc/roundtable
  mkdir -p "$man" "$bash" "$zsh" "$fish" "$doc"
  for t in "${tools[@]}"; do
    [ -f "docs/man/$t.1" ] || die "docs/man/$t.1 is missing: run scripts/man.sh"
    gzip -9n <"docs/man/$t.1" >"$man/$t.1.gz"
    "$hostbin/$t" completion bash >"$bash/$t"
    "$hostbin/$t" completion zsh >"$zsh/_$t"
    "$hostbin/$t" completion fish >"$fish/$t.fish"
  done
  cp README.md "$work/copyright" "$doc/"
  if [ -d contrib/systemd ] && compgen -G 'contrib/systemd/*.service' >/dev/null; then
    mkdir -p "$root/usr/lib/systemd/system"
    cp contrib/systemd/*.service "$root/usr/lib/systemd/system/"
  fi
  find "$root" -type d -exec chmod 0755 {} +
  find "$root" -type f -exec chmod 0644 {} +
  chmod 0755 "$root"/usr/bin/*

  mkdir -p "$root/DEBIAN"
  (cd "$root" && find usr -type f | LC_ALL=C sort | xargs md5sum) >"$root/DEBIAN/md5sums"
  cat >"$root/DEBIAN/control" <<EOF
Package: roundtable
Version: $debv
Architecture: $a
Maintainer: ${DEBFULLNAME:-roundtable maintainers} <${DEBEMAIL:-maintainers@roundtable-go.invalid}>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Section: net
Priority: optional
Homepage: https://$module
Description: distributed coordination for shell scripts
 Six command-line tools that run classic distributed-coordination
 protocols over real sockets: elect (leader election), lockd (distributed
 locks with fencing tokens), ticketd (fault-tolerant cluster tickets),
 clocksync (NTP, Berkeley and logical clocks), consensus (FloodSet and
 Byzantine agreement) and mcast (reliable, causal and total-order
 multicast). Static binaries; no dependencies.
EOF
  chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
  find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

  dpkg-deb --root-owner-group "${debz[@]}" --build "$root" "$out/$name.deb" >/dev/null ||
    die "dpkg-deb failed for $a" 69
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    -C "$root" -cf - usr | "${tarz[@]}" >"$out/roundtable_${debv}_linux_$a.tar.gz"
  sums+=("$name.deb" "roundtable_${debv}_linux_$a.tar.gz")
done

(cd "$out" && sha256sum "${sums[@]}" | tee SHA256SUMS)
