#!/usr/bin/env bash
# Issue 13's measurements on this machine (docs/distributed.md), in one run so the numbers share its conditions:
#   1. the same config trained by 1 process x 2 threads and by `mpirun -np 2` x 1 thread: tokens/s and the ratio,
#      and the 2-rank run's time in collectives per step;
#   2. `frontier scale comm`: collective bandwidth and latency between 2 ranks (shared memory);
#   3. `frontier scale project` with that measured link: the model's prediction for 2 ranks (to compare with 1.)
#      and its projection to 8 ranks per node and 2-4 nodes over 25/100/400 Gb/s.
# Usage: scripts/bench_dist.sh [DEPTH=4] [STEPS=30] > docs/bench-dist-DATE.txt   (needs data/default: quickstart)
set -euo pipefail
cd "$(dirname "$0")/.."
DEPTH="${1:-4}"
STEPS="${2:-30}"
F=build/frontier
DATA="${FRONTIER_BENCH_DATA:-data/default}"
OUT=$(mktemp -d /tmp/frontier_bench_dist_XXXXXX)
trap 'rm -rf "$OUT"' EXIT
ROOT_FLAG=()
[ "$(id -u)" = 0 ] && ROOT_FLAG=(--allow-run-as-root)
COMMON=(--data "$DATA" --budget 100000 --set model.depth="$DEPTH" --set train.max_steps="$STEPS" --set model.seq_len=512 --set train.micro_batch=8
        --set train.checkpoint_every_seconds=0 --set eval.tokens=8192)
echo "# frontier distributed benchmark, $(date -u +%Y-%m-%dT%H:%MZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs"
echo "# depth $DEPTH, $STEPS steps each, same total batch (2 micro-batches per step), train.precision auto"
echo
"$F" train "${COMMON[@]}" --set train.threads=2 --set train.data_streams=2 \
  --set train.total_batch_tokens=$((2 * 8 * 512)) --set train.run_dir="$OUT/one" >"$OUT/one.log" 2>&1
mpirun -q "${ROOT_FLAG[@]}" -np 2 "$F" train "${COMMON[@]}" --set train.threads=1 \
  --set train.run_dir="$OUT/two" >"$OUT/two.log" 2>&1
v() { sed -n "s/^$2: *//p" "$OUT/$1.log" | head -1; }
t1=$(v one tokens_per_sec); t2=$(v two tokens_per_sec)
echo "1 process x 2 threads:  tokens/s $t1   val_bpb $(v one val_bpb)"
echo "2 ranks x 1 thread:     tokens/s $t2   val_bpb $(v two val_bpb)   comm_ms_per_step $(v two comm_ms_per_step)"
awk -v a="$t2" -v b="$t1" 'BEGIN { printf "ratio (2 ranks / 1 process): %.3f   (goal >= 0.95)\n", a / b }'
step_ms=$(python3 -c "import json;r=[json.loads(l) for l in open('$OUT/two/log.jsonl')][2:];print('%.1f'%(1e3*sum(x['step_seconds'] for x in r)/len(r)))")
echo "2 ranks: mean step ${step_ms} ms (steps 3-$STEPS)"
echo
mpirun -q "${ROOT_FLAG[@]}" -np 2 "$F" scale comm --json "$OUT/comm.json"
echo
"$F" scale project --set model.depth="$DEPTH" --comm "$OUT/comm.json" --threads 1
