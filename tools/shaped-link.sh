#!/usr/bin/env bash
# Runs a command over a real, kernel-shaped TCP link: a fresh network namespace whose loopback is
# limited to RATE by the token-bucket filter (SPEC section 11, docs/cluster.md "A shaped loopback"),
# with Open MPI forced onto TCP over loopback and gloo told to use it; prints (and with --cluster
# writes) the cluster file that models the link for --ranks P ranks.
#
# usage: tools/shaped-link.sh [--ranks P] [--cluster FILE] [--latency-us US] RATE -- COMMAND [ARG...]
#        tools/shaped-link.sh [--ranks P] [--latency-us US] --cluster-only RATE
#   RATE        tc's syntax: 50mbit, 1gbit, 500kbit, 2mibit, 10mbps (bytes/s, as tc reads it)
#   --ranks     ranks that will share the one loopback queue (default 2): each gets RATE / P per
#               direction in the ring model, since every rank's bytes cross the one queue
#   --cluster   also write the cluster file there (whole or not at all)
#   --latency-us  the cluster file's one-way latency (default 50: MPI over TCP on loopback)
#   --cluster-only  print the cluster file and exit; needs no namespace
# Exit 77 with "shaped-link: skip: ..." where namespaces or tc are not permitted (the callers'
# tests count it as a skip); 2 on bad usage; else the command's own exit status.
# Every process inside talks to 127.0.0.1 only: the namespace has no other interface.
set -euo pipefail

usage() { echo "shaped-link.sh: $1 (usage: tools/shaped-link.sh [--ranks P] [--cluster FILE] [--latency-us US] RATE -- COMMAND...)" >&2; exit 2; }

ranks=2 cluster_file="" latency_us=50 cluster_only=0 rate=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --ranks) [[ $# -ge 2 ]] || usage "--ranks needs a value"; ranks="$2"; shift 2 ;;
    --cluster) [[ $# -ge 2 ]] || usage "--cluster needs a file"; cluster_file="$2"; shift 2 ;;
    --latency-us) [[ $# -ge 2 ]] || usage "--latency-us needs a value"; latency_us="$2"; shift 2 ;;
    --cluster-only) cluster_only=1; shift ;;
    --) shift; break ;;
    -[0-9]*|-.[0-9]*) usage "RATE: expected a positive rate in tc's syntax (50mbit, 1gbit), got '$1'" ;;
    -*) usage "unknown option '$1'" ;;
    *) [[ -z $rate ]] || usage "a second RATE '$1' (put the command after --)"; rate="$1"; shift ;;
  esac
done
[[ -n $rate ]] || usage "no RATE"
# Decimal only (a leading 0 would be octal to bash's arithmetic and invalid JSON).
[[ $ranks =~ ^[1-9][0-9]{0,3}$ && $ranks -le 1024 ]] || usage "--ranks: expected a whole number 1..1024, got '$ranks'"
[[ $latency_us =~ ^(0|[1-9][0-9]{0,6})([.][0-9]+)?$ ]] && awk -v l="$latency_us" 'BEGIN { exit !(l <= 1e7) }' \
  || usage "--latency-us: expected a number 0..1e7 (the cluster file's range), got '$latency_us'"

# tc's rate units (iproute2's get_rate: case-insensitive; k/m/g/t are powers of 1000, ki/mi/gi/ti of
# 1024; "bps" is bytes per second), as bits per second.
rate_bps=$(awk -v rate="$rate" 'BEGIN {
  if (!match(tolower(rate), /^[0-9]+([.][0-9]+)?/)) exit 1
  value = substr(rate, 1, RLENGTH) + 0; unit = tolower(substr(rate, RLENGTH + 1))
  split("bit:1 kbit:1e3 mbit:1e6 gbit:1e9 tbit:1e12 kibit:1024 mibit:1048576 gibit:1073741824 " \
        "tibit:1099511627776 bps:8 kbps:8e3 mbps:8e6 gbps:8e9 tbps:8e12 kibps:8192 mibps:8388608 " \
        "gibps:8589934592 tibps:8796093022208", pairs, " ")
  for (i in pairs) { split(pairs[i], kv, ":"); factor[kv[1]] = kv[2] }
  if (unit == "") unit = "bit"
  if (!(unit in factor) || value <= 0) exit 1
  printf "%.17g\n", value * factor[unit] }') || usage "RATE: expected tc's syntax (50mbit, 1gbit, 10mbps), got '$rate'"
# tbf's range here: at least 8 kbit/s, at most 1 Tbit/s (loopback moves less; tc's burst for more
# overflows), and at least 1e-6 Gbit/s (1 kbit/s) per rank, the cluster file's least bandwidth.
awk -v bps="$rate_bps" -v p="$ranks" 'BEGIN { exit !(bps >= 8000 && bps <= 1e12 && bps / p >= 1000) }' \
  || usage "RATE: $rate is $rate_bps bit/s; expected 8kbit..1tbit, and at least 1kbit per rank ($ranks ranks)"
if [[ $cluster_only == 1 ]]; then
  [[ $# -eq 0 ]] || usage "--cluster-only takes no COMMAND"
else
  [[ $# -gt 0 ]] || usage "no COMMAND after --"
fi

# The ring model of one shared queue: each of P ranks sends 2(P-1)/P of the buffer, so an all-reduce
# puts 2(P-1) n bytes through the queue at RATE: the time of a ring at RATE / P per rank (for one
# rank nothing crosses the link; the file still says RATE).
per_rank_Gbps=$(awk -v bps="$rate_bps" -v p="$ranks" 'BEGIN { printf "%.9g", bps / (p > 1 ? p : 1) / 1e9 }')
cluster_json=$(cat <<EOF
{
 "format": "syncplan.cluster/v1",
 "name": "$ranks ranks on one loopback queue shaped to $rate (tc tbf, tools/shaped-link.sh): $per_rank_Gbps Gbit/s per rank in the ring model",
 "workers": $ranks,
 "workers_per_node": 1,
 "intra_node": {"bandwidth_Gbps": $per_rank_Gbps, "latency_us": $latency_us},
 "inter_node": {"bandwidth_Gbps": $per_rank_Gbps, "latency_us": $latency_us},
 "allreduce": "ring"
}
EOF
)
if [[ $cluster_only == 1 ]]; then
  echo "$cluster_json"
  exit 0
fi
if [[ -n $cluster_file ]]; then
  tmp="$cluster_file.shaped-link-$$.tmp"
  if ! { echo "$cluster_json" >"$tmp" && mv -f "$tmp" "$cluster_file"; } 2>/dev/null; then
    rm -f "$tmp" 2>/dev/null
    echo "shaped-link.sh: --cluster $cluster_file: cannot write the cluster file there" >&2
    exit 2
  fi
fi
echo "shaped-link: loopback shaped to $rate ($rate_bps bit/s) for $ranks ranks; the cluster file that models it${cluster_file:+ ($cluster_file)}:" >&2
echo "$cluster_json" >&2

skip() { echo "shaped-link: skip: $1" >&2; exit 77; }
command -v unshare >/dev/null || skip "no unshare (util-linux)"
command -v tc >/dev/null || skip "no tc (iproute2)"
command -v ip >/dev/null || skip "no ip (iproute2)"
unshare_args=(-n)
[[ $(id -u) -eq 0 ]] || unshare_args=(-r -n)  # without root: a user namespace owns the new one
unshare "${unshare_args[@]}" true 2>/dev/null || skip "this user may not make a network namespace (unshare ${unshare_args[*]})"

# tbf drops a packet larger than its bucket: loopback's MTU comes down to 9000 and the bucket holds
# at least two such packets (20,000 B) and 1 ms of the rate. A full bucket passes at line rate after
# an idle gap, which a real link does not, so it is kept small (docs/cluster.md "A shaped loopback":
# 10 ms of the rate let each iteration's first 250 KB through free at 200mbit; the qdisc's
# high-resolution watchdog reaches the rate with 1 ms, measured to 1gbit).
burst_bytes=$(awk -v bps="$rate_bps" 'BEGIN { b = bps / 8 / 1000; if (b < 20000) b = 20000; printf "%d", b }')
inner='set -e
ip link set lo up
ip link set lo mtu 9000
refusal=$(tc qdisc add dev lo root tbf rate "$SHAPED_LINK_RATE" burst "$SHAPED_LINK_BURST" latency 100ms 2>&1) \
  || { echo "shaped-link: skip: tc may not shape loopback here (tbf refused: ${refusal//$'\n'/ })" >&2; exit 77; }
set +e
exec "$@"'
export SHAPED_LINK_RATE="$rate" SHAPED_LINK_BURST="$burst_bytes" SHAPED_LINK_RANKS="$ranks"
# Open MPI: TCP only, on loopback only (its default excludes lo); oob too. gloo: 127.0.0.1 on lo.
export OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export GLOO_SOCKET_IFNAME=lo MASTER_ADDR=127.0.0.1
exec unshare "${unshare_args[@]}" bash -c "$inner" shaped-link "$@"
