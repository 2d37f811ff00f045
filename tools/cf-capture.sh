#!/usr/bin/env bash
# cf-capture.sh: save every output ClusterForge's node validation reads into one
# directory, for a support engineer to validate elsewhere without access to the node:
#
#   clusterforge validate --from-capture DIR --sku SKU     (nothing runs on the node)
#
# Run it on the node, as root (dmesg and lspci's link fields need root):
#
#   sudo tools/cf-capture.sh                      # ./cf-capture-<host>-<time>/ and its .tar.gz
#   sudo tools/cf-capture.sh -o DIR --sku hgx-h100-8gpu --full
#
# Options:
#   -o, --output DIR     capture directory (default ./cf-capture-<hostname>-<UTC time>)
#   --sku NAME           the node's SKU, written to meta.json
#   --full               also run `dcgmi diag -r 2 -j` (minutes; needed for level full)
#   --hccn-devices "0 1" NPU NIC device ids for hccn_tool (default: one per NPU chip)
#   --roce-interfaces "IF1 IF2"
#                        RoCE netdevs: `mlnx_qos -i IF` and their RoCE sysfs (default: none;
#                        name the node's fabric_roce_interfaces to validate roce.qos)
#   --juicefs "VOL=META-URL ..."
#                        JuiceFS volumes for `juicefs status` (default: each /etc/juicefs/<VOL>.env
#                        with the meta URL of juicefs-<VOL>.service's ExecStart); META_PASSWORD
#                        comes from /etc/juicefs/<VOL>.env, never the command line
#   --ceph-id ID         Ceph client for `ceph health` (default: admin where its keyring exists,
#                        else the first /etc/ceph/<cluster>.client.<ID>.keyring)
#   --ceph-cluster NAME  Ceph cluster name (default ceph)
#   --timeout SECONDS    per-command limit (default 60; dcgmi gets 1200)
#   --no-tar             do not pack DIR.tar.gz
#
# Layout (cfcore/collect.py CAPTURE_LAYOUT reads exactly these names):
#   nvidia-smi-q-x.xml                nvidia-smi -q -x
#   nvidia-smi-nvlink-s.txt           nvidia-smi nvlink -s
#   dmesg.txt                         dmesg
#   journalctl-k-b.txt                journalctl -k -b --no-pager   (only when dmesg fails)
#   lspci-vvv-10de.txt                lspci -vvv -nn -D -d 10de:    (NVIDIA GPUs, NVSwitches)
#   lspci-vvv-15b3.txt                lspci -vvv -nn -D -d 15b3:    (Mellanox/NVIDIA HCAs)
#   lspci-vvv-19e5.txt                lspci -vvv -nn -D -d 19e5:    (Huawei NPUs)
#   ibstat.txt                        ibstat
#   systemctl-is-active-nvidia-fabricmanager.txt
#   modinfo-license-nvidia.txt        modinfo -F license nvidia
#   dcgmi-diag-r2.json                dcgmi diag -r 2 -j            (--full)
#   npu-smi-info.txt                  npu-smi info
#   npu-smi-board-<N>.txt             npu-smi info -t board -i N    (each NPU)
#   npu-smi-health-<N>.txt            npu-smi info -t health -i N   (each NPU)
#   hccn-<N>-ip.txt, hccn-<N>-link.txt, hccn-<N>-net_health.txt
#                                     hccn_tool -i N -ip|-link|-net_health -g
#   ppu-smi-L.txt, ppu-smi-q.txt      ppu-smi -L, ppu-smi -q        (Alibaba PPU)
#   chronyc-tracking.txt              chronyc -n tracking
#   timedatectl-ntp.txt               timedatectl show -p NTP -p NTPSynchronized   (only when chronyc fails)
#   df-P-k-root.txt                   df -P -k /
#   proc-mounts.txt                   /proc/self/mounts
#   proc-driver-nvidia-version.txt    /proc/driver/nvidia/version
#   proc-modules.txt                  /proc/modules                 (nvidia_peermem for gpu.peermem)
#   ip-j-addr-show.json               ip -j addr show               (IPoIB interfaces for ib.ipoib)
#   etc-os-release.txt                /etc/os-release
#   juicefs-status-<N>.json           juicefs status META-URL       (each JuiceFS volume, N from 0)
#   ceph-health.json                  ceph --cluster C --id ID --connect-timeout 10 health --format json
#   sys/class/infiniband/...          the HCA sysfs attributes (files only)
#   mlnx_qos-<IF>.txt                 mlnx_qos -i IF                (--roce-interfaces, each IF)
#   sys/class/net/<IF>/...            mtu, ecn/roce_np/enable/<P>, ecn/roce_rp/enable/<P>,
#                                     ecn/roce_np/cnp_dscp, device/infiniband/<IBDEV>/ (empty dir)
#   sys/class/infiniband/<IBDEV>/...  tc/1/traffic_class, ports/1/gid_attrs/types/<N>, ports/1/gids/<N>
#   sys/kernel/config/rdma_cm/<IBDEV>/ports/1/default_roce_tos      (--roce-interfaces)
#   meta.json                         hostname, node_sku, captured_at, kernel, level
# A command that failed or printed to stderr leaves <file>.err: first line `rc: N`
# (127: the tool is not installed, 124: it timed out), then its stderr.
#
# CF_CAPTURE_ROOT (tests only) is prepended to /proc, /sys and /etc paths.
set -uo pipefail

OUT=""
SKU=""
FULL=0
HCCN_DEVICES=""
ROCE_INTERFACES=""
TIMEOUT=60
TAR=1
JUICEFS=""
CEPH_ID=""
CEPH_CLUSTER=ceph
ROOT=${CF_CAPTURE_ROOT:-}

usage() { sed -n '2,/^set -uo/{/^#/s/^# \{0,1\}//p}' "$0"; }
die() { printf 'cf-capture: error: %s\n  fix: %s\n' "$1" "$2" >&2; exit 2; }

while (($#)); do
  case $1 in
    -o | --output) OUT=${2:?}; shift 2 ;;
    --sku) SKU=${2:?}; shift 2 ;;
    --full) FULL=1; shift ;;
    --hccn-devices) HCCN_DEVICES=${2:?}; shift 2 ;;
    --roce-interfaces) ROCE_INTERFACES=${2:?}; shift 2 ;;
    --juicefs) JUICEFS=${2:?}; shift 2 ;;
    --ceph-id) CEPH_ID=${2:?}; shift 2 ;;
    --ceph-cluster) CEPH_CLUSTER=${2:?}; shift 2 ;;
    --timeout) TIMEOUT=${2:?}; shift 2 ;;
    --no-tar) TAR=0; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option $1" "see $0 --help" ;;
  esac
done
[[ $TIMEOUT =~ ^[0-9]+$ ]] || die "--timeout must be whole seconds, got $TIMEOUT" "e.g. --timeout 60"
for id in $HCCN_DEVICES; do
  [[ $id =~ ^[0-9]+$ ]] || die "--hccn-devices must list device numbers, got '$id'" 'e.g. --hccn-devices "0 1 2 3"'
done
for iface in $ROCE_INTERFACES; do  # a kernel netdev name (at most 15 characters), never a path
  [[ $iface =~ ^[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,14}$ ]] \
    || die "--roce-interfaces must list netdev names, got '$iface'" 'e.g. --roce-interfaces "enp24s0np0 enp64s0np0" (ip -br link)'
done

[[ $CEPH_CLUSTER =~ ^[A-Za-z0-9_-]+$ ]] || die "--ceph-cluster must be a plain name, got '$CEPH_CLUSTER'" "e.g. --ceph-cluster ceph"
[[ -z $CEPH_ID || $CEPH_ID =~ ^[A-Za-z0-9_.-]+$ ]] || die "--ceph-id must be a client name, got '$CEPH_ID'" "e.g. --ceph-id admin"
for pair in $JUICEFS; do
  [[ $pair =~ ^[A-Za-z0-9_.-]+=[a-z0-9+]+://.+$ ]] || die "--juicefs must list VOL=META-URL, got '$pair'" 'e.g. --juicefs "jfs=redis://10.0.0.5:6379/1"'
done

# Vendor tools often live outside a login PATH (Ascend's hccn_tool in particular).
export PATH="$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/sbin:/usr/local/Ascend/driver/tools"
export LC_ALL=C LANG=C
HOST=$(hostname 2>/dev/null || uname -n)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-./cf-capture-$HOST-$STAMP}
if [[ -e $OUT && -n $(ls -A "$OUT" 2>/dev/null) ]]; then
  die "$OUT exists and is not empty" "pass another -o DIR, or remove it"
fi
mkdir -p "$OUT" || die "cannot create $OUT" "pass a writable -o DIR"
((EUID == 0)) || echo "cf-capture: warning: not root: dmesg and lspci link fields may be missing" >&2

capture() {  # capture FILE LIMIT CMD ARGS...: stdout to FILE, failures to FILE.err
  local file=$1 limit=$2 rc=0
  shift 2
  if ! command -v "$1" >/dev/null 2>&1; then
    printf 'rc: 127\n%s not found on PATH\n' "$1" >"$OUT/$file.err"
    return 127
  fi
  timeout "$limit" "$@" >"$OUT/$file" 2>"$OUT/$file.stderr" </dev/null || rc=$?
  if ((rc != 0)) || [[ -s $OUT/$file.stderr ]]; then
    { printf 'rc: %d\n' "$rc"; cat "$OUT/$file.stderr"; } >"$OUT/$file.err"
  fi
  rm -f "$OUT/$file.stderr"
  return $rc
}

copy_file() {  # copy_file SOURCE NAME: a /proc or /sys file, if it exists
  [[ -r $1 ]] && cat "$1" >"$OUT/$2" 2>/dev/null
}

copy_infiniband() {  # the HCA attributes validation reads, plus port counters for support
  local base=$ROOT/sys/class/infiniband ca port rel
  mkdir -p "$OUT/sys/class/infiniband"
  [[ -d $base ]] || return 0
  for ca in "$base"/*; do
    [[ -d $ca/ports ]] || continue
    for rel in hca_type fw_ver board_id node_guid node_type; do
      [[ -r $ca/$rel ]] && { mkdir -p "$OUT/sys/class/infiniband/${ca##*/}"; cat "$ca/$rel" >"$OUT/sys/class/infiniband/${ca##*/}/$rel"; }
    done
    for port in "$ca"/ports/*; do
      local dest=$OUT/sys/class/infiniband/${ca##*/}/ports/${port##*/}
      mkdir -p "$dest"
      for rel in state phys_state rate link_layer lid sm_lid; do
        [[ -r $port/$rel ]] && cat "$port/$rel" >"$dest/$rel" 2>/dev/null
      done
      if [[ -d $port/counters ]]; then
        mkdir -p "$dest/counters"
        for rel in "$port"/counters/*; do
          [[ -f $rel && -r $rel ]] && cat "$rel" >"$dest/counters/${rel##*/}" 2>/dev/null
        done
      fi
    done
  done
}

copy_rel() {  # copy_rel PATH: the sysfs/configfs file ROOT/PATH to OUT/PATH, only when it reads
  local src=$ROOT/$1 dest=$OUT/$1
  [[ -f $src && -r $src ]] || return 0
  mkdir -p "${dest%/*}"
  if cat "$src" >"$dest.tmp" 2>/dev/null; then mv "$dest.tmp" "$dest"; else rm -f "$dest.tmp"; fi
}

copy_roce() {  # copy_roce IF: the RoCE attributes cfcore/roce.py read_sysfs reads for one netdev
  local net=sys/class/net/$1 ibdev rel file
  copy_rel "$net/mtu"
  for rel in "$ROOT/$net"/ecn/roce_np/enable/* "$ROOT/$net"/ecn/roce_rp/enable/*; do
    [[ -f $rel ]] && copy_rel "${rel#"$ROOT/"}"
  done
  copy_rel "$net/ecn/roce_np/cnp_dscp"
  [[ -d $ROOT/$net/device/infiniband ]] || return 0
  for ibdev in "$ROOT/$net"/device/infiniband/*; do
    [[ -d $ibdev ]] || continue
    ibdev=${ibdev##*/}
    mkdir -p "$OUT/$net/device/infiniband/$ibdev"  # the netdev's IB device: an empty directory
    copy_rel "sys/class/infiniband/$ibdev/tc/1/traffic_class"
    for file in "$ROOT/sys/class/infiniband/$ibdev"/ports/1/gid_attrs/types/* \
      "$ROOT/sys/class/infiniband/$ibdev"/ports/1/gids/*; do
      [[ -f $file ]] && copy_rel "${file#"$ROOT/"}"
    done
    copy_rel "sys/kernel/config/rdma_cm/$ibdev/ports/1/default_roce_tos"
  done
}

npu_ids() {  # NPU ids: rows "| <id> <name> | <health> |" of the npu-smi info table (chip rows hold a bus id)
  awk -F'|' '/Process id/ {exit}
    NF > 3 && $3 !~ /[0-9A-Fa-f]+:[0-9A-Fa-f][0-9A-Fa-f]:/ { split($2, a, " "); if (a[1] ~ /^[0-9]+$/ && a[2] != "") print a[1] }' \
    "$OUT/npu-smi-info.txt" 2>/dev/null
}

npu_chip_count() {  # chip rows carry a PCI bus id in their second cell
  awk -F'|' '/Process id/ {exit} $3 ~ /[0-9A-Fa-f]+:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]/ {n++} END {print n+0}' \
    "$OUT/npu-smi-info.txt" 2>/dev/null
}

echo "cf-capture: writing $OUT"
# NVIDIA
capture nvidia-smi-q-x.xml "$TIMEOUT" nvidia-smi -q -x
capture nvidia-smi-nvlink-s.txt "$TIMEOUT" nvidia-smi nvlink -s
capture systemctl-is-active-nvidia-fabricmanager.txt "$TIMEOUT" systemctl is-active nvidia-fabricmanager
capture modinfo-license-nvidia.txt "$TIMEOUT" modinfo -F license nvidia
copy_file "$ROOT/proc/driver/nvidia/version" proc-driver-nvidia-version.txt
copy_file "$ROOT/proc/modules" proc-modules.txt
if ((FULL)); then
  capture dcgmi-diag-r2.json 1200 dcgmi diag -r 2 -j
fi
# Kernel log: dmesg, or the journal when dmesg is restricted
if ! capture dmesg.txt "$TIMEOUT" dmesg; then
  capture journalctl-k-b.txt "$TIMEOUT" journalctl -k -b --no-pager
fi
# PCIe links of GPUs, HCAs and NPUs
for vendor in 10de 15b3 19e5; do
  capture "lspci-vvv-$vendor.txt" "$TIMEOUT" lspci -vvv -nn -D -d "$vendor:"
done
# HCAs
capture ibstat.txt "$TIMEOUT" ibstat
copy_infiniband
capture ip-j-addr-show.json "$TIMEOUT" ip -j addr show
# RoCE: the QoS and sysfs of each named netdev (roce.qos)
for iface in $ROCE_INTERFACES; do
  capture "mlnx_qos-$iface.txt" "$TIMEOUT" mlnx_qos -i "$iface"
  copy_roce "$iface"
done
# Ascend
if capture npu-smi-info.txt "$TIMEOUT" npu-smi info; then
  for npu in $(npu_ids); do
    capture "npu-smi-board-$npu.txt" "$TIMEOUT" npu-smi info -t board -i "$npu"
    capture "npu-smi-health-$npu.txt" "$TIMEOUT" npu-smi info -t health -i "$npu"
  done
  if [[ -z $HCCN_DEVICES ]]; then
    chips=$(npu_chip_count)
    ((chips > 0)) && HCCN_DEVICES=$(seq 0 $((chips - 1)))
  fi
fi
for device in $HCCN_DEVICES; do
  capture "hccn-$device-ip.txt" "$TIMEOUT" hccn_tool -i "$device" -ip -g
  capture "hccn-$device-link.txt" "$TIMEOUT" hccn_tool -i "$device" -link -g
  capture "hccn-$device-net_health.txt" "$TIMEOUT" hccn_tool -i "$device" -net_health -g
done
# Alibaba PPU
if capture ppu-smi-L.txt "$TIMEOUT" ppu-smi -L; then
  capture ppu-smi-q.txt "$TIMEOUT" ppu-smi -q
fi
# Node: time sync (chrony, else systemd's view), free space on /, the OS release
if ! capture chronyc-tracking.txt 10 chronyc -n tracking; then
  capture timedatectl-ntp.txt 10 timedatectl show -p NTP -p NTPSynchronized
fi
capture df-P-k-root.txt 10 df -P -k /
copy_file "$ROOT/proc/self/mounts" proc-mounts.txt
copy_file "$ROOT/etc/os-release" etc-os-release.txt

# Shared storage: JuiceFS sessions (storage.juicefs_session), Ceph health (storage.ceph_health)
juicefs_volumes() {  # VOL=META-URL lines: --juicefs, else each /etc/juicefs/<VOL>.env and its unit's ExecStart
  local env vol url
  if [[ -n $JUICEFS ]]; then printf '%s\n' $JUICEFS; return; fi
  for env in "$ROOT"/etc/juicefs/*.env; do
    [[ -f $env ]] || continue
    vol=${env##*/}; vol=${vol%.env}
    url=$(systemctl show -p ExecStart --value "juicefs-$vol.service" 2>/dev/null | tr ' ;' '\n\n' | grep -m1 -E '^[a-z0-9+]+://')
    [[ -n $url ]] && printf '%s=%s\n' "$vol" "$url"
  done
}
n=0
while IFS='=' read -r vol url; do
  [[ -n $vol && -n $url ]] || continue
  env_file=$ROOT/etc/juicefs/$vol.env
  (  # the env file's variables (META_PASSWORD) for juicefs only, in a subshell
    [[ -r $env_file ]] && { set -a; . "$env_file"; set +a; }
    capture "juicefs-status-$n.json" "$TIMEOUT" juicefs status "$url"
    if [[ -f $OUT/juicefs-status-$n.json.err && -n ${META_PASSWORD:-} ]]; then  # never keep the password
      err=$(<"$OUT/juicefs-status-$n.json.err")
      printf '%s\n' "${err//"$META_PASSWORD"/****}" >"$OUT/juicefs-status-$n.json.err"
    fi
  )
  n=$((n + 1))
done < <(juicefs_volumes)
if command -v ceph >/dev/null 2>&1 && [[ -r $ROOT/etc/ceph/$CEPH_CLUSTER.conf ]]; then
  if [[ -z $CEPH_ID ]]; then
    if [[ -r $ROOT/etc/ceph/$CEPH_CLUSTER.client.admin.keyring ]]; then
      CEPH_ID=admin
    else
      for keyring in "$ROOT/etc/ceph/$CEPH_CLUSTER".client.*.keyring; do
        [[ -r $keyring ]] || continue
        CEPH_ID=${keyring##*/$CEPH_CLUSTER.client.}; CEPH_ID=${CEPH_ID%.keyring}; break
      done
    fi
  fi
  if [[ -n $CEPH_ID ]]; then
    capture ceph-health.json 20 ceph --cluster "$CEPH_CLUSTER" --id "$CEPH_ID" --connect-timeout 10 health --format json
  fi
fi

json_string() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }
{
  printf '{\n'
  printf '  "hostname": %s,\n' "$(json_string "$HOST")"
  printf '  "node_sku": %s,\n' "$( [[ -n $SKU ]] && json_string "$SKU" || echo null)"
  printf '  "captured_at": "%s",\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  printf '  "kernel": %s,\n' "$(json_string "$(uname -r)")"
  printf '  "capture_version": 1,\n'
  printf '  "level": "%s"\n' "$( ((FULL)) && echo full || echo quick)"
  printf '}\n'
} >"$OUT/meta.json"

if ((TAR)); then
  tar -C "$(dirname "$OUT")" -czf "$OUT.tar.gz" "$(basename "$OUT")" && echo "cf-capture: packed $OUT.tar.gz: send it to support"
else
  echo "cf-capture: done: $OUT"
fi
