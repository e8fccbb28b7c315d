#!/usr/bin/env bash
# Issue 13's measurements on this machine (docs/distributed.md), in one run so the numbers share its conditions:
#   1. the same config trained by 1 process x 2 threads and by `mpirun -np 2` x 1 thread: tokens/s and the ratio,
#      and the 2-rank run's time in collectives per step;
#   2. `frontier scale comm`: collective bandwidth and latency between 2 ranks (shared memory);
#   3. `frontier scale project` with that measured link: the model's prediction for 2 ranks (to compare with 1.)
#      and its projection to 8 ranks per node and 2-4 nodes over 25/100/400 Gb/s.
#   ab: 2 ranks x 1 thread, the gradient exchange after the backward vs overlapped with it (train.overlap_comm), and
#      fp32 vs bf16 (train.comm_dtype), each pair alternating step by step inside one run (the machine's load
#      drifts: adjacent steps compare), REPEATS runs; each prints `uptime`'s load.
#   tcp: `scale comm` and the 2-rank step with OpenMPI forced over TCP on loopback (pml ob1, btl self,tcp, lo),
#      interleaved with shared-memory runs, and the scale model's prediction for that link.
#   net: two hosts emulated on this machine: rank 1's OpenMPI daemon runs in a network namespace (its own network
#      stack and hostname) joined to this one by a veth pair and started by a stand-in for ssh (plm_rsh_agent), as
#      mpirun starts daemons on the hosts of a hostfile; tc (tbf) shapes the link to each of NET_RATES (default
#      "1gbit 5gbit"). For each rate: `scale comm` over that link, 2-rank runs with the exchange after the backward
#      and overlapped, and the scale model's prediction with the measured link. Needs root (ip netns, tc).
# Usage: scripts/bench_dist.sh [DEPTH=4] [STEPS=30] [PARTS="base ab tcp"] [REPEATS=3] > docs/bench-dist-DATE.txt
# (needs data/default: quickstart; FRONTIER_BIN overrides build/frontier)
set -euo pipefail
cd "$(dirname "$0")/.."
DEPTH="${1:-4}"
STEPS="${2:-30}"
PARTS="${3:-base ab tcp}"
REPEATS="${4:-3}"
F="${FRONTIER_BIN:-build/frontier}"
DATA="${FRONTIER_BENCH_DATA:-data/default}"
OUT=$(mktemp -d /tmp/frontier_bench_dist_XXXXXX)
NS=frontier_bench_ns
net_down() { ip netns del "$NS" 2>/dev/null || true; ip link del fbench0 2>/dev/null || true; }
trap 'rm -rf "$OUT"; [[ " $PARTS " == *" net "* ]] && net_down' EXIT
ROOT_FLAG=()
[ "$(id -u)" = 0 ] && ROOT_FLAG=(--allow-run-as-root)
COMMON=(--data "$DATA" --budget 100000 --set model.depth="$DEPTH" --set train.max_steps="$STEPS" --set model.seq_len=512 --set train.micro_batch=8
        --set train.checkpoint_every_seconds=0 --set eval.tokens=8192)
echo "# frontier distributed benchmark, $(date -u +%Y-%m-%dT%H:%MZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs"
echo "# depth $DEPTH, $STEPS steps each, same total batch (2 micro-batches per step), train.precision auto"
echo "# load at start: $(uptime)"
echo
v() { sed -n "s/^$2: *//p" "$OUT/$1.log" | head -1; }
mean_step() {  # ms, steps 3.. (the first two warm caches and pools)
  python3 -c "import json;r=[json.loads(l) for l in open('$OUT/$1/log.jsonl')][2:];print('%.1f'%(1e3*sum(x['step_seconds'] for x in r)/len(r)))"
}
two_ranks() {  # NAME [mpirun options] -- [--set ...]: a 2-rank x 1-thread run of the common config
  local name=$1; shift
  local mpi=()
  while [ "$1" != "--" ]; do mpi+=("$1"); shift; done; shift
  mpirun -q "${ROOT_FLAG[@]}" "${mpi[@]}" -np 2 "$F" train "${COMMON[@]}" --set train.threads=1 \
    --set train.run_dir="$OUT/$name" "$@" >"$OUT/$name.log" 2>&1
  printf "  %-22s tokens/s %7s   step %8s ms   comm_ms_per_step %7s   final loss %s\n" "$name" "$(v "$name" tokens_per_sec)" \
    "$(mean_step "$name")" "$(v "$name" comm_ms_per_step)" \
    "$(python3 -c "import json;print('%.6f'%[json.loads(l) for l in open('$OUT/$name/log.jsonl')][-1]['loss'])")"
}
TCP=(--mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo)

if [[ " $PARTS " == *" base "* ]]; then
"$F" train "${COMMON[@]}" --set train.threads=2 --set train.data_streams=2 \
  --set train.total_batch_tokens=$((2 * 8 * 512)) --set train.run_dir="$OUT/one" >"$OUT/one.log" 2>&1
mpirun -q "${ROOT_FLAG[@]}" -np 2 "$F" train "${COMMON[@]}" --set train.threads=1 \
  --set train.run_dir="$OUT/two" >"$OUT/two.log" 2>&1
t1=$(v one tokens_per_sec); t2=$(v two tokens_per_sec)
echo "1 process x 2 threads:  tokens/s $t1   val_bpb $(v one val_bpb)"
echo "2 ranks x 1 thread:     tokens/s $t2   val_bpb $(v two val_bpb)   comm_ms_per_step $(v two comm_ms_per_step)"
awk -v a="$t2" -v b="$t1" 'BEGIN { printf "ratio (2 ranks / 1 process): %.3f   (goal >= 0.95)\n", a / b }'
echo "2 ranks: mean step $(mean_step two) ms (steps 3-$STEPS)"
echo
mpirun -q "${ROOT_FLAG[@]}" -np 2 "$F" scale comm --json "$OUT/comm.json"
echo
"$F" scale project --set model.depth="$DEPTH" --comm "$OUT/comm.json" --threads 1
fi

if [[ " $PARTS " == *" ab "* ]]; then
# Each run alternates the exchange's form step by step (FRONTIER_BENCH_ALTERNATE): even steps one form, odd steps
# the other, so each pair of adjacent steps compares the two under the same load of a shared machine.
alt_stats() {  # RUN A_NAME B_NAME
  python3 - "$OUT/$1/log.jsonl" "$2" "$3" <<'PY'
import json, statistics, sys
r = [json.loads(l) for l in open(sys.argv[1])]
prev, rows = 0.0, []
for x in r:
    rows.append((x["step"] - 1, x["step_seconds"], x["comm_seconds"] - prev))
    prev = x["comm_seconds"]
rows = rows[2:]  # the first two steps warm caches and pools
a = [x for x in rows if x[0] % 2 == 0]; b = [x for x in rows if x[0] % 2 == 1]
pairs = [(p, q) for p in a for q in b if q[0] == p[0] + 1]
ratio = [q[1] / p[1] for p, q in pairs]
print("  %-28s step %7.1f ms (comm %6.1f ms)   %-28s step %7.1f ms (comm %6.1f ms)   %s/%s per adjacent pair: "
      "median %.3f, range %.3f-%.3f (%d pairs)" % (sys.argv[2], 1e3 * statistics.mean(x[1] for x in a),
      1e3 * statistics.mean(x[2] for x in a), sys.argv[3], 1e3 * statistics.mean(x[1] for x in b),
      1e3 * statistics.mean(x[2] for x in b), sys.argv[3], sys.argv[2], statistics.median(ratio), min(ratio),
      max(ratio), len(ratio)))
PY
}
echo
echo "## overlap and bf16 gradients, 2 ranks x 1 thread, alternating step by step, $REPEATS runs each"
for i in $(seq 1 "$REPEATS"); do
  echo "run $i: $(uptime | sed 's/.*load/load/')"
  FRONTIER_BENCH_ALTERNATE=overlap two_ranks "alt-overlap-$i" -- >/dev/null
  alt_stats "alt-overlap-$i" "fp32 after the backward" "fp32 overlapped"
  FRONTIER_BENCH_ALTERNATE=bf16 two_ranks "alt-bf16-$i" -- --set train.overlap_comm=true >/dev/null
  alt_stats "alt-bf16-$i" "fp32 overlapped" "bf16 overlapped"
done
fi

if [[ " $PARTS " == *" tcp "* ]]; then
echo
echo "## OpenMPI over TCP on loopback (${TCP[*]}) against shared memory"
mpirun -q "${ROOT_FLAG[@]}" "${TCP[@]}" -np 2 "$F" scale comm --max-mb 64 --json "$OUT/comm-tcp.json"
echo
mpirun -q "${ROOT_FLAG[@]}" -np 2 "$F" scale comm --max-mb 64 --json "$OUT/comm-shm.json"
for i in $(seq 1 "$REPEATS"); do
  echo "round $i: $(uptime | sed 's/.*load/load/')"
  two_ranks "shm-$i" -- --set train.overlap_comm=false
  two_ranks "tcp-$i" "${TCP[@]}" -- --set train.overlap_comm=false
done
echo
echo "### the scale model with the TCP link measured above (its 2-rank row is the prediction for tcp-*)"
"$F" scale project --set model.depth="$DEPTH" --comm "$OUT/comm-tcp.json" --threads 1
fi

if [[ " $PARTS " == *" net "* ]]; then
echo
echo "## two emulated hosts: rank 1 in a network namespace behind a veth pair shaped by tc, OpenMPI over TCP"
net_down
ip netns add "$NS"
ip link add fbench0 type veth peer name fbench1
ip link set fbench1 netns "$NS"
ip addr add 10.77.7.1/24 dev fbench0 && ip link set fbench0 up
ip netns exec "$NS" ip addr add 10.77.7.2/24 dev fbench1
ip netns exec "$NS" ip link set fbench1 up
ip netns exec "$NS" ip link set lo up
# The stand-in for ssh: mpirun calls it as `agent HOST COMMAND` for every host but its own; it starts the daemon in
# the namespace under its own hostname (so Frontier counts 2 hosts).
cat >"$OUT/agent.sh" <<AGENT
#!/bin/bash
shift
exec ip netns exec $NS unshare --uts bash -c "hostname frontier-host2; \$*"
AGENT
chmod +x "$OUT/agent.sh"
printf "10.77.7.1 slots=1\n10.77.7.2 slots=1\n" >"$OUT/hosts"
# Both "hosts" share this machine's cores: --bind-to none, or OpenMPI binds each host's one rank to core 0.
NET=(--bind-to none --hostfile "$OUT/hosts" --mca plm_rsh_agent "$OUT/agent.sh" --mca pml ob1 --mca btl self,tcp
     --mca btl_tcp_if_include 10.77.7.0/24 --mca oob_tcp_if_include 10.77.7.0/24)
for rate in ${NET_RATES:-1gbit 5gbit}; do
  for dev in fbench0 "$NS:fbench1"; do
    if [[ $dev == *:* ]]; then ip netns exec "$NS" tc qdisc replace dev "${dev#*:}" root tbf rate "$rate" burst 1mb latency 100ms
    else tc qdisc replace dev "$dev" root tbf rate "$rate" burst 1mb latency 100ms; fi
  done
  echo
  echo "### link shaped to $rate each way ($(uptime | sed 's/.*load/load/'))"
  mpirun -q "${ROOT_FLAG[@]}" "${NET[@]}" -np 2 "$F" scale comm --max-mb 64 --json "$OUT/comm-$rate.json"
  for i in $(seq 1 "$REPEATS"); do
    two_ranks "net-$rate-after-$i" "${NET[@]}" -- --set train.overlap_comm=false
    two_ranks "net-$rate-overlap-$i" "${NET[@]}" -- --set train.overlap_comm=true
  done
  echo "#### the scale model with the link measured above (its 2-rank row is the prediction for net-$rate-*)"
  "$F" scale project --set model.depth="$DEPTH" --comm "$OUT/comm-$rate.json" --threads 1
done
net_down
fi
