#!/usr/bin/env bash
# Each variant of scripts/variants.sh against the baseline on the same validation windows (eval bpb --against):
# the difference and its paired standard error, into docs/variants/<BUDGET>s/<name>.paired. Waits for runs that
# are not finished yet (run it beside variants.sh).  Usage: scripts/variants_paired.sh [BUDGET=300]
set -euo pipefail
cd "$(dirname "$0")/.."
BUDGET="${1:-300}"
OUT="docs/variants/${BUDGET}s"
RUNS="runs/variants-$BUDGET"
NAMES="nanochat windows_SSSL qk_scale_1.2 rope_half rope_half_key_offset smear backout ve_gate_12x3 value_embeds_all
  geglu leaky_relu2 swiglu tied ngram_2_3 mtp_2 moe_8_top2"
F="${FRONTIER_BIN:-build/frontier}"
for name in $NAMES; do
  [ -s "$OUT/$name.paired" ] && continue
  while ! grep -q '^val_bpb:' "$OUT/$name.txt" 2>/dev/null; do sleep 20; done
  OMP_NUM_THREADS=1 "$F" eval bpb --checkpoint "$RUNS/$name/model.ckpt" \
      --against "$RUNS/baseline/model.ckpt" >"$OUT/$name.paired.tmp" 2>&1
  mv "$OUT/$name.paired.tmp" "$OUT/$name.paired"
  echo "$name: $(grep '^difference' "$OUT/$name.paired")"
done
