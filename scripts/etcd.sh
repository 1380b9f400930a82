# etcd.sh — sourced (after lib.sh) by the bench scripts that measure
# against etcd: the anchor's installation and a private etcd on loopback.
# Not run directly.
#
#   need_etcd TOOL [PACKAGE...]  install etcd-server and etcd-client (and
#       the extra Debian packages, when their commands are missing) with
#       lib.sh's apt_install; exit 69 naming TOOL when etcd is still missing.
#   start_etcd DIR  start etcd with its data under DIR on random loopback
#       ports; sets etcd_pid, exports ETCDCTL_API and ETCDCTL_ENDPOINTS,
#       and returns once it answers. The caller kills etcd_pid.

need_etcd() {
  local tool=$1 p missing=()
  shift
  command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
  command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)
  for p in "$@"; do command -v "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -gt 0 ] || return 0
  echo "installing ${missing[*]}..."
  if apt_install "${missing[@]}"; then
    # the package may start a system etcd; the bench starts its own
    if [[ " ${missing[*]} " == *" etcd-server "* ]]; then
      systemctl stop etcd >/dev/null 2>&1 || pkill -x etcd || true
    fi
  fi
  if ! command -v etcd >/dev/null 2>&1 || ! command -v etcdctl >/dev/null 2>&1; then
    echo "$tool: etcd and etcdctl are needed (apt-get install etcd-server etcd-client)" >&2
    exit 69
  fi
}

start_etcd() {
  local dir=$1 cport pport
  cport=$((20000 + RANDOM % 20000)); pport=$((cport + 1))
  etcd --data-dir "$dir/etcd" --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
       --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
       --initial-cluster "default=http://127.0.0.1:$pport" >"$dir/etcd.log" 2>&1 &
  etcd_pid=$!
  export ETCDCTL_API=3 ETCDCTL_ENDPOINTS="127.0.0.1:$cport"
  until etcdctl endpoint health >/dev/null 2>&1; do sleep 0.1; done
}
