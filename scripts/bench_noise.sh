#!/usr/bin/env bash
# Issue 15's noise floor (docs/agents.md "Noise floor"): how far apart val_bpb lands when nothing changes.
#   wall, same seed:        N runs of the same config and seed under a wall-clock budget (the competition's mode)
#   probe, same seed:       N runs in probe mode sharing one measured step time (as `frontier research` does)
#   probe, seeds 1..N:      the seed-to-seed spread in probe mode (what the research loop's repeats measure)
# Spread = (max - min) / mean. Usage: scripts/bench_noise.sh [CONFIG=configs/tiny.toml] [BUDGET=15] [N=5]
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG="${1:-configs/tiny.toml}"
BUDGET="${2:-15}"
N="${3:-5}"
F=build/frontier
OUT=$(mktemp -d /tmp/frontier_bench_noise_XXXXXX)
trap 'rm -rf "$OUT"' EXIT
run() {  # name extra-args... -> prints "val_bpb num_steps"
  local name=$1; shift
  "$F" train --config "$CONFIG" --budget "$BUDGET" --set train.run_dir="$OUT/$name" "$@" >"$OUT/$name.log" 2>&1
  echo "$(sed -n 's/^val_bpb: *//p' "$OUT/$name.log") $(sed -n 's/^num_steps: *//p' "$OUT/$name.log")"
}
spread() { python3 -c "import sys; v=[float(x) for x in sys.argv[1:]]; m=sum(v)/len(v); print('min %.4f max %.4f mean %.4f spread %.2f%%' % (min(v), max(v), m, 100*(max(v)-min(v))/m))" "$@"; }
echo "# frontier noise floor, $(date -u +%Y-%m-%dT%H:%MZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $CONFIG, budget ${BUDGET}s, $N runs per row"
vals=(); steps=()
for i in $(seq 1 "$N"); do read -r v s < <(run "wall$i"); vals+=("$v"); steps+=("$s"); done
echo "wall,  same seed:   val_bpb ${vals[*]}   steps ${steps[*]}"; echo "  $(spread "${vals[@]}")"
read -r v s < <(run probe0 --set train.budget_mode=probe)
t=$(sed -n 's/^probe_step_seconds: *//p' "$OUT/probe0.log")
vals=(); steps=()
for i in $(seq 1 "$N"); do
  read -r v s < <(run "probe$i" --set train.budget_mode=probe --set train.probe_step_seconds="$t"); vals+=("$v"); steps+=("$s")
done
echo "probe, same seed:   val_bpb ${vals[*]}   steps ${steps[*]} (step time ${t}s, probed once)"; echo "  $(spread "${vals[@]}")"
vals=(); steps=()
for i in $(seq 1 "$N"); do
  read -r v s < <(run "seed$i" --set train.budget_mode=probe --set train.probe_step_seconds="$t" --set train.seed="$i"); vals+=("$v"); steps+=("$s")
done
echo "probe, seeds 1..$N:  val_bpb ${vals[*]}   steps ${steps[*]}"; echo "  $(spread "${vals[@]}")"
