#!/usr/bin/env bash
# The advisor's architecture stage (src/advise/advise.h, --levers) by hand, on a model the advisor already chose,
# so that its shape stage need not run again: the base on 3 seeds, each lever of the default list alone on the
# first seed, then (phase combo) a combination on the 3 seeds. Every run trains exactly STEPS steps (the advised
# step count at the budget: train.max_steps, schedules on step progress), so results are bit-reproducible and do
# not depend on the machine's load; on 1 thread (results do not depend on the thread count), in the precision of
# PRECISION (default fp32: this Xeon's fp32 unit is twice its bf16 one), set, not measured, so every run has it.
#
#   scripts/levers_wiki.sh OUT CONFIG STEPS levers            # base x 3 seeds + each lever on seed 42
#   scripts/levers_wiki.sh OUT CONFIG STEPS combo "k=v k=v"   # the combination on seeds 42, 43, 44
#   scripts/levers_wiki.sh OUT CONFIG STEPS time              # each lever's step time / the base's, back to back
#   scripts/levers_wiki.sh OUT CONFIG STEPS more              # seq_warmup, tied and untie on seed 42
#   scripts/levers_wiki.sh OUT CONFIG STEPS seeds NAME        # lever NAME on seeds 43 and 44 too
#   scripts/levers_wiki.sh OUT CONFIG STEPS combo "k=v k=v" NAME   # a second combination, named NAME
#   scripts/levers_wiki.sh OUT CONFIG STEPS one NAME "k=v k=v"     # one run, seed 42 (two can run side by side)
# Then scripts/levers_table.py OUT prints the table (docs/codesign.md "Architecture and recipe levers").
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$1 CONFIG=$2 STEPS=$3 PHASE=$4
BIN=${FRONTIER_BIN:-build/frontier}
mkdir -p "$OUT"
# The default list of advise/levers.cpp (kept in step with it by hand: name and keys).
declare -A LEVERS=(
  [windows]="model.window_pattern=SSSL"
  [swiglu]="model.mlp=swiglu model.mlp_ratio=2.6667"
  [smear]="model.smear=true"
  [backout]="model.backout=true"
  [qk_scale]="model.qk_scale=1.2"
  [ve_gate]="model.ve_gate_channels=12 model.ve_gate_scale=3 model.ve_gate_init=0.02"
  [normuon]="optim.normuon_beta2=0.9 optim.muon_equilibrate=true optim.muon_renormalize=true"
  [nanochat_schedules]="optim.momentum_schedule=nanochat optim.weight_decay_schedule=cosine"
  [ema]="train.ema_decay=0.9"
  # Off the default list (advise --levers all), measured later: the sequence-length warm-up, the tied model and the
  # untie at 2/3 (its own base is the tied model).
  [seq_warmup]="train.seq_warmup_ratio=0.3"
  [tied]="model.tie_embeddings=true"
  [untie]="model.tie_embeddings=true model.untie_at=0.667"
)
ORDER="windows swiglu smear backout qk_scale ve_gate normuon nanochat_schedules ema"
run() {  # name seed "k=v ..."
  local name=$1 seed=$2 sets=$3 args=()
  [ -f "$OUT/$name-s$seed.txt" ] && grep -q '^val_bpb:' "$OUT/$name-s$seed.txt" && return 0  # done before
  for kv in $sets; do args+=(--set "$kv"); done
  echo "$(date +%H:%M:%S) $name seed $seed: $sets" >&2
  "$BIN" train --config "$CONFIG" --budget 100000 --set train.max_steps="$STEPS" --set train.threads=1 \
    --set train.seed="$seed" --set train.checkpoint_every_seconds=0 --set train.run_dir="$OUT/runs/$name-s$seed" \
    --set train.precision="${PRECISION:-fp32}" \
    --force "${args[@]}" > "$OUT/$name-s$seed.txt" 2>&1
}
case $PHASE in
  levers)
    for s in 42 43 44; do run base $s ""; done
    for l in $ORDER; do run "$l" 42 "${LEVERS[$l]}"; done ;;
  more)
    for l in seq_warmup tied untie; do run "$l" 42 "${LEVERS[$l]}"; done ;;
  seeds)
    for s in 43 44; do run "$5" $s "${LEVERS[$5]}"; done ;;
  combo)
    c=${6:-combo}
    for s in 42 43 44; do run "$c" $s "$5"; done
    echo "$5" > "$OUT/$c.keys" ;;
  one)
    run "$5" 42 "${6:-}"
    [ -n "${6:-}" ] && echo "$6" > "$OUT/$5.keys" ;;
  time)
    for l in $ORDER; do
      t() { "$BIN" train --config "$CONFIG" --set train.budget_mode=probe --set train.max_steps=1 --set train.threads=1 \
              --set train.run_dir="$OUT/runs/time" --force "$@" 2>&1 | sed -n 's/.*probe mode: \([0-9.]*\) s per step.*/\1/p'; }
      args=(); for kv in ${LEVERS[$l]}; do args+=(--set "$kv"); done
      b=$(t); x=$(t "${args[@]}")
      echo "$l $b $x" | tee -a "$OUT/step_times.txt"
    done ;;
  *) echo "phase must be levers, more, combo or time" >&2; exit 2 ;;
esac
