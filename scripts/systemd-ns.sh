#!/usr/bin/env bash
# systemd-ns.sh — run contrib/systemd/lockd.service and elect@.service under
# a real systemd, as PID 1 of a private PID and mount namespace, on a host
# (or container) whose own PID 1 is not systemd. Checks, with the units as
# shipped (DynamicUser=, LoadCredential=, the hardening):
#
#   1. lockd.service, member 1 of three and alone, stays "activating":
#      Type=notify, and READY=1 waits for a quorum;
#   2. once member 2 runs (outside, on loopback), it turns "active", its
#      status saying "quorum";
#   3. elect@demo.service (one member, so it leads) is active and runs
#      its command, and that command is gone once the unit is stopped.
#
#   scripts/systemd-ns.sh [--bin DIR]
#
# Needs root, systemd, util-linux's unshare and nsenter, and overlayfs.
# The namespace sees the host's files through overlays (/etc, /usr/bin) and
# a unit directory of its own holding only stub targets and the two units,
# so nothing of the host's is started; everything, the namespace included,
# is killed at exit. Exit 0 when every check passed, 1 otherwise, 69 when
# a prerequisite is missing.
. "$(dirname "$0")/lib.sh"

bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2;;
    *) echo "$script: unknown argument $1" >&2; exit 64;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "$script: needs root (it mounts and starts systemd)" >&2; exit 69; }
for c in unshare nsenter /lib/systemd/systemd; do
  command -v "$c" >/dev/null || { echo "$script: $c is missing" >&2; exit 69; }
done

D=$(mktemp -d /tmp/sdns.XXXXXX)
pid1="" m2=""
cleanup() {
  [ -n "$m2" ] && kill "$m2" 2>/dev/null || true
  [ -n "$pid1" ] && kill -9 "$pid1" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$D"
}
trap cleanup EXIT
if [ -n "$bin" ]; then ROUNDTABLE_BIN=$bin; fi
build_tools "$D/bin"

mkdir -p "$D/units" "$D/up/etc/roundtable/elect" "$D/up/etc/systemd/system" "$D/up/usr/bin" "$D/work/etc" "$D/work/usr"
for t in sysinit basic shutdown network-online multi-user sockets paths timers slices local-fs swap; do
  printf '[Unit]\nDescription=%s (stub)\n' "$t" > "$D/units/$t.target"
done
printf '[Unit]\nDescription=system slice\n' > "$D/units/system.slice"
printf '[Unit]\nDescription=the units under test\nWants=lockd.service elect@demo.service\n' > "$D/units/rt.target"
cp contrib/systemd/lockd.service contrib/systemd/elect@.service "$D/units/"
# Without journald, each unit's output goes to a file (the only change).
for u in lockd.service elect@demo.service; do
  mkdir -p "$D/up/etc/systemd/system/$u.d"
  printf '[Service]\nStandardOutput=append:/run/%s.log\nStandardError=append:/run/%s.log\n' "$u" "$u" > "$D/up/etc/systemd/system/$u.d/log.conf"
done
cp "$bin/lockd" "$bin/elect" "$D/up/usr/bin/"
# port: sets got to a UDP port on loopback that nothing binds now (and
# none handed out before by this script).
used=" "
port() {
  local p
  for _ in $(seq 1 100); do
    p=$(( 20000 + RANDOM % 40000 ))
    case "$used" in *" $p "*) continue;; esac
    ss -Hluan "sport = :$p" | grep -q . && continue
    used="$used$p "; got=$p; return
  done
  echo "$script: no free UDP port found" >&2; exit 1
}
port; p1=$got; port; p2=$got; port; p3=$got; port; p4=$got
peers="1=127.0.0.1:$p1,2=127.0.0.1:$p2,3=127.0.0.1:$p3"
printf 'LOCKD_ID=1\nLOCKD_PEERS=%s\n' "$peers" > "$D/up/etc/roundtable/lockd.env"
printf "ELECT_ID=1\nELECT_PEERS=1=127.0.0.1:%s\nCOMMAND=sh -c 'echo leader-child; exec sleep 600'\n" "$p4" > "$D/up/etc/roundtable/elect/demo.env"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$D/up/etc/roundtable/cluster.key"
chmod 600 "$D/up/etc/roundtable/cluster.key"

# The namespace's / is made private (nothing leaks to the host) and then
# shared again within it: systemd's credentials (LoadCredential=) are
# mounted by PID 1 and reach a unit's own mount namespace only by
# propagation; under a private / every unit sees an empty
# $CREDENTIALS_DIRECTORY.
cat > "$D/init.sh" <<EOF
#!/bin/sh
mount --make-rprivate /
mount -t overlay overlay -o lowerdir=/etc,upperdir=$D/up/etc,workdir=$D/work/etc /etc || exit 1
mount -t overlay overlay -o lowerdir=/usr/bin,upperdir=$D/up/usr/bin,workdir=$D/work/usr /usr/bin || exit 1
mount --bind $D/units /lib/systemd/system || exit 1
mount -t tmpfs tmpfs /run || exit 1
mount -t tmpfs tmpfs /var/lib || exit 1
mount --make-rshared /
exec /lib/systemd/systemd --system --unit=rt.target --log-target=console </dev/null
EOF
chmod +x "$D/init.sh"
timeout -s KILL 300 unshare --pid --fork --mount --mount-proc --kill-child "$D/init.sh" > "$D/systemd.log" 2>&1 &
in_ns() { nsenter -t "$pid1" -m -p "$@"; }
state() { in_ns systemctl show -p ActiveState --value "$1" 2>/dev/null || true; }
for _ in $(seq 1 100); do
  pid1=$(pgrep -f "^/lib/systemd/systemd --system --unit=rt.target" || true)
  [ -n "$pid1" ] && in_ns systemctl is-system-running >/dev/null 2>&1 && break
  [ -n "$pid1" ] && [ "$(state elect@demo.service)" = active ] && break
  sleep 0.1
done
if [ -z "$pid1" ]; then
  # A host that refuses the namespace or the mounts (an unprivileged
  # container) lacks a prerequisite: 69. Anything else is a failure.
  if grep -qE '^(unshare|mount|nsenter):|Operation not permitted|Permission denied' "$D/systemd.log"; then
    echo "$script: this host refuses a private PID and mount namespace:"; cat "$D/systemd.log"; exit 69
  fi
  echo "$script: systemd did not start:"; cat "$D/systemd.log"; exit 1
fi

fail=0
check() { if eval "$2"; then echo "ok    $1"; else echo "FAIL  $1"; fail=1; fi; }
wait_state() { for _ in $(seq 1 100); do [ "$(state "$1")" = "$2" ] && return 0; sleep 0.1; done; return 1; }

wait_state elect@demo.service active || true
check "elect@demo.service active (READY=1 on its first leader)" '[ "$(state elect@demo.service)" = active ]'
# The command starts once the lease is held, a moment after READY=1.
child() { in_ns ps -eo args | grep -qx "sleep 600"; }
wait_child() { for _ in $(seq 1 100); do child && return 0; sleep 0.1; done; return 1; }
check "elect@demo.service runs its command as the leader" wait_child
# Member 1 alone: a second is five election timeouts, ample for a READY=1
# sent on listening to arrive; with READY at quorum none ever comes.
sleep 1
check "lockd.service alone of three: still activating (no quorum)" '[ "$(state lockd.service)" = activating ]'
"$bin/lockd" serve --id 2 --peers "$peers" --key-file "$D/up/etc/roundtable/cluster.key" \
  --socket "$D/2.sock" --state-file "$D/2.state" > "$D/m2.log" 2>&1 &
m2=$!
check "lockd.service active once member 2 runs" 'wait_state lockd.service active'
# READY=1 comes with "…, quorum"; a coordinator change right after it
# replaces the line with "member 1: coordinator N term T".
check "lockd.service status says quorum or names the coordinator" 'in_ns systemctl show -p StatusText --value lockd.service | grep -qE "quorum|coordinator [0-9]"'
in_ns systemctl stop elect@demo.service
check "elect@demo.service stopped: its command is gone" '! child'
if [ "$fail" != 0 ]; then
  in_ns sh -c 'systemctl status --no-pager lockd.service elect@demo.service; cat /run/*.log' || true
fi
exit "$fail"
