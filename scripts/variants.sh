#!/usr/bin/env bash
# The architecture levers at a fixed budget (issue 29, docs/codesign.md "Architecture levers"): configs/baseline.toml
# with each lever switched on alone, and configs/nanochat.toml, trained for BUDGET seconds on the Wikipedia corpus
# in probe mode with seed 42: each run's step count is the budget over its own step time, so a lever that slows the
# step buys fewer steps. Step times are measured first, one after another (phase 1, a few seconds each: keep the
# machine quiet then); the runs themselves (phase 2) take the measured times, so load during them slows the wall
# clock but does not change a result. Writes docs/variants/<BUDGET>s/<name>.txt (each run's output) and table.md.
# Usage: scripts/variants.sh [WIKI=data/wiki] [BUDGET=300]   (about 15 x (BUDGET + 60) s on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
WIKI="${1:-data/wiki}"
BUDGET="${2:-300}"
F="${FRONTIER_BIN:-build/frontier}"  # a copy, when the build tree may change during the runs
OUT="docs/variants/${BUDGET}s"
mkdir -p "$OUT"
SH="${FRONTIER_SHARED:-../shared}/data/corpus/wikipedia-en-2015"
[ -f "$WIKI/manifest.json" ] || "$F" prepare --train "$SH/wiki_0[0-6].jsonl.zst" --val "$SH/wiki_07.jsonl.zst" \
    --max-doc-bytes 2048 --out "$WIKI"
# name|config|sets (space-separated key=value)
VARIANTS=(
  "baseline|configs/baseline.toml|"
  "nanochat|configs/nanochat.toml|"
  "windows_SSSL|configs/baseline.toml|model.window_pattern=SSSL"
  "qk_scale_1.2|configs/baseline.toml|model.qk_scale=1.2"
  "rope_half|configs/baseline.toml|model.rope_fraction=0.5"
  "rope_half_key_offset|configs/baseline.toml|model.rope_fraction=0.5 model.key_offset=true"
  "smear|configs/baseline.toml|model.smear=true"
  # backout and the gate: probed on 2026-12-06 with the rest, run in the next session (2026-12-06, later).
  "backout|configs/baseline.toml|model.backout=true"
  "ve_gate_12x3|configs/baseline.toml|model.ve_gate_channels=12 model.ve_gate_scale=3 model.ve_gate_init=0.02"
  # value_embeds=all and geglu: probed and run at the end of the same later session, on an idle machine.
  "value_embeds_all|configs/baseline.toml|model.value_embeds=all"
  "geglu|configs/baseline.toml|model.mlp=geglu model.mlp_ratio=2.6667"
  "leaky_relu2|configs/baseline.toml|model.mlp=leaky_relu2"
  "swiglu|configs/baseline.toml|model.mlp=swiglu model.mlp_ratio=2.6667"
  "tied|configs/baseline.toml|model.tie_embeddings=true"
  "ngram_2_3|configs/baseline.toml|model.ngram_orders=2,3"
  "mtp_2|configs/baseline.toml|model.mtp_heads=2"
  "moe_8_top2|configs/baseline.toml|model.moe_experts=8 model.moe_top_k=2"
)
setargs() { local a=""; for kv in $1; do a="$a --set $kv"; done; echo "$a"; }
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs" | tee "$OUT/machine.txt"
# Phase 1: step times (probe mode measures 2 warm-up + 5 timed steps; one step trained, a small evaluation).
for v in "${VARIANTS[@]}"; do
  IFS='|' read -r name cfg sets <<<"$v"
  [ -f "$OUT/$name.probe" ] && continue
  d=$(mktemp -d)
  # shellcheck disable=SC2046
  "$F" train --config "$cfg" --data "$WIKI" --set train.budget_mode=probe --set train.budget_seconds=0.001 \
      --set eval.tokens=8192 --set train.run_dir="$d" $(setargs "$sets") >"$d/out.txt" 2>&1
  sed -n 's/^probe_step_seconds: *//p' "$d/out.txt" | tee "$OUT/$name.probe"
  rm -rf "$d"
done
# Phase 2: the runs.
for v in "${VARIANTS[@]}"; do
  IFS='|' read -r name cfg sets <<<"$v"
  [ -f "$OUT/$name.txt" ] && grep -q '^val_bpb' "$OUT/$name.txt" && continue
  d=runs/variants-$BUDGET/$name
  rm -rf "$d"
  # shellcheck disable=SC2046
  "$F" train --config "$cfg" --data "$WIKI" --set train.budget_mode=probe --set train.budget_seconds="$BUDGET" \
      --set train.probe_step_seconds="$(cat "$OUT/$name.probe")" --set train.seed=42 --set train.run_dir="$d" \
      $(setargs "$sets") 2>&1 | grep -v '^step ' >"$OUT/$name.txt"
  echo "$name: $(grep '^val_bpb' "$OUT/$name.txt")"
done
python3 scripts/variants_table.py "$OUT" "${VARIANTS[@]}" >"$OUT/table.md"
cat "$OUT/table.md"
