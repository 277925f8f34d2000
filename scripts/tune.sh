#!/usr/bin/env bash
# Tunes this host for the gateway: applies sysctl/99-ws-gateway.conf to the
# running kernel and installs it in /etc/sysctl.d so it survives a reboot;
# with --install-limits and --install-unit it also installs the limits.conf
# drop-in and the systemd unit.
#
# Limits are only raised, and what /etc/sysctl.d gets is what was applied, so
# a large host keeps the higher defaults it computes at boot.
#
# Idempotent: a value already in place is left alone, and each value it
# changes is saved once, the first time, to the restore file, so --restore
# puts back what the host had before the first run however often this ran.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: sudo scripts/tune.sh [options]

  (no option)       apply sysctl/99-ws-gateway.conf now and install it in /etc/sysctl.d
  --dry-run         print each change as "key: current -> new" and change nothing
  --restore         put back the values saved by earlier runs, remove the /etc/sysctl.d file
  --install-limits  install sysctl/ws-gateway-limits.conf in /etc/security/limits.d
  --install-unit    install sysctl/ws-gateway.service in /etc/systemd/system
  --root DIR        act on DIR/proc/sys, DIR/etc and DIR/var instead of / (for tests)

--restore leaves the limits and unit files in place: remove those by hand.
EOF
}

kit=$(cd "$(dirname "$0")/../sysctl" && pwd)
root=
dry_run=
restore=
install_limits=
install_unit=
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry_run=1 ;;
    --restore) restore=1 ;;
    --install-limits) install_limits=1 ;;
    --install-unit) install_unit=1 ;;
    --root)
      [ $# -ge 2 ] || { echo "--root needs a folder" >&2; exit 2; }
      root=${2%/}
      shift
      ;;
    -h | --help) usage; exit 0 ;;
    *) echo "unknown option: $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

# Limits: raised to the kit's value, number by number, never lowered, since a
# large host's defaults may already allow more. Other keys are set as written
# (a smaller default buffer, a shorter FIN timeout are the point).
floors=" fs.file-max fs.nr_open net.core.somaxconn net.ipv4.tcp_max_syn_backlog net.core.netdev_max_backlog net.netfilter.nf_conntrack_max net.ipv4.tcp_mem "

state=$root/var/lib/ws-gateway/sysctl.restore
persisted=$root/etc/sysctl.d/99-ws-gateway.conf

# "key<TAB>value" for each "key = value" line of a sysctl file; whitespace in
# values is folded to single spaces, the way the kernel prints them back.
entries() {
  sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$1" | while IFS='=' read -r key value; do
    printf '%s\t%s\n' "$(squash "$key")" "$(squash "$value")"
  done
}

squash() {
  local -a words
  read -ra words <<<"$1"
  echo "${words[*]}"
}

# The larger of two values, number by number: raised "1 5 2" "3 4 4" -> "3 5 4".
raised() {
  local -a current wanted
  read -ra current <<<"$1"
  read -ra wanted <<<"$2"
  local i
  for i in "${!wanted[@]}"; do
    if [ "${current[i]:-0}" -gt "${wanted[i]}" ]; then wanted[i]=${current[i]}; fi
  done
  echo "${wanted[*]}"
}

# Writes each key of a sysctl file to /proc/sys (what sysctl -w does). With
# $2 = "tune", limits are only raised, replaced values are saved, and each
# value is added to $applied for /etc/sysctl.d; without it (restoring), values
# are written as they are.
apply() {
  local mode=${2-} key value file current
  while IFS=$'\t' read -r key value; do
    file=$root/proc/sys/${key//.//}
    if [ ! -e "$file" ]; then
      echo "skip $key: not on this kernel, or its module is not loaded"
    else
      current=$(squash "$(cat "$file")")
      if [ "$mode" = tune ] && [[ $floors == *" $key "* ]]; then value=$(raised "$current" "$value"); fi
      write "$file" "$key" "$current" "$value" "$mode"
    fi
    if [ "$mode" = tune ]; then echo "$key = $value" >>"$applied"; fi
  done < <(entries "$1")
}

# Sets one key unless it already has the value; when tuning, saves the value
# it replaces unless an earlier run saved the original already.
write() {
  local file=$1 key=$2 current=$3 value=$4 mode=$5
  if [ "$current" = "$value" ]; then
    echo "ok   $key = $value"
    return
  fi
  echo "set  $key: $current -> $value"
  [ -z "$dry_run" ] || return 0
  if [ "$mode" = tune ] && ! grep -q "^$key = " "$state" 2>/dev/null; then
    mkdir -p "$(dirname "$state")"
    echo "$key = $current" >>"$state"
  fi
  echo "$value" >"$file"
}

# Copies a kit file to its place unless it is already there, as it is.
place() {
  if cmp -s "$1" "$2"; then
    echo "ok   $2"
  elif [ -n "$dry_run" ]; then
    echo "install $2"
  else
    install -D -m 0644 "$1" "$2"
    echo "installed $2"
  fi
}

if [ -z "$dry_run" ] && [ -z "$root" ] && [ "$(id -u)" -ne 0 ]; then
  echo "tune.sh changes kernel settings: run it with sudo (or --dry-run to see the changes)" >&2
  exit 1
fi
[ -z "$dry_run" ] || echo "dry run: nothing is changed"

if [ -n "$restore" ]; then
  if [ -f "$state" ]; then apply "$state"; else echo "no saved values: $state does not exist"; fi
  for file in "$state" "$persisted"; do
    if [ ! -e "$file" ]; then continue; fi
    if [ -n "$dry_run" ]; then echo "remove $file"; else rm "$file" && echo "removed $file"; fi
  done
else
  applied=$(mktemp)
  trap 'rm -f "$applied"' EXIT
  echo "# Written by ws-gateway's scripts/tune.sh from sysctl/99-ws-gateway.conf (see its comments for why):
# the kit's values, or the host's own where they were higher. scripts/tune.sh --restore removes it." >"$applied"
  apply "$kit/99-ws-gateway.conf" tune
  place "$applied" "$persisted"
fi

[ -z "$install_limits" ] || place "$kit/ws-gateway-limits.conf" "$root/etc/security/limits.d/ws-gateway.conf"
if [ -n "$install_unit" ]; then
  place "$kit/ws-gateway.service" "$root/etc/systemd/system/ws-gateway.service"
  if [ -z "$dry_run" ] && [ -z "$root" ] && command -v systemctl >/dev/null; then
    systemctl daemon-reload
    echo "next: sudo systemctl enable --now ws-gateway (see the unit's comments)"
  fi
fi
