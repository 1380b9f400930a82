# lib.sh — sourced first by the scripts under scripts/ (never run on its
# own): the preamble they share, installing Debian packages, and one build
# of the tools.
#
#   . "$(dirname "$0")/lib.sh"
#
# Sourcing it sets -euo pipefail, changes to the repository's root, puts
# Go's usual directories on PATH, and sets bold and plain to the terminal's
# escape sequences when stdout is a terminal and NO_COLOR is unset (empty
# otherwise); say TEXT prints TEXT as a heading with them.
#
#   apt_install PACKAGE...   install the Debian packages with apt-get
#       (apt-get update once per script, then install without recommended
#       packages and without starting services), as root or through
#       passwordless sudo; otherwise say which packages are needed and
#       return 1: the caller decides whether that is fatal (exit 69) or a
#       part to skip.
#   build_tools DIR          build the six tools into DIR as `go install`
#       makes them (go build, default flags and tags), once per script:
#       every script, bench and test measures the same binaries. With
#       ROUNDTABLE_BIN set, use the binaries already in that directory
#       instead (another revision, measured with the same script).
#       Sets bin to the directory.
#   build_variant DIR TOOL FLAG...   one tool built with other go build
#       flags (a tag, -ldflags) into DIR, for a bench that sets a build
#       beside build_tools' one (bench-start.sh).

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="$PATH:/usr/local/go/bin"
export PATH="$PATH:$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin:/usr/sbin:/sbin"

script=${0##*/}
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
  bold=$'\033[1m' plain=$'\033[0m'
else
  bold='' plain=''
fi
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }

apt_updated=0
apt_install() { # PACKAGE...
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      echo "$script: please install (as root): apt-get install $*" >&2
      return 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$script: apt-get is missing; please install the Debian packages $*" >&2
    return 1
  fi
  # RUNLEVEL=1: packages such as chrony and etcd-server must not start
  # their services (a system chronyd would discipline this machine's
  # clock; the benches start their own etcd).
  if [ "$apt_updated" = 0 ]; then
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    apt_updated=1
  fi
  "${sudo[@]}" env RUNLEVEL=1 DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

bin=''
build_tools() { # DIR
  if [ -n "${ROUNDTABLE_BIN:-}" ]; then
    bin=$ROUNDTABLE_BIN
    return 0
  fi
  if [ "$bin" = "$1" ] && [ -x "$bin/lockd" ]; then return 0; fi
  mkdir -p "$1"
  go build -o "$1/" ./cmd/...
  bin=$1
}

# build_variant DIR TOOL FLAG...: one tool built with other go build flags
# (a tag, -ldflags), for a bench that compares a build with the one
# build_tools makes; what a bench measures is build_tools' build.
build_variant() {
  local dir=$1 tool=$2
  shift 2
  mkdir -p "$dir"
  go build -o "$dir/" "$@" "./cmd/$tool"
}
